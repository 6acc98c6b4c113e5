// tests/test_bias_add_cuda.cpp: Glassbox's bias-add kernel on a GPU
// (launch_bias_add, layers/relu_kernels_cuda.h) against the sum in float,
// rounded once, on the CPU, bit for bit: float32, float16 and bfloat16;
// channels-first with pixels that fill whole packs and pixels that do not,
// channels-last with channels that do and do not, a Linear's rows; with and
// without the ReLU; a y that does not align to packs (every value one at a
// time); a NaN that stays NaN and a value outside the span left as it was.
// Built where CUDA is: it launches the kernel itself.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "layers/relu_kernels_cuda.h"
#include "tensor/context_cuda.h"
#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

struct Case {
  int64_t images, channels, pixels;
  Layout layout;
};

float stored(float value, DType dtype) { return dtype == DType::kFloat32 ? value : round_to_16_bit(value, dtype); }

// y of the case's values of `dtype`, from element `offset` of a buffer one
// value longer, plus the bias (and the ReLU where `relu`).
void expect_bias_add_matches_the_cpu(Context& gpu, const Case& c, DType dtype, bool relu, int64_t offset) {
  SCOPED_TRACE(cat(name_of(dtype), ", ", c.images, " x ", c.channels, " x ", c.pixels,
                   c.layout == Layout::kNCHW ? " channels-first" : " channels-last", relu ? ", ReLU" : "",
                   ", y at value ", offset));
  const BiasAddPlan plan =
      plan_bias_add(c.images, c.channels, c.pixels, c.layout, static_cast<int64_t>(size_of(dtype)));
  std::mt19937 engine(static_cast<uint32_t>(plan.count + offset));
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<float> y(static_cast<size_t>(plan.count + 1)), bias(static_cast<size_t>(plan.channels));
  for (float& v : y) v = stored(uniform(engine), dtype);
  for (float& v : bias) v = stored(uniform(engine), dtype);
  y[static_cast<size_t>(offset + plan.count / 2)] = std::numeric_limits<float>::quiet_NaN();

  const auto upload = [&](const std::vector<float>& values) {
    const Shape shape{static_cast<int64_t>(values.size())};
    Tensor wide = gpu.allocate(shape, DType::kFloat32, MemoryCategory::kActivations);
    from_vector<float>(gpu, values, wide);
    if (dtype == DType::kFloat32) return wide;
    Tensor narrow = gpu.allocate(shape, dtype, MemoryCategory::kActivations);
    convert(gpu, wide, narrow);
    return narrow;
  };
  const Tensor y_gpu = upload(y), bias_gpu = upload(bias);
  launch_bias_add(static_cast<char*>(y_gpu.raw()) + offset * static_cast<int64_t>(size_of(dtype)), bias_gpu.raw(),
                  plan, dtype, relu, stream_of(gpu));
  const std::vector<float> got = to_float_vector(gpu, y_gpu);

  std::vector<float> want = y;
  for (int64_t i = 0; i < plan.count; ++i) {
    const float sum = y[static_cast<size_t>(offset + i)] + bias[static_cast<size_t>(bias_channel_of(i, plan.run,
                                                                                                     plan.channels))];
    want[static_cast<size_t>(offset + i)] = stored(relu && sum <= 0.0f ? 0.0f : sum, dtype);
  }
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : std::bit_cast<uint32_t>(want[i]) ==
                                                                       std::bit_cast<uint32_t>(got[i]);
    if (!same && wrong++ == 0) first = static_cast<int64_t>(i);
  }
  EXPECT_EQ(wrong, 0) << "first at " << first << ": " << (first < 0 ? 0.0f : got[static_cast<size_t>(first)])
                      << ", expected " << (first < 0 ? 0.0f : want[static_cast<size_t>(first)]);
}

TEST(BiasAddCuda, EveryLayoutTypeAndAlignmentMatchesTheSumInFloatRoundedOnce) {
  GLASSBOX_REQUIRE_CUDA();
  Context gpu = Context::cuda(0);
  const Case cases[] = {
      {2, 16, 8 * 8, Layout::kNCHW},   // pixels fill whole packs
      {2, 6, 13 * 13, Layout::kNCHW},  // they do not: packs cross channels
      {3, 16, 7 * 7, Layout::kNHWC},   // channels fill whole packs
      {3, 3, 5 * 5, Layout::kNHWC},    // they do not, and a tail under a pack
      {5, 10, 1, Layout::kNCHW},       // a Linear's rows
  };
  for (const Case& c : cases) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (bool relu : {false, true}) {
        for (int64_t offset : {0, 1}) expect_bias_add_matches_the_cpu(gpu, c, dtype, relu, offset);
      }
    }
  }
}

}  // namespace
}  // namespace glassbox
