// layers/conv2d/filter_gradient_nhwc.h: a convolution's weight gradient from
// NHWC x and dy as one product per chunk of output pixels (Note [Weight
// gradients on NHWC values by GEMM] in filter_gradient_nhwc.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "layers/conv2d/im2col.h"
#include "layers/layer.h"  // GradMode

namespace glassbox {

// One group's convolution on NHWC values: x (N, H, W, C), dy (N, P, Q, K),
// the gradient dW (K, C, R, S) in PyTorch's order. `u` is the unfolding's
// geometry (im2col.h).
struct NhwcFilterShape {
  int64_t n = 0, c = 0, k = 0, p = 0;
  Unfold u{};
};

// Output pixels unfolded per product: as many rows of C*R*S floats as fit
// kChunkBytes, at most every pixel of the batch.
int64_t nhwc_filter_chunk_rows(const NhwcFilterShape& shape);

// Floats of workspace nhwc_filter_gradient uses: the unfolded chunk and the
// gradient in (K, R, S, C) order.
size_t nhwc_filter_workspace_floats(const NhwcFilterShape& shape);

// dW = (kWrite) or += (kAdd) the gradient of the convolution's weights. Runs
// outside any OpenMP team (the sgemm and the gathers thread themselves); the
// same threads give the same bits.
void nhwc_filter_gradient(const NhwcFilterShape& shape, const float* x, const float* dy, float* dw, GradMode mode,
                          float* workspace);

}  // namespace glassbox
