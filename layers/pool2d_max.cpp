// layers/pool2d_max.cpp: max pooling's CPU forward by blocks, and the
// backward from the argmax it keeps (layers/pool2d_max.h).
//
// Note [Max pooling by blocks]: Pool2d's loops run one pass per window tap
// over an output row, and its backward found each window's argmax again
// from x, a select per tap and a scatter through span bookkeeping. On
// GoogLeNet's pools (3x3, 7 to 56 outputs a row, stride 1 and 2) that took
// 21 ms forward and 65 ms backward of a 506 ms step at batch 8, at 2 to 8
// GB/s (`glassbox time GoogLeNet --batch 8`). Here each plane is first
// copied into a plane padded with -inf to every window's extent, split into
// its even and odd columns at stride 2, so that a block of 16 outputs reads
// each tap as 16 contiguous floats. The running max and the index of the tap
// that gave it stay in registers through the window's taps; a strict > in
// scan order keeps the first maximum, and -inf padding never wins (as in
// Pool2d's loops). The forward writes each window's argmax, an index into the
// input plane, and the backward is one scatter of dy, as PyTorch's max
// pooling keeps its indices.
#include "layers/pool2d_max.h"

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
template <int kStride>
void fill_half_row(const float* x_row, const MaxPoolPlan& pl, int64_t k, int64_t width, float* out) {
  int64_t lo = 0, hi = 0;
  if (x_row != nullptr) {
    lo = std::clamp<int64_t>((pl.pw - k + kStride - 1) / kStride, 0, width);
    hi = std::clamp<int64_t>((pl.w + pl.pw - k + kStride - 1) / kStride, lo, width);
  }
  std::fill(out, out + lo, kMinusInf);
  for (int64_t cc = lo; cc < hi; ++cc) out[cc] = x_row[cc * kStride + k - pl.pw];
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

// The first input of output (p, q)'s window in scan order: every window holds one (pool2d.cpp).
int32_t first_input(const MaxPoolPlan& pl, int64_t p, int64_t q) {
  const int64_t r = std::max<int64_t>(p * pl.sh - pl.ph, 0), c = std::max<int64_t>(q * pl.sw - pl.pw, 0);
  return static_cast<int32_t>(r * pl.w + c);
}

// A block of outputs is one FloatLanes (tensor/float_lanes.h), so that the
// compare and the two selects are vector instructions.
template <int kStride>
void forward_plane(const MaxPoolPlan& pl, const Halves& hv, const float* halves, float* y, int32_t* argmax) {
  alignas(64) float best_out[kLanes], tap_out[kLanes];
  for (int64_t p = 0; p < pl.p; ++p) {
    for (int64_t q0 = 0; q0 < pl.q; q0 += kLanes) {
      // tap: the winner's offset in the input plane from the window's corner,
      // i * W + j, as a float (exact below 2^24: max_pool_by_blocks).
      FloatLanes best = FloatLanes{} + kMinusInf, tap = FloatLanes{} - 1.0f;
      for (int64_t i = 0; i < pl.kh; ++i) {
        const float* row = halves + (p * pl.sh + i) * hv.width + q0;
        for (int64_t j = 0; j < pl.kw; ++j) {
          const FloatLanes v = load_lanes(row + (j % kStride) * hv.floats + j / kStride);
          const auto better = v > best;
          tap = better ? FloatLanes{} + static_cast<float>(i * pl.w + j) : tap;
          best = better ? v : best;
        }
      }
      std::memcpy(best_out, &best, sizeof best);
      std::memcpy(tap_out, &tap, sizeof tap);
      const int64_t n = std::min(kLanes, pl.q - q0);
      std::copy_n(best_out, n, y + p * pl.q + q0);
      if (argmax == nullptr) continue;
      const int64_t corner = (p * pl.sh - pl.ph) * pl.w + q0 * pl.sw - pl.pw;  // of output q0's window
      for (int64_t l = 0; l < n; ++l) {
        const auto won = static_cast<int64_t>(tap_out[l]);
        argmax[p * pl.q + q0 + l] =
            won < 0 ? first_input(pl, p, q0 + l) : static_cast<int32_t>(corner + l * pl.sw + won);
      }
    }
  }
}

// Note [2x2 max pooling backward]: the commonest window (LeNet, VGG, AlexNet's
// kin) is 2x2 at stride 2 without padding. When every window lies inside the
// plane they do not overlap, and each output's four inputs are compared in
// scan order directly (the same first maximum as Pool2d's loops) without
// their span bookkeeping, which dominates on short rows: LeNet's pool backward
// took 3.5 times its forward (`glassbox time LeNet`). It keeps no argmax, so
// its forward stays on Pool2d's loops.
void max_backward_plane_2x2(const MaxPoolPlan& pl, const float* x, const float* dy, float* dx) {
  for (int64_t p = 0; p < pl.p; ++p) {
    const float* top = x + 2 * p * pl.w;
    const float* bottom = top + pl.w;
    float* dx_top = dx + 2 * p * pl.w;
    const float* dy_row = dy + p * pl.q;
    for (int64_t q = 0; q < pl.q; ++q) {
      const int64_t c = 2 * q;
      // Scan order with a strict >, so the first maximum wins (and the first
      // element stands even if NaN). std::max(a, b) is (a < b ? b : a): the
      // same choice, as a max instruction. The winner's offset is picked with
      // integer selects: on ReLU outputs (ties, zeros) branches mispredicted
      // half the time (perf annotate).
      const float t0 = top[c], t1 = top[c + 1], b0 = bottom[c], b1 = bottom[c + 1];
      const float best01 = std::max(t0, t1);
      const float best012 = std::max(best01, b0);
      int64_t offset = t1 > t0 ? 1 : 0;
      offset = b0 > best01 ? pl.w : offset;
      offset = b1 > best012 ? pl.w + 1 : offset;
      dx_top[c + offset] += dy_row[q];
    }
  }
}

}  // namespace

bool max_pool_2x2_inside(const MaxPoolPlan& pl) {
  return pl.kh == 2 && pl.kw == 2 && pl.sh == 2 && pl.sw == 2 && pl.ph == 0 && pl.pw == 0 && 2 * pl.p <= pl.h &&
         2 * pl.q <= pl.w;
}

void max_pool_backward_2x2(const MaxPoolPlan& pl, const float* x, const float* dy, GradMode mode, float* dx) {
  const int64_t hw = pl.h * pl.w, pq = pl.p * pl.q;
  parallel_for(pl.planes, std::max<int64_t>(1, kElementwiseGrain / hw), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      if (mode == GradMode::kWrite) std::fill_n(dx + plane * hw, hw, 0.0f);
      max_backward_plane_2x2(pl, x + plane * hw, dy + plane * pq, dx + plane * hw);
    }
  });
}

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
