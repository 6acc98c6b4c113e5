// layers/pool2d/pool2d_global_nhwc.h: global average pooling of a channels-last
// input (Note [Channels-last values], graph/layouts.h): each image
// is H*W rows of C floats, y its mean row. y is (N, C, 1, 1), the same bytes
// in NCHW and NHWC, so Pool2d writes it for either.
#pragma once

#include <cstdint>

#include "layers/layer.h"

namespace glassbox {

// y[n, c] = sum over the image's pixels of x[n, pixel, c] / pixels.
void global_average_nhwc_forward(int64_t images, int64_t pixels, int64_t channels, const float* x, float* y);

// dx[n, pixel, c] (= or +=) dy[n, c] / pixels.
void global_average_nhwc_backward(int64_t images, int64_t pixels, int64_t channels, const float* dy, GradMode mode,
                                  float* dx);

}  // namespace glassbox
