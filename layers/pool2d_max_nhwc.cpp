// layers/pool2d_max_nhwc.cpp: max pooling on channels-last values
// (layers/pool2d_max_nhwc.h). Forward works output row by output row, the
// rows in parallel: each output pixel's channels are vectors, each the max of
// the window's pixels at those channels, so every load is a whole run of
// channels and the threads read disjoint rows. Backward zeroes dx (for
// GradMode::kWrite) and adds each dy at its argmax: by output rows in
// parallel where no two windows share an input row, else by images (or, for
// one image, by channel blocks).
#include "layers/pool2d_max_nhwc.h"

#include <algorithm>
#include <cstring>

#include "tensor/float_lanes.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

using IntLanes = int32_t __attribute__((vector_size(kFloatLanes * sizeof(int32_t))));

// Where output (n, c, oh, ow) lies in y or dy; channels c to c + 15 follow it
// one apart (NHWC) or a plane apart (NCHW: output_lane_stride).
int64_t output_offset(const MaxPoolNhwcPlan& g, int64_t n, int64_t oh, int64_t ow, int64_t c) {
  return g.y_channels_last ? ((n * g.p + oh) * g.q + ow) * g.c + c : ((n * g.c + c) * g.p + oh) * g.q + ow;
}
int64_t output_lane_stride(const MaxPoolNhwcPlan& g) { return g.y_channels_last ? 1 : g.p * g.q; }

// Output (oh, ow)'s channels [c0, c0 + 16) of one image.
// Note [Max pooling propagates NaN] (pool2d.cpp): the running maximum starts
// at the window's first input and a NaN always replaces it, so it is y too.
struct Pooled {
  FloatLanes max;  // y: NaN where the window holds one
  IntLanes arg;    // the first maximum in scan order or the last NaN, else the first input
};
Pooled pool_window(const MaxPoolNhwcPlan& g, const float* x_image, int64_t oh, int64_t ow, int64_t c0) {
  Pooled out{FloatLanes{}, IntLanes{} - 1};
  bool first = true;
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t r = oh * g.sh - g.ph + i;
    if (r < 0 || r >= g.h) continue;  // padding never wins
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t col = ow * g.sw - g.pw + j;
      if (col < 0 || col >= g.w) continue;
      const FloatLanes v = load_lanes(x_image + (r * g.w + col) * g.c + c0);
      const IntLanes at = IntLanes{} + static_cast<int32_t>(r * g.w + col);
      if (first) {
        out.max = v, out.arg = at, first = false;
        continue;
      }
      const IntLanes better = (v > out.max) | (v != v);
      out.max = better ? v : out.max;
      out.arg = better ? at : out.arg;
    }
  }
  return out;
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
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / g.p, oh = row % g.p;
      const float* x_image = x + n * g.h * g.w * g.c;
      for (int64_t ow = 0; ow < g.q; ++ow) {
        for (int64_t c0 = 0; c0 < g.c; c0 += kFloatLanes) {
          const Pooled pooled = pool_window(g, x_image, oh, ow, c0);
          float* to = y + output_offset(g, n, oh, ow, c0);
          if (lane_stride == 1) {
            std::memcpy(to, &pooled.max, sizeof pooled.max);
          } else {
            for (int lane = 0; lane < kFloatLanes; ++lane) to[lane * lane_stride] = pooled.max[lane];
          }
          if (argmax != nullptr) std::memcpy(argmax + ((n * g.p + oh) * g.q + ow) * g.c + c0, &pooled.arg, sizeof pooled.arg);
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
  // one image, blocks of channels. By channels alone, each thread swept the
  // whole dx for its half of every pixel: ResNet-18's stem pool (3x3 s2 over
  // 16 x 112 x 112 x 64) took 24 ms a backward against 3 ms for the NCHW
  // path (`glassbox time ResNet18 --batch 16`, 2-core EPYC, medians of 3).
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
