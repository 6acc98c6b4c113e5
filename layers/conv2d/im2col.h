// layers/conv2d/im2col.h: unfolding one image's input channels over a tile of output
// pixels into matrix columns ("im2col"), and its adjoint, folding columns back
// and adding them into the input gradient ("col2im"), for the CPU convolution
// (layers/conv2d/conv2d.cpp). Row (c, r, s), column j of the tile holds
//   x[c, p*stride_h - pad_h + r*dil_h, q*stride_w - pad_w + s*dil_w]  (0 outside)
// where output pixel j0 + j is (p, q).
#pragma once

#include <cstdint>

namespace glassbox {

// The geometry im2col and col2im walk: one image's channels, one pixel tile.
struct Unfold {
  int64_t h, w, q;          // input height and width, output width
  int64_t r, s;             // kernel
  int64_t sh, sw, ph, pw;   // stride, padding
  int64_t dh, dw;           // dilation
};

// col (channels*R*S x len, row-major) <- unfolded pixels [j0, j0 + len) of
// `channels` consecutive input channels starting at x (each H x W).
void im2col(const float* x, int64_t channels, const Unfold& u, int64_t j0, int64_t len, float* col);

// dx (channels x H x W) += col2im(dcol): the adjoint of im2col.
void col2im_add(const float* dcol, int64_t channels, const Unfold& u, int64_t j0, int64_t len, float* dx);

}  // namespace glassbox
