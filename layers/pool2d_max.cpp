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
// scan order keeps the first maximum, a NaN always wins (Note [Max pooling
// propagates NaN] in pool2d.cpp), and -inf padding never wins (as in
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

// Lanes [0, 16) of the pair (a, b), read as 32 floats: the even ones, the odd ones.
inline FloatLanes even_lanes(FloatLanes a, FloatLanes b) {
  return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
inline FloatLanes odd_lanes(FloatLanes a, FloatLanes b) {
  return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

// Half k of one padded row: out[cc] for column cc * kStride + k, input column
// cc * kStride + k - pw (-inf outside the input, or for a row of padding: x_row null).
// Note [Padded halves by vectors]: the copy goes by whole vectors, 16 inputs
// at stride 1; at stride 2, 32 inputs and their even lanes (it went a float
// at a time). A load never reaches past the row's last input (the one after
// it may be past the tensor); the rest go one by one. Xception's stride-2
// pools, forward, ms (`glassbox time Xception --batch 8`, two runs each,
// 2-core Zen 5 EPYC, stop 44): 37x37 5.5-5.7 -> 4.1-4.2, 19x19 4.4-4.9 ->
// 3.9, 10x10 2.5-2.8 -> 2.3; at 74x74 (8 x 128 planes of 147x147) 7.9-9.0
// -> 8.5-8.8, where this copy is not what bounds it.
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

// The first n of a vector's kLanes lanes to `to`, a whole vector where n is kLanes.
template <typename T, typename Lanes>
void store_first(const Lanes& v, int64_t n, T* to) {
  static_assert(sizeof(Lanes) == kLanes * sizeof(T));
  if (n == kLanes) {
    std::memcpy(to, &v, sizeof v);
    return;
  }
  T out[kLanes];
  std::memcpy(out, &v, sizeof v);
  std::copy_n(out, n, to);
}

// Writes one block's maxima and argmaxes: outputs [q0, q0 + 16) of row p,
// those past the row's end dropped. tap: each winner's offset from its
// window's corner, i * W + j, as a float (exact below 2^24:
// max_pool_by_blocks); -1 where nothing beat -inf, whose argmax is then the
// window's first input in scan order (every window holds one: pool2d.cpp).
void store_block(const MaxPoolPlan& pl, int64_t p, int64_t q0, FloatLanes best, FloatLanes tap, float* y,
                 int32_t* argmax) {
  const int64_t n = std::min(kLanes, pl.q - q0);
  store_first(best, n, y + p * pl.q + q0);
  if (argmax == nullptr) return;
  constexpr IntLanes kLane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const IntLanes column = IntLanes{} + static_cast<int32_t>(q0 * pl.sw - pl.pw) + kLane * static_cast<int32_t>(pl.sw);
  const IntLanes corner = column + static_cast<int32_t>((p * pl.sh - pl.ph) * pl.w);
  const IntLanes first = column > 0 ? column : IntLanes{};  // clipped to the plane
  const IntLanes first_input = first + static_cast<int32_t>(std::max<int64_t>(p * pl.sh - pl.ph, 0) * pl.w);
  const IntLanes won = __builtin_convertvector(tap, IntLanes);
  const IntLanes at = won < 0 ? first_input : corner + won;
  store_first(at, n, argmax + p * pl.q + q0);
}

// Rows [p, p + kRows) at outputs [q0, q0 + 16): a running max and the index
// of the tap that gave it per row, in registers through the window's taps.
// Note [Max pooling by blocks, rows at once]: each tap's compare and selects
// wait on the last tap's, so one row's chain left the vector units idle;
// two rows' chains interleave, and the argmaxes are worked out and stored as
// vectors (they were a scalar loop per lane). GoogLeNet's NCHW pools at batch
// 16, forward, ms (`glassbox time GoogLeNet --batch 16`, two alternated
// pairs, 2-core EPYC): inception3a's 3.3-3.8 -> 3.0-3.2, inception4a to 4e's
// 2.5-3.4 -> 2.4-2.7, 5a/5b's 2.0-2.4 -> 1.8; the stride-2 maxpool3 and
// maxpool4 (4.7-5.1) did not move.
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

// Note [2x2 max pooling backward]: the commonest window (LeNet, VGG, AlexNet's
// kin) is 2x2 at stride 2 without padding. When every window lies inside the
// plane they do not overlap, and each output's four inputs are compared in
// scan order directly (the same first maximum as Pool2d's loops) without
// their span bookkeeping, which dominates on short rows: LeNet's pool backward
// took 3.5 times its forward (`glassbox time LeNet`). It keeps no argmax, so
// its forward stays on Pool2d's loops.

// Note [2x2 max pooling backward by lanes]: a scatter of dy into a zeroed dx,
// one output at a time, took VGG11's pool1 at batch 1 (64 planes of 224x224)
// 4.8 ms against 0.7 for its forward. Here 16 outputs at a time: the even and
// odd columns of both input rows split into lanes, the winner picked by
// lanes, and each of dx's four positions written whole (dy where it won, else
// 0, or added to dx), interleaved back: dx is written once, with no zeroing
// pass. pool1 4.8 -> 1.7-1.8 ms, pool2 2.2 -> 0.8, pool3 1.1 -> 0.6 (`glassbox
// time VGG11 --batch 1`, twice, 2-core Xeon). A window's winner (t0 t1 over
// b0 b1): whether t1, b0 or b1 beats the ones before it in scan order, with a
// strict > or by being NaN (Note [Max pooling propagates NaN] in
// pool2d.cpp: the last NaN wins), by selects: on ReLU
// outputs (ties, zeros) branches mispredicted half the time (perf annotate).
// Rows of fewer than 16 outputs go through the same lanes from padded copies.
// Lanes [0, 16) of the pair (a, b), read as 32 floats: a and b interleaved
// (first and second halves); even_lanes and odd_lanes, above, take them apart.
inline FloatLanes interleaved_low(FloatLanes a, FloatLanes b) {
  return __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
}
inline FloatLanes interleaved_high(FloatLanes a, FloatLanes b) {
  return __builtin_shufflevector(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
}

// out[0, 32) = even and odd interleaved, or += with add.
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
    // lanes are dropped. (A scatter of each dy at its winner took LeNet's
    // pool1 backward at batch 64 0.40 ms against 0.14 for its forward.)
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
