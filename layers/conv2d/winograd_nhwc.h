// layers/conv2d/winograd_nhwc.h: the forward and backward-data passes of a
// 3x3, stride-1 convolution on NHWC values by Winograd's F(4x4, 3x3), for
// CPUs where oneDNN has no Winograd kernel (Note [Winograd F(4x4, 3x3) on NHWC values] in winograd_nhwc.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace glassbox {

// One ungrouped 3x3 convolution at stride 1 and dilation 1: x (N, H, W, C)
// and y (N, P, Q, K) stored NHWC, the weights (K, C, 3, 3) in PyTorch's order.
struct WinogradShape {
  int64_t n = 0, h = 0, w = 0, c = 0, k = 0, p = 0, q = 0, pad_h = 0, pad_w = 0;
};

// The batch's 4x4 output tiles; those at the right and bottom edges may hang
// past the output.
int64_t winograd_tiles(const WinogradShape& shape);

// Tiles transformed and multiplied together: as many as fit kChunkBytes of
// transformed input and output, spread evenly over the chunks.
int64_t winograd_chunk_tiles(const WinogradShape& shape);

// Floats of workspace the two passes below use: the transformed weights and
// one chunk's transformed input and products.
size_t winograd_workspace_floats(const WinogradShape& shape);

// y = conv(x, w) + b (b may be null). Runs outside any OpenMP team: the
// transforms and the sgemms thread themselves, and the same threads give the
// same bits.
void winograd_forward_nhwc(const WinogradShape& shape, const float* x, const float* w, const float* b, float* y,
                           float* workspace);

// The backward-data pass is a forward too: dy (N, P, Q, K) in, dx (N, H, W, C)
// out, through the weights with K and C swapped and each 3x3 turned half a
// turn, padded by 2 - pad. This is that forward's shape (pad at most 2).
WinogradShape winograd_backward_data_shape(const WinogradShape& shape);

// dx = (or, with `add`, +=) the gradient of the input from dy, as
// winograd_forward_nhwc runs.
void winograd_backward_data_nhwc(const WinogradShape& shape, const float* w, const float* dy, float* dx, bool add,
                                 float* workspace);

// dW (K, C, 3, 3) = (or, with `add`, +=) the gradient of the weights from x
// and dy, by F(3x3, 4x4) over the same tiles: G^T [sum over tiles of
// (A dy A^T) . (B^T x B)] G. The tiles' sums run chunk after chunk, so the
// bits are fixed for a given thread count.
void winograd_filter_gradient_nhwc(const WinogradShape& shape, const float* x, const float* dy, float* dw, bool add,
                                   float* workspace);

}  // namespace glassbox
