// tests/test_concat.cpp
#include <gtest/gtest.h>

#include "layers/concat.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

std::unique_ptr<Layer> make_concat() { return std::make_unique<Concat>("mixed"); }

// y[:, offset_i : offset_i + C_i] = x_i, computed the plain way.
std::vector<float> reference_concat(const std::vector<std::vector<float>>& xs,
                                    const std::vector<int64_t>& channels, int64_t n, int64_t hw) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  std::vector<float> y(static_cast<size_t>(n * total * hw));
  for (int64_t s = 0; s < n; ++s) {
    int64_t offset = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      for (int64_t e = 0; e < channels[i] * hw; ++e) {
        const auto from = static_cast<size_t>(s * channels[i] * hw + e);
        y[static_cast<size_t>(s * total * hw + offset * hw + e)] = xs[i][from];
      }
      offset += channels[i];
    }
  }
  return y;
}

TEST(Concat, StacksChannelsPerSample) {
  Context ctx = Context::cpu();
  Concat concat("mixed");
  testing::LayerHarness h(ctx, concat, {Shape{2, 1, 1, 2}, Shape{2, 2, 1, 2}});
  EXPECT_EQ(concat.output_shape(), (Shape{2, 3, 1, 2}));
  h.write(h.inputs[0], {1, 2,  //
                        3, 4});
  h.write(h.inputs[1], {10, 20, 30, 40,  //
                        50, 60, 70, 80});
  h.poison(h.output);
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{1, 2, 10, 20, 30, 40,  //
                                                  3, 4, 50, 60, 70, 80}));
}

// Enough elements that the threads' ranges begin and end inside inputs.
TEST(Concat, LargeForwardAndBackwardMatchReference) {
  Context ctx = Context::cpu();
  Concat concat("mixed");
  const std::vector<int64_t> channels = {5, 7, 1};
  testing::LayerHarness h(ctx, concat, {Shape{3, 5, 33, 65}, Shape{3, 7, 33, 65}, Shape{3, 1, 33, 65}});
  h.randomize(9);
  h.poison(h.output);
  h.forward();
  std::vector<std::vector<float>> xs;
  for (const Tensor& x : h.inputs) xs.push_back(h.read(x));
  EXPECT_EQ(h.read(h.output), reference_concat(xs, channels, 3, 33 * 65));

  // Backward: dy's slices, written, then added onto random values.
  for (const Tensor& dx : h.input_grads) h.poison(dx);
  h.backward();
  std::vector<std::vector<float>> dxs;
  for (const Tensor& dx : h.input_grads) dxs.push_back(h.read(dx));
  EXPECT_EQ(reference_concat(dxs, channels, 3, 33 * 65), h.read(h.output_grad));
  std::vector<std::vector<float>> starts;
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    starts.push_back(testing::random_values(h.input_grads[i].numel(), 40 + i));
    h.write(h.input_grads[i], starts.back());
  }
  h.backward({GradMode::kAdd, GradMode::kAdd, GradMode::kAdd});
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    std::vector<float> expected = starts[i];
    for (size_t e = 0; e < expected.size(); ++e) expected[e] += dxs[i][e];
    EXPECT_EQ(h.read(h.input_grads[i]), expected) << "input " << i;
  }
}

TEST(Concat, DescribesChannels) {
  Concat concat("inception3a");
  concat.bind(std::vector<Shape>{Shape{8, 64, 28, 28}, Shape{8, 128, 28, 28}, Shape{8, 32, 28, 28},
                                 Shape{8, 32, 28, 28}});
  EXPECT_EQ(concat.describe(), "64 + 128 + 32 + 32 channels");
  EXPECT_EQ(concat.output_shape(), (Shape{8, 256, 28, 28}));
}

TEST(Concat, NamesTheMismatchingInputAndDimension) {
  Concat concat("mixed");
  try {
    concat.bind(std::vector<Shape>{Shape{8, 64, 28, 28}, Shape{8, 32, 28, 28}, Shape{8, 32, 14, 28}});
    FAIL() << "accepted mismatching heights";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(),
                 "mixed (Concat): input 2 has H = 14, input 0 has H = 28 (shapes (8, 32, 14, 28) and "
                 "(8, 64, 28, 28)); only channels may differ");
  }
  try {
    concat.bind(std::vector<Shape>{Shape{8, 64, 28, 28}, Shape{4, 32, 28, 28}});
    FAIL() << "accepted mismatching batches";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(),
                 "mixed (Concat): input 1 has N = 4, input 0 has N = 8 (shapes (4, 32, 28, 28) and "
                 "(8, 64, 28, 28)); only channels may differ");
  }
}

TEST(Concat, RejectsNonImageInputs) {
  Concat concat("mixed");
  try {
    concat.bind(std::vector<Shape>{Shape{8, 64, 28, 28}, Shape{8, 64}});
    FAIL() << "accepted a rank-2 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "mixed (Concat): input 1 must be (N, C, H, W), got shape (8, 64)");
  }
}

TEST(Concat, GradientsMatchFiniteDifferences) {
  testing::check_gradients(make_concat, {Shape{2, 3, 2, 3}, Shape{2, 1, 2, 3}, Shape{2, 2, 2, 3}});
}

TEST(Concat, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(make_concat, {Shape{3, 6, 7, 5}, Shape{3, 2, 7, 5}, Shape{3, 9, 7, 5}},
                                 {.tolerance = 0.0});
}

// Concat(x, x): slot 0 writes its gradient, slot 1 adds onto the same tensor.
class ConcatDeviceTest : public testing::DeviceTest {};

TEST_P(ConcatDeviceTest, SameTensorTwice) {
  Concat concat("twice");
  testing::LayerHarness h(ctx(), concat, {Shape{3, 4, 50, 60}, Shape{3, 4, 50, 60}});
  h.randomize(6);
  h.inputs[1] = h.inputs[0];
  h.input_grads[1] = h.input_grads[0];
  h.forward();
  const std::vector<float> x = h.read(h.inputs[0]);
  EXPECT_EQ(h.read(h.output), reference_concat({x, x}, {4, 4}, 3, 50 * 60));
  h.poison(h.input_grads[0]);
  h.backward({GradMode::kWrite, GradMode::kAdd});
  // dx = first half of each sample's dy + second half.
  const std::vector<float> dy = h.read(h.output_grad);
  const size_t half = 4 * 50 * 60;
  std::vector<float> expected(x.size());
  for (size_t s = 0; s < 3; ++s) {
    for (size_t e = 0; e < half; ++e) expected[s * half + e] = dy[s * 2 * half + e] + dy[s * 2 * half + half + e];
  }
  EXPECT_EQ(h.read(h.input_grads[0]), expected);
}

GLASSBOX_INSTANTIATE_ON_DEVICES(ConcatDeviceTest);

}  // namespace
}  // namespace glassbox
