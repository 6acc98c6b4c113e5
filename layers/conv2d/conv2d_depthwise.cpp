// layers/conv2d/conv2d_depthwise.cpp: direct depthwise convolution on the CPU, stride 1.
//
// Note [Depthwise convolution by taps]: as im2col + GEMM, a depthwise layer is
// one product per channel with a single row of R*S weights: Xception's 728
// channels at 19x19 make 728 products of 1x9 by 9x361 per image, each paying
// for an unfolding and a GEMM's set-up to do 3,249 multiply-adds. Here each
// kernel tap (r, s) is one scalar times a stretch of input added to a stretch
// of output, a loop the compiler vectorises. The input plane is first copied
// into a zero-bordered plane of width Wp = W + 2*pad_w, and the output is
// computed on that width: output pixel i = p*Wp + q reads padded pixel
// i + r*dil_h*Wp + s*dil_w for every tap, so a run of whole rows is one loop
// with no borders to test (columns q >= Q are computed and dropped). Outputs
// are done a few rows at a time, every tap, so those rows stay in L1.
// Backward-data runs the same loops the other way (into a padded gradient
// plane), backward-filter multiplies them into per-tap sums.
//
// As GEMMs, Xception's 728-channel 19x19 layers take nearly three times as
// long. Going row by row without the padded copy is a little faster at 147x147
// but slower at 19x19, Xception's commonest plane, where starting 19-pixel
// loops costs more than running them. A stride-2 depthwise layer is faster as
// GEMMs than as a loop gathering every other input, so only stride 1 comes here
// (conv2d.cpp's prepare_cpu decides; bench/probes/depthwise_passes.cpp times
// the passes).
#include "layers/conv2d/conv2d_depthwise.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <optional>
#include <type_traits>
#include <utility>

#include <Eigen/Core>

#include "tensor/parallel_for.h"  // kElementwiseGrain

namespace glassbox {
namespace {

int64_t whole_lines(int64_t floats) { return (floats + 15) / 16 * 16; }  // 64-byte lines
// Note [Short rows by whole vectors]: rows here are short (Xception's are 10
// to 147 floats, a few thousand per layer), so copying them is a large part of
// a pass. A call to memcpy per row costs more than the taps themselves at
// 19x19; so does Eigen's copy of a dynamic-size map, which steps one float at
// a time up to an aligned address and again after the last whole vector
// (about three times the taps' time). So a row goes by whole unaligned
// vectors of 16, the last one ending at the row's end: it may rewrite a few
// values the one before wrote, with the same values. Rows under 16 floats go
// one by one.
using RowBlock = Eigen::Array<float, 16, 1>;
void copy(const float* from, int64_t n, float* to) {
  if (n < 16) {
    for (int64_t i = 0; i < n; ++i) to[i] = from[i];
    return;
  }
  for (int64_t i = 0; i + 16 < n; i += 16) Eigen::Map<RowBlock>(to + i) = Eigen::Map<const RowBlock>(from + i);
  Eigen::Map<RowBlock>(to + n - 16) = Eigen::Map<const RowBlock>(from + n - 16);
}
// to += from: whole vectors, then the last n % 16 one by one (an overlapping
// vector would add those values twice).
void add_into(const float* from, int64_t n, float* to) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) Eigen::Map<RowBlock>(to + i) += Eigen::Map<const RowBlock>(from + i);
  for (; i < n; ++i) to[i] += from[i];
}

