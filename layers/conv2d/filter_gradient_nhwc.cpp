// layers/conv2d/filter_gradient_nhwc.cpp: the weight gradient of a convolution
// on NHWC values, one product per chunk of output pixels.
//
// Note [Weight gradients on NHWC values by GEMM]: stored NHWC, dy is an
// (N*P*Q) x K row-major matrix, and x unfolded at the output's pixels an
// (N*P*Q) x (R*S*C) one whose row (n, p, q) is R*S runs of C contiguous
// floats (zeros where a tap falls in the padding). The gradient is then
//   dW (K x R*S*C) = dy^T * unfolded x,
// one sgemm per chunk of pixels, summed (beta 1), and finally turned from
// (K, R, S, C) into PyTorch's (K, C, R, S). Where oneDNN runs its AVX2
// kernels, this is faster than its jit:avx2 backward-filter on NHWC values
// from 64 channels in and out, and slower below (bench/ab_layers.py on a
// Zen 3, nhwc_gemm_for_filter in conv2d_choices_onednn.h). Where oneDNN runs
// AVX-512, its own kernels stay. A chunk is as many pixels as fit
// kChunkBytes unfolded, so that the gather and the product meet in cache.
// The chunks run in order and the sgemm threads each product, so the sum's
// order, and its bits, are fixed for a given thread count.
#include "layers/conv2d/filter_gradient_nhwc.h"

#include <algorithm>
#include <cstring>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"
#include "tensor/product.h"

namespace glassbox {
namespace {

constexpr int64_t kChunkBytes = int64_t{4} << 20;

using ConstMatrixMap = Eigen::Map<const RowMatrix>;

int64_t taps_floats(const NhwcFilterShape& s) { return s.u.r * s.u.s * s.c; }

// Rows [row0, row0 + rows) of the unfolded x, into col (rows x R*S*C).
void unfold_rows(const NhwcFilterShape& s, const float* x, int64_t row0, int64_t rows, float* col) {
  const Unfold& u = s.u;
  const int64_t width = taps_floats(s), pq = s.p * u.q;
  const size_t run_bytes = static_cast<size_t>(s.c) * sizeof(float);
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / width), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = row0 + i, n = row / pq, p = row / u.q % s.p, q = row % u.q;
      float* out = col + i * width;
      for (int64_t r = 0; r < u.r; ++r) {
        const int64_t ih = p * u.sh - u.ph + r * u.dh;
        for (int64_t t = 0; t < u.s; ++t, out += s.c) {
          const int64_t iw = q * u.sw - u.pw + t * u.dw;
          if (ih < 0 || ih >= u.h || iw < 0 || iw >= u.w) {
            std::memset(out, 0, run_bytes);
          } else {
            std::memcpy(out, x + ((n * u.h + ih) * u.w + iw) * s.c, run_bytes);
          }
        }
      }
    }
  });
}

}  // namespace

int64_t nhwc_filter_chunk_rows(const NhwcFilterShape& s) {
  const int64_t row_bytes = taps_floats(s) * static_cast<int64_t>(sizeof(float));
  return std::clamp<int64_t>(kChunkBytes / row_bytes, 1, s.n * s.p * s.u.q);
}

size_t nhwc_filter_workspace_floats(const NhwcFilterShape& s) {
  return static_cast<size_t>(nhwc_filter_chunk_rows(s) * taps_floats(s) + s.k * taps_floats(s));
}

void nhwc_filter_gradient(const NhwcFilterShape& s, const float* x, const float* dy, float* dw, GradMode mode,
                          float* workspace) {
  const int64_t width = taps_floats(s), rows = s.n * s.p * s.u.q, chunk = nhwc_filter_chunk_rows(s);
  float* col = workspace;
  float* krsc = workspace + chunk * width;  // dW in (K, R, S, C) order
  MatrixMap sum(krsc, s.k, width);
  for (int64_t row0 = 0; row0 < rows; row0 += chunk) {
    const int64_t len = std::min(chunk, rows - row0);
    unfold_rows(s, x, row0, len, col);
    product_into(sum, ConstMatrixMap(dy + row0 * s.k, len, s.k).transpose(), ConstMatrixMap(col, len, width),
                 /*accumulate=*/row0 > 0);
  }
  // (K, R, S, C) -> (K, C, R, S), written or added.
  const int64_t taps = s.u.r * s.u.s;
  parallel_for(s.k, std::max<int64_t>(1, kElementwiseGrain / width), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const float* from = krsc + k * width;
      float* to = dw + k * width;
      for (int64_t c = 0; c < s.c; ++c) {
        for (int64_t tap = 0; tap < taps; ++tap) {
          const float value = from[tap * s.c + c];
          to[c * taps + tap] = mode == GradMode::kAdd ? to[c * taps + tap] + value : value;
        }
      }
    }
  });
}

}  // namespace glassbox
