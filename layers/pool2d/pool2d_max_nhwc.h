// layers/pool2d/pool2d_max_nhwc.h: max pooling on a channels-last input (Note
// [Channels-last values], graph/layouts.h), 16 channels of a pixel
// as one vector. Pool2d runs it where the graph stores its input NHWC; the
// output is NHWC too, or NCHW where the next layer needs that (VGG's pool5
// before the flatten).
#pragma once

#include <cstdint>

#include "layers/layer.h"

namespace glassbox {

struct MaxPoolNhwcPlan {
  int64_t n = 0, c = 0;    // images, channels (a multiple of 16)
  int64_t h = 0, w = 0;    // input plane
  int64_t p = 0, q = 0;    // output plane
  int64_t kh = 0, kw = 0, sh = 0, sw = 0, ph = 0, pw = 0;
  bool y_channels_last = true;  // y and dy NHWC; else NCHW
};

// Channels by whole vectors only.
bool max_pool_nhwc_fits(int64_t channels);

// y = the max over each window, padding never winning and a NaN always (as
// Pool2d's loops: Note [Max pooling propagates NaN] in pool2d.cpp). argmax,
// where not null: (N, P, Q, C), each window's first maximum in scan order or
// its last NaN, as an index into its input plane, the window's first input
// where nothing beats it (all -inf), as Pool2d's backward finds it.
void max_pool_nhwc_forward(const MaxPoolNhwcPlan& plan, const float* x, float* y, int32_t* argmax);

// dx (NHWC), written or added per mode: dy routed to the argmax.
void max_pool_nhwc_backward(const MaxPoolNhwcPlan& plan, const int32_t* argmax, const float* dy, GradMode mode,
                            float* dx);

}  // namespace glassbox
