// layers/conv2d/im2col.cpp: im2col and col2im, row segment by row segment: within
// one output row the input columns of a kernel tap are equally spaced, so each
// segment is one memcpy (stride 1) or one strided loop, with zeros for padding.
#include "layers/conv2d/im2col.h"

#include <algorithm>
#include <cstring>

namespace glassbox {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Output columns q (of a row) whose input column q*sw + w0 lies in [0, W).
inline void valid_columns(const Unfold& u, int64_t w0, int64_t& lo, int64_t& hi) {
  lo = w0 >= 0 ? 0 : ceil_div(-w0, u.sw);
  hi = u.w - w0 <= 0 ? 0 : ceil_div(u.w - w0, u.sw);
}

// Calls segment(p, qa, n, offset) for each output row piece of pixels
// [j0, j0 + len): row p, columns [qa, qa + n), at column `offset` of the tile.
template <typename Segment>
inline void for_each_row_segment(const Unfold& u, int64_t j0, int64_t len, const Segment& segment) {
  int64_t p = j0 / u.q, qa = j0 - p * u.q;
  for (int64_t offset = 0; offset < len; ++p, qa = 0) {
    const int64_t n = std::min(u.q - qa, len - offset);
    segment(p, qa, n, offset);
    offset += n;
  }
}

}  // namespace

void im2col(const float* x, int64_t channels, const Unfold& u, int64_t j0, int64_t len, float* col) {
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * u.h * u.w;
    for (int64_t r = 0; r < u.r; ++r) {
      for (int64_t s = 0; s < u.s; ++s) {
        float* dst = col + ((c * u.r + r) * u.s + s) * len;
        const int64_t w0 = s * u.dw - u.pw;
        int64_t lo_all, hi_all;
        valid_columns(u, w0, lo_all, hi_all);
        for_each_row_segment(u, j0, len, [&](int64_t p, int64_t qa, int64_t n, int64_t offset) {
          float* d = dst + offset;  // d[q - qa] for q in [qa, qa + n)
          const int64_t h = p * u.sh - u.ph + r * u.dh;
          if (h < 0 || h >= u.h) {
            std::fill_n(d, n, 0.0f);
            return;
          }
          const int64_t lo = std::clamp(lo_all, qa, qa + n), hi = std::clamp(hi_all, lo, qa + n);
          std::fill(d, d + (lo - qa), 0.0f);
          if (hi > lo) {
            const float* row = xc + h * u.w + w0 + lo * u.sw;  // input column of q = lo
            if (u.sw == 1) {
              std::memcpy(d + (lo - qa), row, static_cast<size_t>(hi - lo) * sizeof(float));
            } else {
              for (int64_t i = 0; i < hi - lo; ++i) d[lo - qa + i] = row[i * u.sw];
            }
          }
          std::fill(d + (hi - qa), d + n, 0.0f);
        });
      }
    }
  }
}

void col2im_add(const float* dcol, int64_t channels, const Unfold& u, int64_t j0, int64_t len, float* dx) {
  for (int64_t c = 0; c < channels; ++c) {
    float* dxc = dx + c * u.h * u.w;
    for (int64_t r = 0; r < u.r; ++r) {
      for (int64_t s = 0; s < u.s; ++s) {
        const float* src = dcol + ((c * u.r + r) * u.s + s) * len;
        const int64_t w0 = s * u.dw - u.pw;
        int64_t lo_all, hi_all;
        valid_columns(u, w0, lo_all, hi_all);
        for_each_row_segment(u, j0, len, [&](int64_t p, int64_t qa, int64_t n, int64_t offset) {
          const int64_t h = p * u.sh - u.ph + r * u.dh;
          if (h < 0 || h >= u.h) return;
          const int64_t lo = std::clamp(lo_all, qa, qa + n), hi = std::clamp(hi_all, lo, qa + n);
          if (hi <= lo) return;
          const float* __restrict in = src + offset - qa + lo;
          float* __restrict out = dxc + h * u.w + w0 + lo * u.sw;
          if (u.sw == 1) {
            for (int64_t i = 0; i < hi - lo; ++i) out[i] += in[i];
          } else {
            for (int64_t i = 0; i < hi - lo; ++i) out[i * u.sw] += in[i];
          }
        });
      }
    }
  }
}

}  // namespace glassbox
