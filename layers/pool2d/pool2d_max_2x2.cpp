// layers/pool2d/pool2d_max_2x2.cpp: max pooling's commonest window, 2x2 at stride
// 2 inside the plane, forward and backward by vector lanes on the CPU
// (layers/pool2d/pool2d_max_2x2.h).
#include "layers/pool2d/pool2d_max_2x2.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "tensor/float_lanes.h"
#include "tensor/parallel_for.h"  // kElementwiseGrain

namespace glassbox {
namespace {

// Note [2x2 max pooling backward]: the commonest window (LeNet, VGG, AlexNet's
// kin) is 2x2 at stride 2 without padding. When every window lies inside the
// plane they do not overlap, and each output's four inputs are compared in
// scan order directly (the same first maximum as Pool2d's loops) without
// their span bookkeeping, which dominates on short rows: LeNet's pool backward
// took 3.5 times its forward (`glassbox time LeNet`). It keeps no argmax: the
// forward (Note [2x2 max pooling forward by lanes]) only writes the maxima.

// Note [2x2 max pooling backward by lanes]: a scatter of dy into a zeroed dx,
// one output at a time, costs several times the forward on large planes.
// Here kFloatLanes outputs at a time (tensor/float_lanes.h): the even and odd
// columns of both input rows split into lanes, the winner picked by lanes,
// and each of dx's four positions written whole (dy where it won, else 0, or
// added to dx), interleaved back: dx is written once, with no zeroing pass. A
// window's winner (t0 t1 over b0 b1): whether t1, b0 or b1 beats the ones
// before it in scan order, with a strict > or by being NaN (Note [Max pooling
// propagates NaN] in pool2d.cpp: the last NaN wins), by selects: on ReLU
// outputs (ties, zeros) branches mispredict half the time. Rows of fewer than
// kFloatLanes outputs go through the same lanes from padded copies.

// out[0, 2 * kFloatLanes) = even and odd interleaved, or += with add.
inline void store_interleaved(FloatLanes even, FloatLanes odd, bool add, float* out) {
  FloatLanes low = interleaved_low(even, odd), high = interleaved_high(even, odd);
  if (add) {
    low += load_lanes(out);
    high += load_lanes(out + kFloatLanes);
  }
  std::memcpy(out, &low, sizeof low);
  std::memcpy(out + kFloatLanes, &high, sizeof high);
}

// 16 windows: `top` and `bottom` their 32 input columns in two rows, dy their
// gradients; dx's 32 columns under each row written (or added to).
void route_2x2_lanes(const float* top, const float* bottom, const float* dy, bool add, float* dx_top, float* dx_bottom) {
  const FloatLanes zero = {};
  const FloatLanes top_lo = load_lanes(top), top_hi = load_lanes(top + kFloatLanes);
  const FloatLanes bottom_lo = load_lanes(bottom), bottom_hi = load_lanes(bottom + kFloatLanes);
  const FloatLanes t0 = even_lanes(top_lo, top_hi), t1 = odd_lanes(top_lo, top_hi);
  const FloatLanes b0 = even_lanes(bottom_lo, bottom_hi), b1 = odd_lanes(bottom_lo, bottom_hi);
  // All ones where it beats the ones before it; the last to win is the argmax.
  const auto wins_t1 = (t1 > t0) | (t1 != t1);
  const FloatLanes best01 = wins_t1 ? t1 : t0;
  const auto wins_b0 = (b0 > best01) | (b0 != b0);
  const FloatLanes best012 = wins_b0 ? b0 : best01;
  const auto wins_b1 = (b1 > best012) | (b1 != b1);
  const FloatLanes g = load_lanes(dy);
  const FloatLanes at_b1 = wins_b1 ? g : zero;
  const FloatLanes at_b0 = (wins_b0 & ~wins_b1) ? g : zero;
  const FloatLanes at_t1 = (wins_t1 & ~wins_b0 & ~wins_b1) ? g : zero;
  const FloatLanes at_t0 = (wins_t1 | wins_b0 | wins_b1) ? zero : g;
  store_interleaved(at_t0, at_t1, add, dx_top);
  store_interleaved(at_b0, at_b1, add, dx_bottom);
}

void max_backward_plane_2x2(const MaxPoolPlan& pl, const float* x, const float* dy, bool add, float* dx) {
  for (int64_t p = 0; p < pl.p; ++p) {
    const float* top = x + 2 * p * pl.w;
    const float* bottom = top + pl.w;
    float* dx_top = dx + 2 * p * pl.w;
    float* dx_bottom = dx_top + pl.w;
    const float* dy_row = dy + p * pl.q;
    int64_t q = 0;
    for (; q + kFloatLanes <= pl.q; q += kFloatLanes) {
      route_2x2_lanes(top + 2 * q, bottom + 2 * q, dy_row + q, add, dx_top + 2 * q, dx_bottom + 2 * q);
    }
    // The last outputs (all of a row narrower than the lanes, LeNet's 14):
    // through the same lanes from copies padded with zeros, whose extra
    // lanes are dropped; a scatter of each dy at its winner costs about
    // three times the forward on such rows.
    if (q < pl.q) {
      const int64_t rest = pl.q - q, columns = 2 * rest;
      float in_top[2 * kFloatLanes] = {}, in_bottom[2 * kFloatLanes] = {}, g[kFloatLanes] = {};
      float out_top[2 * kFloatLanes] = {}, out_bottom[2 * kFloatLanes] = {};
      std::copy_n(top + 2 * q, columns, in_top);
      std::copy_n(bottom + 2 * q, columns, in_bottom);
      std::copy_n(dy_row + q, rest, g);
      if (add) {
        std::copy_n(dx_top + 2 * q, columns, out_top);
        std::copy_n(dx_bottom + 2 * q, columns, out_bottom);
      }
      route_2x2_lanes(in_top, in_bottom, g, add, out_top, out_bottom);
      std::copy_n(out_top, columns, dx_top + 2 * q);
      std::copy_n(out_bottom, columns, dx_bottom + 2 * q);
    }
    if (!add) {  // an odd width's last column: in no window
      std::fill(dx_top + 2 * pl.q, dx_top + pl.w, 0.0f);
      std::fill(dx_bottom + 2 * pl.q, dx_bottom + pl.w, 0.0f);
    }
  }
  if (!add) std::fill(dx + 2 * pl.p * pl.w, dx + pl.h * pl.w, 0.0f);  // nor an odd height's last row
}

// Note [2x2 max pooling forward by lanes]: Pool2d's loops make a pass per tap
// over each output row and read the input at stride 2, a float at a time: on
// LeNet's 28x28 planes that was the one layer whose time per image grew with
// the batch. Here kFloatLanes outputs at a time from two rows' 2 *
// kFloatLanes inputs, split into even and odd lanes, the four taps compared
// in scan order as Pool2d's loops compare them (Note [Max pooling propagates
// NaN] in pool2d.cpp), so the maxima are the same bits. A row's last outputs
// load whole vectors too where the plane goes on past them (the extra lanes
// read the next row, and are dropped); where they would read past the
// plane's end (its last row of windows), they go through padded copies.

// kFloatLanes windows' maxima, from two rows' 2 * kFloatLanes input columns at `top` and `bottom`.
FloatLanes max_2x2_lanes(const float* top, const float* bottom) {
  const FloatLanes top_lo = load_lanes(top), top_hi = load_lanes(top + kFloatLanes);
  const FloatLanes bottom_lo = load_lanes(bottom), bottom_hi = load_lanes(bottom + kFloatLanes);
  const FloatLanes taps[4] = {even_lanes(top_lo, top_hi), odd_lanes(top_lo, top_hi), even_lanes(bottom_lo, bottom_hi),
                              odd_lanes(bottom_lo, bottom_hi)};
  FloatLanes best = FloatLanes{} - std::numeric_limits<float>::infinity();
  for (const FloatLanes& v : taps) best = ((best < v) | (v != v)) ? v : best;  // as Pool2d's loops
  return best;
}

void max_forward_plane_2x2(const MaxPoolPlan& pl, const float* x, float* y) {
  const float* plane_end = x + pl.h * pl.w;
  for (int64_t p = 0; p < pl.p; ++p) {
    const float* top = x + 2 * p * pl.w;
    const float* bottom = top + pl.w;
    float* y_row = y + p * pl.q;
    int64_t q = 0;
    for (; q + kFloatLanes <= pl.q; q += kFloatLanes) {
      const FloatLanes best = max_2x2_lanes(top + 2 * q, bottom + 2 * q);
      std::memcpy(y_row + q, &best, sizeof best);
    }
    if (q == pl.q) continue;
    const int64_t rest = pl.q - q;
    if (bottom + 2 * q + 2 * kFloatLanes <= plane_end) {
      store_first_lanes(max_2x2_lanes(top + 2 * q, bottom + 2 * q), rest, y_row + q);
      continue;
    }
    float in_top[2 * kFloatLanes] = {}, in_bottom[2 * kFloatLanes] = {};
    std::copy_n(top + 2 * q, 2 * rest, in_top);
    std::copy_n(bottom + 2 * q, 2 * rest, in_bottom);
    store_first_lanes(max_2x2_lanes(in_top, in_bottom), rest, y_row + q);
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
      max_backward_plane_2x2(pl, x + plane * hw, dy + plane * pq, mode == GradMode::kAdd, dx + plane * hw);
    }
  });
}

void max_pool_forward_2x2(const MaxPoolPlan& pl, const float* x, float* y) {
  const int64_t hw = pl.h * pl.w, pq = pl.p * pl.q;
  parallel_for(pl.planes, std::max<int64_t>(1, kElementwiseGrain / hw), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) max_forward_plane_2x2(pl, x + plane * hw, y + plane * pq);
  });
}

}  // namespace glassbox