// The innermost loops; `__restrict` lets the compiler vectorise (the
// stretches never overlap).
void multiply_add(float a, const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// Backward-filter's sums for a group of taps over one chunk: sums[t] (kLanes
// floats) += the products spread[i] * xp[i + offsets[t]], lane by lane, for
// i in [0, n) rounded up to whole blocks (the caller zeroes spread's extra
// lanes). Every tap's products stay in registers through the chunk: dy's
// block is loaded once for the group and x's once per tap, where a pass per
// tap would also load and store a row of sums per tap.
#if defined(__AVX512F__)
constexpr int64_t kLanes = 16;     // one vector register
constexpr int64_t kMaxGroup = 16;  // taps in registers at once, of 32 registers (a 3x3 kernel in one group)
#else
constexpr int64_t kLanes = 8;
constexpr int64_t kMaxGroup = 8;  // of 16 registers
#endif
int64_t whole_lanes(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

template <int kGroup>
void tap_group_sums(const float* spread, const float* xp, const int64_t* offsets, int64_t n, float* sums) {
  using Lanes = Eigen::Array<float, kLanes, 1>;
  Lanes acc[kGroup];
  for (Lanes& a : acc) a.setZero();
  for (int64_t i = 0; i < n; i += kLanes) {
    const Lanes d = Eigen::Map<const Lanes>(spread + i);
#pragma GCC unroll 16
    for (int t = 0; t < kGroup; ++t) acc[t] += d * Eigen::Map<const Lanes>(xp + i + offsets[t]);
  }
  for (int t = 0; t < kGroup; ++t) Eigen::Map<Lanes>(sums + t * kLanes) += acc[t];
}

using TapGroupSums = void (*)(const float*, const float*, const int64_t*, int64_t, float*);
template <int... kGroups>
constexpr std::array<TapGroupSums, sizeof...(kGroups) + 1> tap_group_table(std::integer_sequence<int, kGroups...>) {
  return {nullptr, &tap_group_sums<kGroups + 1>...};
}
constexpr auto kTapGroupSums = tap_group_table(std::make_integer_sequence<int, kMaxGroup>{});

// One output channel's taps: tap (r, s) reads the input r * row_step +
// s * col_step floats on, and weighs it by weights[r * cols + s].
struct Taps {
  int64_t rows, cols, row_step, col_step;
  const float* weights;
  float bias;
};

// out[i] = bias + sum over taps (r, s), in order, of their weight times xp[i + their offset],
// for i in [0, n) and on to the next multiple of 16: the reads past the last
// row land in the padded plane's slack (Geometry), the extra outputs in the
// chunk's, and are dropped with the other columns past Q. Each block of
// outputs stays in registers through every tap: one load per tap and one
// store, where a pass per tap (y += w_t * x_t) would load and store the
// outputs once per tap. Blocks of 64 are four independent chains of fused
// multiply-adds, so the adds do not wait on each other.
void sum_taps(const Taps& taps, const float* xp, float* out, int64_t n) {
  auto block = [&]<int kWidth>(std::integral_constant<int, kWidth>, int64_t i) {
    using Lanes = Eigen::Array<float, kWidth, 1>;
    Lanes acc = Lanes::Constant(taps.bias);
    const float* weight = taps.weights;
    for (int64_t r = 0; r < taps.rows; ++r) {
      const float* row = xp + r * taps.row_step + i;
      for (int64_t s = 0; s < taps.cols; ++s) acc += *weight++ * Eigen::Map<const Lanes>(row + s * taps.col_step);
    }
    Eigen::Map<Lanes>(out + i) = acc;
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) block(std::integral_constant<int, 64>{}, i);
  for (; i < n; i += 16) block(std::integral_constant<int, 16>{}, i);
}

// The padded plane and the chunks of output rows. At stride 1, P = Hp -
// (R-1)*dil_h and Q = Wp - (S-1)*dil_w, so every tap of every output on the
// padded width reads inside the padded plane.
struct Geometry {
  int64_t hp, wp;   // padded plane
  int64_t rows;     // output rows per chunk
  int64_t lanes;    // rows * wp: outputs per chunk on the padded width
  int64_t padded, chunk, sums;  // per-thread workspace: padded plane, one chunk, per-tap filter sums (kLanes each)
};

// Floats after the padded plane that sum_taps may read (its last block of 16
// runs up to 15 floats past the plane), kept zero.
constexpr int64_t kSlack = 16;

Geometry geometry(const DepthwisePlan& pl) {
  const Unfold& u = pl.u;
  Geometry g{};
  g.hp = u.h + 2 * u.ph, g.wp = u.w + 2 * u.pw;
  g.rows = std::clamp<int64_t>(512 / g.wp, 1, pl.p);  // about 2 KiB of outputs, in L1 for every tap
  g.lanes = g.rows * g.wp;
  g.padded = whole_lines(g.hp * g.wp) + kSlack;
  g.chunk = whole_lines(g.lanes);
  g.sums = u.r * u.s * kLanes;
  return g;
}

// xp's inside <- x (H x W). The border and the slack stay as
// zero_padded_planes left them: a pass zeroes each thread's plane once, then
// every plane it pads writes only the inside (at 19x19, writing the border
// for each plane cost as much as the taps).
void copy_inside(const Unfold& u, const Geometry& g, const float* x, float* xp) {
  for (int64_t h = 0; h < u.h; ++h) copy(x + h * u.w, u.w, xp + (h + u.ph) * g.wp + u.pw);
}

// Output rows [p0, p0 + rows) on the padded width start at flat index
// p0 * Wp and run (rows - 1) * Wp + Q outputs: the last row's dropped
// columns are left out, and with them any read past the padded plane.
struct Chunk {
  int64_t p0, rows, begin, length;
};
template <typename Body>
void for_each_chunk(const DepthwisePlan& pl, const Geometry& g, const Body& body) {
  for (int64_t p0 = 0; p0 < pl.p; p0 += g.rows) {
    const int64_t rows = std::min(g.rows, pl.p - p0);
    body(Chunk{p0, rows, p0 * g.wp, (rows - 1) * g.wp + pl.u.q});
  }
}
int64_t tap_offset(const Unfold& u, const Geometry& g, int64_t r, int64_t s) { return r * u.dh * g.wp + s * u.dw; }

// A chunk of dy's rows laid out on the padded width, zeros in the dropped
// columns (so that they add nothing).
void spread_rows(const DepthwisePlan& pl, const Geometry& g, const Chunk& c, const float* dyk, float* spread) {
  for (int64_t i = 0; i < c.rows; ++i) {
    copy(dyk + (c.p0 + i) * pl.u.q, pl.u.q, spread + i * g.wp);
    if (i + 1 < c.rows) std::fill_n(spread + i * g.wp + pl.u.q, g.wp - pl.u.q, 0.0f);
  }
}

int64_t floats_per_thread(const DepthwisePlan& pl);

// Runs body(item, this thread's workspace) for items [0, count) on
// pl.threads threads, or on this one where the whole pass is too small to pay
// for waking the others. Each item writes only its own outputs, so which
// thread takes which item never changes a result.
template <typename Body>
void for_each_item(const DepthwisePlan& pl, int64_t count, float* workspace, const Body& body) {
  const int64_t per_thread = floats_per_thread(pl);
  const int64_t multiply_adds = pl.n * pl.c * pl.multiplier * pl.p * pl.u.q * pl.u.r * pl.u.s;
  const bool parallel = pl.threads > 1 && multiply_adds >= kElementwiseGrain;
#pragma omp parallel num_threads(pl.threads) if (parallel)
  {
    float* mine = workspace + omp_get_thread_num() * per_thread;
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < count; ++item) body(item, mine);
  }
}

// Zeroes the padded plane (border and slack) at the start of every
// thread's workspace, as for_each_item slices it.
void zero_padded_planes(const DepthwisePlan& pl, const Geometry& g, float* workspace) {
  const int64_t per_thread = floats_per_thread(pl);
  for (int t = 0; t < pl.threads; ++t) std::fill_n(workspace + t * per_thread, g.padded, 0.0f);
}

// Note [Depthwise backward-data as a forward]: at stride 1, dx is dy
// convolved with the kernel turned end for end (tap (r, s) weighted by
// w[R-1-r, S-1-s]) over dy padded by (R-1)*dil_h - pad_h rows and
// (S-1)*dil_w - pad_w columns on each side, which makes the output H x W. So
// backward-data runs the forward's register blocks (sum_taps) over dy's
// planes, one load per tap and one store per output, where scattering dy
// into a padded dx plane loads and stores dx's plane once per tap; the
// scatter stays only for layers padded past their kernel, where that padding
// would be negative. The turned kernel is the same weights read with
// negative steps from its far corner: no copy of them.
std::optional<DepthwisePlan> backward_data_as_forward(const DepthwisePlan& pl) {
  const Unfold& u = pl.u;
  const int64_t ph = (u.r - 1) * u.dh - u.ph, pw = (u.s - 1) * u.dw - u.pw;
  if (ph < 0 || pw < 0) return std::nullopt;
  DepthwisePlan t = pl;
  t.u.h = pl.p, t.u.w = u.q, t.u.q = u.w, t.u.ph = ph, t.u.pw = pw;
  t.p = u.h;
  return t;
}

int64_t floats_per_thread(const DepthwisePlan& pl) {
  const Geometry g = geometry(pl);
  int64_t floats = g.padded + g.chunk + g.sums;
  if (const auto t = backward_data_as_forward(pl)) {
    const Geometry gt = geometry(*t);
    floats = std::max(floats, gt.padded + gt.chunk);
  }
  return floats;
}

}  // namespace

