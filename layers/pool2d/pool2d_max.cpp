// layers/pool2d/pool2d_max.cpp: max pooling's CPU forward by blocks, and the
// backward from the argmax it keeps (layers/pool2d/pool2d_max.h).
//
// Note [Max pooling by blocks]: Pool2d's generic loops run one pass per window
// tap over an output row, and their backward finds each window's argmax again
// from x, a select per tap and a scatter through span bookkeeping, at a small
// fraction of the memory bandwidth on GoogLeNet's 3x3 pools. Here each plane is
// first copied into a plane padded with -inf to every window's extent, split
// into its even and odd columns at stride 2, so that a block of kFloatLanes
// outputs reads each tap as that many contiguous floats. The running max and the index of the
// tap that gave it stay in registers through the window's taps; a strict > in
// scan order keeps the first maximum, a NaN always wins (Note [Max pooling
// propagates NaN] in pool2d.cpp), and -inf padding never wins (as in Pool2d's
// loops). The forward writes each window's argmax, an index into the input
// plane, and the backward is one scatter of dy, as PyTorch's max pooling keeps
// its indices.
#include "layers/pool2d/pool2d_max.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "tensor/float_lanes.h"
#include "tensor/parallel_for.h"  // kElementwiseGrain

namespace glassbox {
namespace {

constexpr int64_t kLanes = kFloatLanes;  // outputs per block: one vector
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// The padded plane: rows [-ph, (P-1)*sh + kh - ph) of the input and columns
// [-pw, (Q-1)*sw + kw - pw), each half (column c in half c % sw, at c / sw)
// `width` floats a row, then kLanes floats of slack for the last block's reads.
struct Halves {
  int64_t rows, width, floats;  // floats: one half, slack included
};

Halves halves_of(const MaxPoolPlan& pl) {
  const int64_t columns = (pl.q - 1) * pl.sw + pl.kw;
  Halves h{.rows = (pl.p - 1) * pl.sh + pl.kh, .width = (columns + pl.sw - 1) / pl.sw, .floats = 0};
  h.floats = h.rows * h.width + kLanes;
  return h;
}

int64_t floats_per_thread(const MaxPoolPlan& pl) { return pl.sw * halves_of(pl).floats; }

// Half k of one padded row: out[cc] for column cc * kStride + k, input column
// cc * kStride + k - pw (-inf outside the input, or for a row of padding: x_row null).
// Note [Padded halves by vectors]: the copy goes by whole vectors, 16 inputs
// at stride 1; at stride 2, 32 inputs and their even lanes. A load never
// reaches past the row's last input (the one after it may be past the
// tensor); the rest go one by one. On Xception's stride-2 pools this takes
// about a quarter off the forward of the smaller planes; on the largest
// (147x147) the copy is not what bounds it.
template <int kStride>
void fill_half_row(const float* x_row, const MaxPoolPlan& pl, int64_t k, int64_t width, float* out) {
  int64_t lo = 0, hi = 0;
  if (x_row != nullptr) {
    lo = std::clamp<int64_t>((pl.pw - k + kStride - 1) / kStride, 0, width);
    hi = std::clamp<int64_t>((pl.w + pl.pw - k + kStride - 1) / kStride, lo, width);
  }
  std::fill(out, out + lo, kMinusInf);
  int64_t cc = lo;
  for (; cc + kLanes <= hi && (cc + kLanes) * kStride + k - pl.pw <= pl.w; cc += kLanes) {
    const float* from = x_row + cc * kStride + k - pl.pw;
    FloatLanes v = load_lanes(from);
    if constexpr (kStride == 2) v = even_lanes(v, load_lanes(from + kLanes));
    std::memcpy(out + cc, &v, sizeof v);
  }
  for (; cc < hi; ++cc) out[cc] = x_row[cc * kStride + k - pl.pw];
  std::fill(out + hi, out + width, kMinusInf);
}

template <int kStride>
void pad_plane(const float* x, const MaxPoolPlan& pl, const Halves& hv, float* halves) {
  for (int64_t r = 0; r < hv.rows; ++r) {
    const int64_t input_row = r - pl.ph;
    const float* x_row = input_row >= 0 && input_row < pl.h ? x + input_row * pl.w : nullptr;
    for (int64_t k = 0; k < kStride; ++k) {
      fill_half_row<kStride>(x_row, pl, k, hv.width, halves + k * hv.floats + r * hv.width);
    }
  }
}

// Writes one block's maxima and argmaxes: outputs [q0, q0 + 16) of row p,
// those past the row's end dropped. tap: each winner's offset from its
// window's corner, i * W + j, as a float (exact below 2^24:
// max_pool_by_blocks); -1 where nothing beat -inf, whose argmax is then the
// window's first input in scan order (every window holds one: pool2d.cpp).
void store_block(const MaxPoolPlan& pl, int64_t p, int64_t q0, FloatLanes best, FloatLanes tap, float* y,
                 int32_t* argmax) {
  const int64_t n = std::min(kLanes, pl.q - q0);
  store_first_lanes(best, n, y + p * pl.q + q0);
  if (argmax == nullptr) return;
  constexpr IntLanes kLane = kLaneIndices;
  const IntLanes column = IntLanes{} + static_cast<int32_t>(q0 * pl.sw - pl.pw) + kLane * static_cast<int32_t>(pl.sw);
  const IntLanes corner = column + static_cast<int32_t>((p * pl.sh - pl.ph) * pl.w);
  const IntLanes first = column > 0 ? column : IntLanes{};  // clipped to the plane
  const IntLanes first_input = first + static_cast<int32_t>(std::max<int64_t>(p * pl.sh - pl.ph, 0) * pl.w);
  const IntLanes won = __builtin_convertvector(tap, IntLanes);
  const IntLanes at = won < 0 ? first_input : corner + won;
  store_first_lanes(at, n, argmax + p * pl.q + q0);
}

// Rows [p, p + kRows) at outputs [q0, q0 + 16): a running max and the index
// of the tap that gave it per row, in registers through the window's taps.
// Note [Max pooling by blocks, rows at once]: each tap's compare and selects
// wait on the last tap's, so one row's chain leaves the vector units idle;
// two rows' chains interleave, and the argmaxes are worked out and stored as
// vectors. That helps the stride-1 pools (GoogLeNet's inception branches);
// the stride-2 ones are bound elsewhere.
template <int kStride, int kRows>
void forward_block(const MaxPoolPlan& pl, const Halves& hv, const float* halves, int64_t p, int64_t q0, float* y,
                   int32_t* argmax) {
  FloatLanes best[kRows], tap[kRows];
  for (int r = 0; r < kRows; ++r) best[r] = FloatLanes{} + kMinusInf, tap[r] = FloatLanes{} - 1.0f;
  for (int64_t i = 0; i < pl.kh; ++i) {
    for (int64_t j = 0; j < pl.kw; ++j) {
      const FloatLanes here = FloatLanes{} + static_cast<float>(i * pl.w + j);
      const float* column = halves + (j % kStride) * hv.floats + j / kStride + q0;
      for (int r = 0; r < kRows; ++r) {
        const FloatLanes v = load_lanes(column + ((p + r) * pl.sh + i) * hv.width);
        const auto better = (v > best[r]) | (v != v);  // Note [Max pooling propagates NaN]
        tap[r] = better ? here : tap[r];
        best[r] = better ? v : best[r];
      }
    }
  }
  for (int r = 0; r < kRows; ++r) store_block(pl, p + r, q0, best[r], tap[r], y, argmax);
}

template <int kStride>
void forward_plane(const MaxPoolPlan& pl, const Halves& hv, const float* halves, float* y, int32_t* argmax) {
  int64_t p = 0;
  for (; p + 2 <= pl.p; p += 2) {
    for (int64_t q0 = 0; q0 < pl.q; q0 += kLanes) forward_block<kStride, 2>(pl, hv, halves, p, q0, y, argmax);
  }
  for (; p < pl.p; ++p) {
    for (int64_t q0 = 0; q0 < pl.q; q0 += kLanes) forward_block<kStride, 1>(pl, hv, halves, p, q0, y, argmax);
  }
}

}  // namespace


bool max_pool_by_blocks(const MaxPoolPlan& pl) {
  const bool offsets_exact = pl.kh * pl.w + pl.kw < (int64_t{1} << 24);  // taps' offsets held as floats
  return (pl.sw == 1 || pl.sw == 2) && offsets_exact;
}

int64_t max_pool_workspace_floats(const MaxPoolPlan& pl) { return pl.threads * floats_per_thread(pl); }

void max_pool_forward(const MaxPoolPlan& pl, const float* x, float* y, int32_t* argmax, float* workspace) {
  const Halves hv = halves_of(pl);
  const int64_t per_thread = floats_per_thread(pl), hw = pl.h * pl.w, pq = pl.p * pl.q;
  const bool parallel = pl.threads > 1 && pl.planes * pq * pl.kh * pl.kw >= kElementwiseGrain;
#pragma omp parallel num_threads(pl.threads) if (parallel)
  {
    float* halves = workspace + omp_get_thread_num() * per_thread;
    for (int64_t k = 0; k < pl.sw; ++k) {  // the slack: read by the last blocks' dropped lanes
      std::fill_n(halves + k * hv.floats + hv.rows * hv.width, kLanes, 0.0f);
    }
#pragma omp for schedule(static)
    for (int64_t plane = 0; plane < pl.planes; ++plane) {
      int32_t* arg = argmax != nullptr ? argmax + plane * pq : nullptr;
      if (pl.sw == 1) {
        pad_plane<1>(x + plane * hw, pl, hv, halves);
        forward_plane<1>(pl, hv, halves, y + plane * pq, arg);
      } else {
        pad_plane<2>(x + plane * hw, pl, hv, halves);
        forward_plane<2>(pl, hv, halves, y + plane * pq, arg);
      }
    }
  }
}

void max_pool_backward(const MaxPoolPlan& pl, const int32_t* argmax, const float* dy, GradMode mode, float* dx) {
  const int64_t hw = pl.h * pl.w, pq = pl.p * pl.q;
  parallel_for(pl.planes, std::max<int64_t>(1, kElementwiseGrain / hw), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* dxp = dx + plane * hw;
      const int32_t* arg = argmax + plane * pq;
      const float* dyp = dy + plane * pq;
      if (mode == GradMode::kWrite) std::fill_n(dxp, hw, 0.0f);
      for (int64_t o = 0; o < pq; ++o) dxp[arg[o]] += dyp[o];
    }
  });
}

}  // namespace glassbox
