// layers/pool2d/pool2d_max_2x2.h: max pooling's 2x2 windows at stride 2 that lie
// inside the plane (LeNet's, VGG's on NCHW values), forward and backward by
// vector lanes on the CPU (layers/pool2d/pool2d_max_2x2.cpp). They keep no argmax:
// the backward finds each window's first maximum again from x.
#pragma once

#include "layers/pool2d/pool2d_max.h"  // MaxPoolPlan

namespace glassbox {

// Whether the plan's windows are 2x2 at stride 2, unpadded, inside the plane.
bool max_pool_2x2_inside(const MaxPoolPlan& plan);

// y (planes, P, Q) = each window's max, the same bits as Pool2d's loops give
// (a NaN wins: Note [Max pooling propagates NaN] in pool2d.cpp).
void max_pool_forward_2x2(const MaxPoolPlan& plan, const float* x, float* y);

// dx (planes, H, W), written or added per mode: dy routed to each window's
// first maximum in scan order, or its last NaN; inputs in no window get 0.
void max_pool_backward_2x2(const MaxPoolPlan& plan, const float* x, const float* dy, GradMode mode, float* dx);

}  // namespace glassbox