int64_t depthwise_workspace_floats(const DepthwisePlan& pl) { return pl.threads * floats_per_thread(pl); }

void depthwise_forward(const DepthwisePlan& pl, const float* x, const float* w, const float* b, float* y,
                       float* workspace) {
  const Unfold& u = pl.u;
  const Geometry g = geometry(pl);
  const int64_t hw = u.h * u.w, pq = pl.p * u.q, rs = u.r * u.s;
  zero_padded_planes(pl, g, workspace);
  for_each_item(pl, pl.n * pl.c, workspace, [&](int64_t plane, float* scratch) {  // plane = n * C + c
    float* xp = scratch;
    float* out = scratch + g.padded;  // one chunk of outputs on the padded width
    copy_inside(u, g, x + plane * hw, xp);
    for (int64_t j = 0; j < pl.multiplier; ++j) {
      const int64_t k = plane % pl.c * pl.multiplier + j;
      const float* wk = pl.shared_weights ? w : w + k * rs;
      float* yk = y + (plane * pl.multiplier + j) * pq;  // (n * K + k) * P * Q
      const Taps taps{u.r, u.s, u.dh * g.wp, u.dw, wk, b != nullptr ? b[k] : 0.0f};
      for_each_chunk(pl, g, [&](const Chunk& c) {
        sum_taps(taps, xp + c.begin, out, c.length);
        for (int64_t i = 0; i < c.rows; ++i) copy(out + i * g.wp, u.q, yk + (c.p0 + i) * u.q);
      });
    }
  });
}

