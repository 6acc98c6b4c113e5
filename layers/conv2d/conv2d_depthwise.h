// layers/conv2d/conv2d_depthwise.h: the CPU convolution when every group has one
// input channel (groups == C > 1, K = C * multiplier) and the stride is 1,
// computed directly instead of as one tiny GEMM per channel (layers/conv2d/conv2d.cpp
// calls it when its plan says depthwise). Output channel k = c * multiplier + j
// reads input channel c (sh = sw = 1 here):
//   y[n,k,p,q]  = b[k] + sum_{r,s} w[k,0,r,s] * x[n,c, p*sh - ph + r*dh, q*sw - pw + s*dw]
//   dx[n,c,h,w] (= or +=) sum_{j,r,s,p,q: the tap lands on (h,w)} w[k,0,r,s] * dy[n,k,p,q]
//   dw[k,0,r,s] += sum_{n,p,q} dy[n,k,p,q] * x[n,c, p*sh - ph + r*dh, q*sw - pw + s*dw]
// Each kernel tap is one multiply-add over a stretch of pixels, which the
// compiler vectorises (Note [Depthwise convolution by taps]). Forward and
// backward-data work on (image, channel) planes in parallel, each writing only
// its own plane; backward-filter on output channels, summing images, rows and
// columns in a fixed order, so no result depends on the thread count.
#pragma once

#include <cstdint>

#include "layers/conv2d/im2col.h"
#include "layers/layer.h"

namespace glassbox {

struct DepthwisePlan {
  int64_t n = 0, c = 0;     // images, input channels
  int64_t multiplier = 1;   // output channels per input channel: K = C * multiplier
  int64_t p = 0;            // output height (u.q is the width)
  Unfold u{};               // one plane: input size, kernel, padding, dilation (stride 1)
  int threads = 1;          // threads, each with its own workspace
  // One R*S filter for every channel (forward and backward-data): a stride-1 average pool
  // is this with every weight 1/(R*S) (layers/pool2d/pool2d.cpp).
  bool shared_weights = false;
};

// Scratch for all three passes: per thread, a zero-bordered copy of one plane,
// a few rows of outputs and, per kernel tap, of filter sums.
int64_t depthwise_workspace_floats(const DepthwisePlan& plan);

// y: (N, K, P, Q) written; b may be null.
void depthwise_forward(const DepthwisePlan& plan, const float* x, const float* w, const float* b, float* y,
                       float* workspace);
// dx: (N, C, H, W) written or added per mode.
void depthwise_backward_data(const DepthwisePlan& plan, const float* w, const float* dy, GradMode mode, float* dx,
                             float* workspace);
// dw: (K, 1, R, S) accumulated.
void depthwise_backward_filter(const DepthwisePlan& plan, const float* x, const float* dy, float* dw,
                               float* workspace);

}  // namespace glassbox
