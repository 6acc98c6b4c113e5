// layers/linear/streamed_product.h: products of a few rows against a large weight
// matrix that read the weights once, straight from where they are, for the
// linear layer at small batches (Note [Linear forward at small batches] in
// layers/linear/linear.cpp) and the LSTM's recurrent step (Note [The recurrent step
// streamed] in layers/lstm/lstm_cpu.cpp). A GEMM first packs each block of the
// weights into a buffer and then reads the copy, which a product of up to 16
// rows cannot repay. Single-threaded: the callers split the weights into
// blocks over the threads.
#pragma once

#include <cstdint>

#include "layers/layer.h"  // GradMode

namespace glassbox {

// The most rows either product takes.
inline constexpr int64_t kMaxStreamedBatch = 16;

// y[r][o] = (or += with mode kAdd) sum_i x[r][i] w[o][i] for the n <=
// kMaxStreamedBatch rows r of x (row-major, `in` floats a row) and the weight
// rows o in [begin, end) of w (row-major, `in` floats a row); y's rows are
// y_stride floats apart.
void streamed_forward(int64_t n, const float* x, int64_t in, const float* w, int64_t begin, int64_t end, float* y,
                      int64_t y_stride, GradMode mode);

// dx[r][j] = (or += with mode kAdd) sum_o dy[r][o] w[o][j] for the n <=
// kMaxStreamedBatch rows r of dy (`out` floats a row) and the columns j in
// [begin, end) of w (out rows of `in` floats); dx's rows are `in` floats apart.
// The sums build up in dx itself.
void streamed_backward_data(int64_t n, const float* dy, int64_t out, const float* w, int64_t in, int64_t begin,
                            int64_t end, GradMode mode, float* dx);

}  // namespace glassbox