void depthwise_backward_data(const DepthwisePlan& pl, const float* w, const float* dy, GradMode mode, float* dx,
                             float* workspace) {
  if (const auto t = backward_data_as_forward(pl)) {
    const Unfold& u = t->u;  // dy's planes in, dx's out
    const Geometry g = geometry(*t);
    const int64_t pq = u.h * u.w, hw = t->p * u.q, rs = u.r * u.s;
    const int64_t far_corner = (u.r - 1) * u.dh * g.wp + (u.s - 1) * u.dw;
    zero_padded_planes(pl, g, workspace);  // pl: the workspace is sliced by pl's threads and sizes
    for_each_item(pl, pl.n * pl.c, workspace, [&](int64_t plane, float* scratch) {  // owns dx's plane n * C + c
      float* dyp = scratch;
      float* out = scratch + g.padded;
      float* dxc = dx + plane * hw;
      for (int64_t j = 0; j < pl.multiplier; ++j) {  // every output channel that read input channel c
        const int64_t k = plane % pl.c * pl.multiplier + j;
        copy_inside(u, g, dy + (plane * pl.multiplier + j) * pq, dyp);
        const Taps turned{u.r, u.s, -u.dh * g.wp, -u.dw, pl.shared_weights ? w : w + k * rs, 0.0f};
        const bool add = j > 0 || mode == GradMode::kAdd;
        for_each_chunk(*t, g, [&](const Chunk& c) {
          sum_taps(turned, dyp + far_corner + c.begin, out, c.length);
          for (int64_t i = 0; i < c.rows; ++i) {
            float* to = dxc + (c.p0 + i) * u.q;
            if (add) {
              add_into(out + i * g.wp, u.q, to);
            } else {
              copy(out + i * g.wp, u.q, to);
            }
          }
        });
      }
    });
    return;
  }
  const Unfold& u = pl.u;
  const Geometry g = geometry(pl);
  const int64_t hw = u.h * u.w, pq = pl.p * u.q, rs = u.r * u.s;
  for_each_item(pl, pl.n * pl.c, workspace, [&](int64_t plane, float* scratch) {  // owns dx's plane n * C + c
    float* dxp = scratch;                // the padded plane's gradient
    float* spread = scratch + g.padded;  // one chunk of dy on the padded width
    std::fill_n(dxp, g.hp * g.wp, 0.0f);
    for (int64_t j = 0; j < pl.multiplier; ++j) {
      const int64_t k = plane % pl.c * pl.multiplier + j;
      const float* wk = pl.shared_weights ? w : w + k * rs;
      const float* dyk = dy + (plane * pl.multiplier + j) * pq;
      for_each_chunk(pl, g, [&](const Chunk& c) {
        spread_rows(pl, g, c, dyk, spread);
        for (int64_t r = 0; r < u.r; ++r) {
          for (int64_t s = 0; s < u.s; ++s) {
            multiply_add(wk[r * u.s + s], spread, dxp + c.begin + tap_offset(u, g, r, s), c.length);
          }
        }
      });
    }
    float* dxc = dx + plane * hw;
    for (int64_t h = 0; h < u.h; ++h) {  // dx is the inside of the padded plane
      const float* from = dxp + (h + u.ph) * g.wp + u.pw;
      float* to = dxc + h * u.w;
      if (mode == GradMode::kWrite) {
        copy(from, u.w, to);
      } else {
        add_into(from, u.w, to);
      }
    }
  });
}

