// layers/pool2d/pool2d_max_nhwc.cpp: max pooling on channels-last values
// (layers/pool2d/pool2d_max_nhwc.h). Forward works output row by output row, the
// rows in parallel: each output pixel's channels are vectors, each the max of
// the window's pixels at those channels, so every load is a whole run of
// channels and the threads read disjoint rows. Backward zeroes dx (for
// GradMode::kWrite) and adds each dy at its argmax: by output rows in
// parallel where no two windows share an input row, else by images (or, for
// one image, by channel blocks).
#include "layers/pool2d/pool2d_max_nhwc.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tensor/float_lanes.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

// Where output (n, c, oh, ow) lies in y or dy; channels c to c + 15 follow it
// one apart (NHWC) or a plane apart (NCHW: output_lane_stride).
int64_t output_offset(const MaxPoolNhwcPlan& g, int64_t n, int64_t oh, int64_t ow, int64_t c) {
  return g.y_channels_last ? ((n * g.p + oh) * g.q + ow) * g.c + c : ((n * g.c + c) * g.p + oh) * g.q + ow;
}
int64_t output_lane_stride(const MaxPoolNhwcPlan& g) { return g.y_channels_last ? 1 : g.p * g.q; }

// The input pixels of output (oh, ow)'s window inside the plane, in scan
// order (padding never wins), as indices into one image's plane.
int window_taps(const MaxPoolNhwcPlan& g, int64_t oh, int64_t ow, int32_t* taps) {
  int count = 0;
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t r = oh * g.sh - g.ph + i;
    if (r < 0 || r >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t col = ow * g.sw - g.pw + j;
      if (col >= 0 && col < g.w) taps[count++] = static_cast<int32_t>(r * g.w + col);
    }
  }
  return count;
}

// Channels [c0, c0 + kVectors * 16) of one window: the maxima into y_pixel
// (kFloatLanes apart per vector, lane_stride apart per lane) and, with
// kArgmax, their taps into arg_pixel. Several vectors at once, because each
// tap's compare and select wait on the last one's, and the window's taps are
// found once for all its channels rather than clipped again for each vector.
// Note [Max pooling propagates NaN] (pool2d.cpp): the running maximum starts
// at the window's first input and a NaN always replaces it, so it is y too;
// the argmax is the first maximum in scan order or the last NaN.
template <int kVectors, bool kArgmax>
void pool_vectors(const float* x_image, int64_t c, const int32_t* taps, int count, int64_t c0, float* y_pixel,
                  int64_t lane_stride, int32_t* arg_pixel) {
  FloatLanes max[kVectors];
  IntLanes arg[kVectors];
  const float* first = x_image + taps[0] * c + c0;
  for (int v = 0; v < kVectors; ++v) max[v] = load_lanes(first + v * kFloatLanes), arg[v] = IntLanes{} + taps[0];
  for (int t = 1; t < count; ++t) {
    const float* from = x_image + taps[t] * c + c0;
    for (int v = 0; v < kVectors; ++v) {
      const FloatLanes x = load_lanes(from + v * kFloatLanes);
      const IntLanes better = (x > max[v]) | (x != x);
      max[v] = better ? x : max[v];
      if constexpr (kArgmax) arg[v] = better ? IntLanes{} + taps[t] : arg[v];
    }
  }
  for (int v = 0; v < kVectors; ++v) {
    float* to = y_pixel + (c0 + v * kFloatLanes) * lane_stride;
    if (lane_stride == 1) {
      std::memcpy(to, &max[v], sizeof max[v]);
    } else {
      for (int lane = 0; lane < kFloatLanes; ++lane) to[lane * lane_stride] = max[v][lane];
    }
    if constexpr (kArgmax) std::memcpy(arg_pixel + c0 + v * kFloatLanes, &arg[v], sizeof arg[v]);
  }
}

