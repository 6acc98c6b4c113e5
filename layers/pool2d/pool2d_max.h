// layers/pool2d/pool2d_max.h: max pooling's CPU forward in blocks of outputs held in
// registers, keeping each window's argmax for the backward (Note [Max pooling
// by blocks] in pool2d_max.cpp). Pool2d (layers/pool2d/pool2d.cpp) calls it for max
// windows of column stride 1 or 2 other than the 2x2 stride-2 windows that
// lie inside the plane, which have their own forward and backward
// (layers/pool2d/pool2d_max_2x2.h).
#pragma once

#include <cstdint>

#include "layers/layer.h"

namespace glassbox {

struct MaxPoolPlan {
  int64_t planes = 0;      // N * C
  int64_t h = 0, w = 0;    // input plane
  int64_t p = 0, q = 0;    // output plane
  int64_t kh = 0, kw = 0, sh = 0, sw = 0, ph = 0, pw = 0;
  int threads = 1;         // threads, each with its own slice of the workspace
};

// Column strides 1 and 2 only: the taps of a block of outputs then read
// contiguous floats (stride 2 from the even and odd halves of a row); and
// kernel_h * W below 2^24, where the taps' offsets are exact as floats.
bool max_pool_by_blocks(const MaxPoolPlan& plan);

// Scratch: per thread, the padded plane split by column stride.
int64_t max_pool_workspace_floats(const MaxPoolPlan& plan);

// y (planes, P, Q) = the max over each window, padding never winning and a
// NaN always (as Pool2d's loops compute it: Note [Max pooling propagates NaN]
// in pool2d.cpp). argmax, where not null: (planes, P, Q), each window's first
// maximum in scan order, or its last NaN, as an index into its input plane;
// a window whose inputs are all -inf gets its first input.
void max_pool_forward(const MaxPoolPlan& plan, const float* x, float* y, int32_t* argmax, float* workspace);

// dx (planes, H, W), written or added per mode: dy routed to the argmax.
void max_pool_backward(const MaxPoolPlan& plan, const int32_t* argmax, const float* dy, GradMode mode, float* dx);

}  // namespace glassbox