// One item per output channel: its weight gradient sums images, then chunks,
// then the lanes of each tap's running sums, always in that order. The thread
// count changes which thread sums a channel, never the order (Note
// [Reproducible weight gradients] in conv2d.cpp).
void depthwise_backward_filter(const DepthwisePlan& pl, const float* x, const float* dy, float* dw,
                               float* workspace) {
  const Unfold& u = pl.u;
  const Geometry g = geometry(pl);
  const int64_t hw = u.h * u.w, pq = pl.p * u.q, rs = u.r * u.s;
  zero_padded_planes(pl, g, workspace);
  for_each_item(pl, pl.c * pl.multiplier, workspace, [&](int64_t k, float* scratch) {
    const int64_t c = k / pl.multiplier;
    float* xp = scratch;
    float* spread = scratch + g.padded;
    float* sums = scratch + g.padded + g.chunk;  // (R*S, kLanes)
    std::fill_n(sums, rs * kLanes, 0.0f);
    for (int64_t n = 0; n < pl.n; ++n) {
      copy_inside(u, g, x + (n * pl.c + c) * hw, xp);
      const float* dyk = dy + (n * pl.c * pl.multiplier + k) * pq;
      for_each_chunk(pl, g, [&](const Chunk& ch) {
        spread_rows(pl, g, ch, dyk, spread);
        std::fill(spread + ch.length, spread + whole_lanes(ch.length), 0.0f);  // the last block's extra lanes
        for (int64_t t0 = 0; t0 < rs; t0 += kMaxGroup) {
          const int64_t group = std::min(kMaxGroup, rs - t0);
          int64_t offsets[kMaxGroup];
          for (int64_t t = 0; t < group; ++t) offsets[t] = ch.begin + tap_offset(u, g, (t0 + t) / u.s, (t0 + t) % u.s);
          kTapGroupSums[group](spread, xp, offsets, ch.length, sums + t0 * kLanes);
        }
      });
    }
    for (int64_t t = 0; t < rs; ++t) {
      float total = 0.0f;  // the lanes in order
      for (int64_t l = 0; l < kLanes; ++l) total += sums[t * kLanes + l];
      dw[k * rs + t] += total;
    }
  });
}

}  // namespace glassbox
