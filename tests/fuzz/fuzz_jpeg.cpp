// tests/fuzz/fuzz_jpeg.cpp: arbitrary bytes as one image file of a folder
// dataset: prepare_jpeg_sample (data/image_folder.h), which decodes with
// TurboJPEG at a DCT scale, resizes, takes a window, flips and normalises,
// as ImageFolder::load does after reading the file. Input: the file's bytes.
//
// Samples of 3x32x32 and 1x28x28 in both modes, and 3x224x224 in evaluation.
// The only error allowed is a SampleError. Beyond that: every value
// written lies in the normalised range of 0..255, (0 - mean)/stddev to
// (1 - mean)/stddev, and the buffer's guard values after the sample are
// untouched.
#include <cmath>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "data/image_folder.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

namespace {

constexpr float kGuard = 12345.0f;

void prepare(std::span<const uint8_t> bytes, const Shape& sample, SampleMode mode) {
  const auto floats = static_cast<size_t>(sample.numel());
  std::vector<float> pixels(floats + 4, kGuard);
  std::mt19937_64 rng(7);
  try {
    prepare_jpeg_sample(bytes, "fuzz.jpg", {.sample = sample}, mode, rng, std::span<float>(pixels).first(floats));
  } catch (const SampleError&) {
    return;  // the answer to bytes that are not a decodable JPEG
  } catch (const std::exception& e) {
    // Any other error (a ShapeError from the resize, a DataError) is a bug here.
    std::fprintf(stderr, "fuzz: not a SampleError: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  const int channels = static_cast<int>(sample[0]);
  const size_t plane = floats / static_cast<size_t>(channels);
  for (int c = 0; c < channels; ++c) {
    const float mean = default_mean(channels)[static_cast<size_t>(c)];
    const float stddev = default_stddev(channels)[static_cast<size_t>(c)];
    const float low = (0.0f - mean) / stddev - 1e-3f, high = (1.0f - mean) / stddev + 1e-3f;
    for (size_t i = 0; i < plane; ++i) {
      const float v = pixels[static_cast<size_t>(c) * plane + i];
      FUZZ_CHECK(std::isfinite(v) && v >= low && v <= high);
    }
  }
  for (size_t i = floats; i < pixels.size(); ++i) FUZZ_CHECK(pixels[i] == kGuard);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  for (SampleMode mode : {SampleMode::kTraining, SampleMode::kEvaluation}) {
    prepare(bytes, Shape{3, 32, 32}, mode);
    prepare(bytes, Shape{1, 28, 28}, mode);
  }
  prepare(bytes, Shape{3, 224, 224}, SampleMode::kEvaluation);
  return 0;
}
