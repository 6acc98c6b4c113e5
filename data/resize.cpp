// data/resize.cpp: separable triangle-filter resampling (PIL's scheme:
// window centre (i + 0.5) * scale, radius max(scale, 1), weights clipped to
// the image and renormalised), columns first, over the output window only.
#include "data/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "data/dataset.h"

namespace glassbox {
namespace {

// For each output position along one axis: the first source index and the
// weights of `taps` consecutive source pixels (zero past the window).
struct AxisWeights {
  int taps = 0;
  std::vector<int> first;
  std::vector<float> weights;  // (outputs, taps)
};

// Outputs offset .. offset + count - 1 of an axis resized from `in` to `out`.
AxisWeights axis_weights(int in, int out, int offset, int count) {
  const double scale = static_cast<double>(in) / out;
  const double radius = std::max(scale, 1.0);
  AxisWeights a;
  a.taps = static_cast<int>(std::ceil(radius)) * 2 + 1;
  a.first.resize(static_cast<size_t>(count));
  a.weights.assign(static_cast<size_t>(count) * static_cast<size_t>(a.taps), 0.0f);
  std::vector<double> w(static_cast<size_t>(a.taps));
  for (int i = 0; i < count; ++i) {
    const double centre = (offset + i + 0.5) * scale;
    const int lo = std::max(0, static_cast<int>(std::floor(centre - radius + 0.5)));
    const int hi = std::min(in, static_cast<int>(std::floor(centre + radius + 0.5)));
    double sum = 0.0;
    const int n = std::min(hi - lo, a.taps);
    for (int k = 0; k < n; ++k) {
      w[static_cast<size_t>(k)] = std::max(0.0, 1.0 - std::abs((lo + k + 0.5 - centre) / radius));
      sum += w[static_cast<size_t>(k)];
    }
    a.first[static_cast<size_t>(i)] = lo;
    for (int k = 0; k < n; ++k) {
      a.weights[static_cast<size_t>(i) * static_cast<size_t>(a.taps) + static_cast<size_t>(k)] =
          static_cast<float>(w[static_cast<size_t>(k)] / sum);
    }
  }
  return a;
}

// Calls write(c, y, x, value) for every output value of the window.
template <typename Write>
void resample(const Image& source, const ResizeCropOptions& o, const Write& write) {
  const int channels = source.channels;
  const AxisWeights across = axis_weights(source.width, o.resized_width, o.crop_x, o.crop_width);
  const AxisWeights down = axis_weights(source.height, o.resized_height, o.crop_y, o.crop_height);
  // Source rows the window needs, resampled across into `rows` (row, crop x, channel).
  const int row_lo = down.first.front();
  const int row_hi = std::min(source.height, down.first.back() + down.taps);
  thread_local std::vector<float> rows;
  const size_t row_floats = static_cast<size_t>(o.crop_width) * static_cast<size_t>(channels);
  rows.resize(static_cast<size_t>(row_hi - row_lo) * row_floats);
  for (int y = row_lo; y < row_hi; ++y) {
    const uint8_t* src = source.pixels.data() + static_cast<size_t>(y) * source.width * channels;
    float* dst = rows.data() + static_cast<size_t>(y - row_lo) * row_floats;
    for (int x = 0; x < o.crop_width; ++x) {
      const float* w = across.weights.data() + static_cast<size_t>(x) * across.taps;
      const int first = across.first[static_cast<size_t>(x)];
      const int n = std::min(across.taps, source.width - first);
      for (int c = 0; c < channels; ++c) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k) sum += w[k] * src[(first + k) * channels + c];
        dst[x * channels + c] = sum;
      }
    }
  }
  for (int y = 0; y < o.crop_height; ++y) {
    const float* w = down.weights.data() + static_cast<size_t>(y) * down.taps;
    const int first = down.first[static_cast<size_t>(y)];
    const int n = std::min(down.taps, row_hi - first);
    for (int x = 0; x < o.crop_width; ++x) {
      const int out_x = o.flip ? o.crop_width - 1 - x : x;
      for (int c = 0; c < channels; ++c) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k) sum += w[k] * rows[static_cast<size_t>(first - row_lo + k) * row_floats + x * channels + c];
        write(c, y, out_x, sum);
      }
    }
  }
}

}  // namespace

void resize_crop_normalise(const Image& source, const ResizeCropOptions& o, std::span<float> out) {
  const size_t expected = static_cast<size_t>(std::max(source.channels, 0)) * static_cast<size_t>(std::max(o.crop_width, 0)) *
                          static_cast<size_t>(std::max(o.crop_height, 0));
  const bool sizes_ok = source.width > 0 && source.height > 0 && (source.channels == 1 || source.channels == 3) &&
                        source.pixels.size() == static_cast<size_t>(source.width) * source.height * source.channels &&
                        o.resized_width > 0 && o.resized_height > 0 && o.crop_width > 0 && o.crop_height > 0;
  // In 64 bits: crop_x + crop_width may pass INT_MAX.
  const bool window_ok = o.crop_x >= 0 && o.crop_y >= 0 &&
                         int64_t{o.crop_x} + o.crop_width <= o.resized_width &&
                         int64_t{o.crop_y} + o.crop_height <= o.resized_height;
  if (!sizes_ok || !window_ok || out.size() != expected) {
    throw ShapeError(cat("resize: a ", o.crop_width, "x", o.crop_height, " window at (", o.crop_x, ", ", o.crop_y,
                         ") of a ", source.width, "x", source.height, "x", source.channels, " image resized to ",
                         o.resized_width, "x", o.resized_height, " into ", out.size(),
                         " floats: the window must lie inside, sizes be positive, 1 or 3 channels, and the "
                         "output hold channels x height x width floats"));
  }
  float scale[3], bias[3];  // (v/255 - mean)/stddev = v * scale + bias
  for (int c = 0; c < source.channels; ++c) {
    scale[c] = 1.0f / (255.0f * o.stddev[static_cast<size_t>(c)]);
    bias[c] = -o.mean[static_cast<size_t>(c)] / o.stddev[static_cast<size_t>(c)];
  }
  const size_t plane = static_cast<size_t>(o.crop_width) * static_cast<size_t>(o.crop_height);
  resample(source, o, [&](int c, int y, int x, float v) {
    out[static_cast<size_t>(c) * plane + static_cast<size_t>(y) * o.crop_width + x] = v * scale[c] + bias[c];
  });
}

Image resize_image(const Image& source, int width, int height) {
  Image out{.width = width, .height = height, .channels = source.channels};
  out.pixels.resize(static_cast<size_t>(std::max(width, 0)) * std::max(height, 0) * std::max(source.channels, 0));
  std::vector<float> planes(out.pixels.size());
  resize_crop_normalise(source, {.resized_width = width, .resized_height = height, .crop_width = width,
                                 .crop_height = height}, planes);
  const size_t plane = static_cast<size_t>(width) * height;
  for (size_t c = 0; c < static_cast<size_t>(source.channels); ++c) {
    for (size_t i = 0; i < plane; ++i) {
      const float v = std::round(planes[c * plane + i] * 255.0f);
      out.pixels[i * source.channels + c] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
    }
  }
  return out;
}

}  // namespace glassbox
