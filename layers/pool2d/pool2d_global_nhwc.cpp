// layers/pool2d/pool2d_global_nhwc.cpp: layers/pool2d/pool2d_global_nhwc.h. Work is split
// over images; an image's sum runs down its pixel rows, a vector of channels
// at a time.
#include "layers/pool2d/pool2d_global_nhwc.h"

#include <algorithm>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {

namespace {
int64_t images_per_item(int64_t pixels, int64_t channels) {
  return std::max<int64_t>(1, kElementwiseGrain / (pixels * channels));
}
}  // namespace

void global_average_nhwc_forward(int64_t images, int64_t pixels, int64_t channels, const float* x, float* y) {
  const float inv_area = 1.0f / static_cast<float>(pixels);
  parallel_for(images, images_per_item(pixels, channels), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      float* out = y + n * channels;
      std::fill(out, out + channels, 0.0f);
      const float* image = x + n * pixels * channels;
      for (int64_t p = 0; p < pixels; ++p) {
        const float* row = image + p * channels;
        for (int64_t c = 0; c < channels; ++c) out[c] += row[c];
      }
      for (int64_t c = 0; c < channels; ++c) out[c] *= inv_area;
    }
  });
}

void global_average_nhwc_backward(int64_t images, int64_t pixels, int64_t channels, const float* dy, GradMode mode,
                                  float* dx) {
  const float inv_area = 1.0f / static_cast<float>(pixels);
  parallel_for(images, images_per_item(pixels, channels), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const auto share = Eigen::Map<const Eigen::ArrayXf>(dy + n * channels, channels) * inv_area;
      for (int64_t p = 0; p < pixels; ++p) write_or_add(mode, as_array(dx + (n * pixels + p) * channels, channels), share);
    }
  });
}

}  // namespace glassbox