// One window's channels: kWideVectors at a time, then one by one.
template <bool kArgmax>
void pool_window(const MaxPoolNhwcPlan& g, const float* x_image, const int32_t* taps, int count, float* y_pixel,
                 int64_t lane_stride, int32_t* arg_pixel) {
  constexpr int kWideVectors = 4;
  int64_t c0 = 0;
  for (; c0 + kWideVectors * kFloatLanes <= g.c; c0 += kWideVectors * kFloatLanes) {
    pool_vectors<kWideVectors, kArgmax>(x_image, g.c, taps, count, c0, y_pixel, lane_stride, arg_pixel);
  }
  for (; c0 < g.c; c0 += kFloatLanes) {
    pool_vectors<1, kArgmax>(x_image, g.c, taps, count, c0, y_pixel, lane_stride, arg_pixel);
  }
}

// dx's rows of image n under output row oh: dy at each argmax added in.
void route_row(const MaxPoolNhwcPlan& g, const int32_t* argmax, const float* dy, float* dx, int64_t n, int64_t oh,
               int64_t c_begin, int64_t c_end) {
  float* dx_image = dx + n * g.h * g.w * g.c;
  for (int64_t ow = 0; ow < g.q; ++ow) {
    const int32_t* arg = argmax + ((n * g.p + oh) * g.q + ow) * g.c;
    for (int64_t c = c_begin; c < c_end; ++c) dx_image[arg[c] * g.c + c] += dy[output_offset(g, n, oh, ow, c)];
  }
}

}  // namespace

bool max_pool_nhwc_fits(int64_t channels) { return channels > 0 && channels % kFloatLanes == 0; }

void max_pool_nhwc_forward(const MaxPoolNhwcPlan& g, const float* x, float* y, int32_t* argmax) {
  const int64_t lane_stride = output_lane_stride(g);
  const int64_t row_work = g.q * g.c * g.kh * g.kw;
  parallel_for(g.n * g.p, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, row_work)),
               [&](int64_t begin, int64_t end) {
    // window_taps writes the taps inside the plane only.
    std::vector<int32_t> taps(static_cast<size_t>(std::min(g.kh, g.h) * std::min(g.kw, g.w)));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / g.p, oh = row % g.p;
      const float* x_image = x + n * g.h * g.w * g.c;
      for (int64_t ow = 0; ow < g.q; ++ow) {
        const int count = window_taps(g, oh, ow, taps.data());
        // Every window holds an input: Pool2d refuses padding of half a window or more.
        float* y_pixel = y + output_offset(g, n, oh, ow, 0);
        if (argmax != nullptr) {
          pool_window<true>(g, x_image, taps.data(), count, y_pixel, lane_stride, argmax + ((n * g.p + oh) * g.q + ow) * g.c);
        } else {
          pool_window<false>(g, x_image, taps.data(), count, y_pixel, lane_stride, nullptr);
        }
      }
    }
  });
}

void max_pool_nhwc_backward(const MaxPoolNhwcPlan& g, const int32_t* argmax, const float* dy, GradMode mode,
                            float* dx) {
  const int64_t dx_floats = g.n * g.h * g.w * g.c;
  if (mode == GradMode::kWrite) {
    parallel_for(dx_floats, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      std::fill(dx + begin, dx + end, 0.0f);
    });
  }
  if (g.sh >= g.kh) {  // each input row under at most one output row: rows in parallel
    parallel_for(g.n * g.p, 1, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) route_row(g, argmax, dy, dx, row / g.p, row % g.p, 0, g.c);
    });
    return;
  }
  // Overlapping windows: the images in parallel (no two share dx), or with
  // one image, blocks of channels. Not by channels alone: each thread would
  // sweep the whole dx for its share of every pixel, several times slower
  // than the NCHW path on ResNet-18's stem pool.
  if (g.n > 1) {
    parallel_for(g.n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        for (int64_t oh = 0; oh < g.p; ++oh) route_row(g, argmax, dy, dx, n, oh, 0, g.c);
      }
    });
    return;
  }
  parallel_for(g.c / kFloatLanes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t oh = 0; oh < g.p; ++oh) route_row(g, argmax, dy, dx, 0, oh, begin * kFloatLanes, end * kFloatLanes);
  });
}

}  // namespace glassbox
