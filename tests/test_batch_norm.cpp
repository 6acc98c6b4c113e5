// tests/test_batch_norm.cpp
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "layers/batch_norm/batch_norm.h"
#include "tests/support/checks.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

using Options = BatchNorm2d::Options;

std::function<std::unique_ptr<Layer>()> make_bn(Options options = {}) {
  return [=] { return std::make_unique<BatchNorm2d>("bn", options); };
}

// (N=2, C=2, H=1, W=2): channel 0 holds {1, 2, 3, 6}, channel 1 {10, 20, 30, 40}.
const std::vector<float> kX = {1, 2, 10, 20, 3, 6, 30, 40};
const Shape kShape{2, 2, 1, 2};

// The header's formulas in double: per channel mean, biased variance.
struct Stats {
  std::vector<double> mean, var;
};
Stats stats_of(const std::vector<float>& x, const Shape& shape) {
  const int64_t n = shape[0], c = shape[1], hw = shape[2] * shape[3];
  Stats s{std::vector<double>(c, 0.0), std::vector<double>(c, 0.0)};
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t p = 0; p < hw; ++p) s.mean[ch] += x[static_cast<size_t>((i * c + ch) * hw + p)];
    }
    s.mean[ch] /= static_cast<double>(n * hw);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t p = 0; p < hw; ++p) {
        const double d = x[static_cast<size_t>((i * c + ch) * hw + p)] - s.mean[ch];
        s.var[ch] += d * d;
      }
    }
    s.var[ch] /= static_cast<double>(n * hw);
  }
  return s;
}

std::vector<float> normalise(const std::vector<float>& x, const Shape& shape, const std::vector<double>& mean,
                             const std::vector<double>& var, const std::vector<float>& scale,
                             const std::vector<float>& shift, double eps) {
  const int64_t c = shape[1], hw = shape[2] * shape[3];
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const auto ch = static_cast<size_t>((static_cast<int64_t>(i) / hw) % c);
    y[i] = static_cast<float>(scale[ch] * (x[i] - mean[ch]) / std::sqrt(var[ch] + eps) + shift[ch]);
  }
  return y;
}

TEST(BatchNorm2d, TrainingNormalisesEachChannel) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn", {});
  testing::LayerHarness h(ctx, bn, {kShape});
  h.write(h.inputs[0], kX);
  h.write(h.params[0], {1.0f, 1.0f});
  h.write(h.params[1], {0.0f, 0.0f});
  h.forward(Phase::kTraining);
  const std::vector<float> y = h.read(h.output);
  // Channel 0: mean 3, biased variance 14 / 4; channel 1: mean 25, variance 500 / 4.
  testing::expect_close(y, normalise(kX, kShape, {3.0, 25.0}, {3.5, 125.0}, {1, 1}, {0, 0}, 1e-5), 1e-6,
                        "normalised output");
  const Stats out = stats_of(y, kShape);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(out.mean[c], 0.0, 1e-6) << "channel " << c;
    EXPECT_NEAR(out.var[c], 1.0, 1e-5) << "channel " << c;  // var / (var + eps)
  }

  // Scale and shift apply after normalising.
  h.write(h.params[0], {2.0f, -0.5f});
  h.write(h.params[1], {3.0f, 1.0f});
  h.forward(Phase::kTraining);
  testing::expect_close(h.read(h.output), normalise(kX, kShape, {3.0, 25.0}, {3.5, 125.0}, {2, -0.5f}, {3, 1}, 1e-5),
                        1e-6, "scaled and shifted output");
}

TEST(BatchNorm2d, RunningStatisticsUseTheUnbiasedVariance) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn", {.momentum = 0.1f});
  testing::LayerHarness h(ctx, bn, {kShape});
  EXPECT_EQ(h.read(bn.running_mean()), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(h.read(bn.running_var()), (std::vector<float>{1.0f, 1.0f}));
  h.write(h.inputs[0], kX);
  h.forward(Phase::kTraining);
  // M = 4 values per channel: unbiased variances 14 / 3 and 500 / 3 (the
  // biased ones would give 1.25 and 13.4).
  const double m = 0.1f;
  auto update = [m](double running, double batch) { return static_cast<float>((1 - m) * running + m * batch); };
  testing::expect_close(h.read(bn.running_mean()), {update(0, 3), update(0, 25)}, 1e-7, "running mean");
  testing::expect_close(h.read(bn.running_var()), {update(1, 14.0 / 3), update(1, 500.0 / 3)}, 1e-7,
                        "running variance");
  // An inference forward leaves them alone.
  h.forward(Phase::kInference);
  testing::expect_close(h.read(bn.running_mean()), {update(0, 3), update(0, 25)}, 1e-7,
                        "running mean after inference");
}

TEST(BatchNorm2d, InferenceUsesTheRunningStatistics) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn", {.eps = 1e-3f});
  testing::LayerHarness h(ctx, bn, {kShape});
  h.write(h.inputs[0], kX);
  h.write(h.params[0], {2.0f, 3.0f});
  h.write(h.params[1], {0.5f, -1.0f});
  h.write(bn.running_mean(), {1.0f, -2.0f});
  h.write(bn.running_var(), {4.0f, 0.25f});
  h.forward(Phase::kInference);
  testing::expect_close(h.read(h.output),
                        normalise(kX, kShape, {1.0, -2.0}, {4.0, 0.25}, {2, 3}, {0.5f, -1}, static_cast<double>(1e-3f)),
                        1e-6, "inference output");
}

TEST(BatchNorm2d, StatisticsStayAccurateForALargeMean) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn", {.momentum = 1.0f});
  const Shape shape{4, 3, 8, 8};
  testing::LayerHarness h(ctx, bn, {shape});
  std::vector<float> x = testing::random_values(shape.numel(), 5);
  for (float& v : x) v += 1000.0f;  // spread 0.58 around 1000
  h.write(h.inputs[0], x);
  h.write(h.params[0], {1, 1, 1});
  h.write(h.params[1], {0, 0, 0});
  h.forward(Phase::kTraining);
  const Stats s = stats_of(x, shape);
  const double m = static_cast<double>(shape.numel() / shape[1]);
  std::vector<float> unbiased;
  for (double v : s.var) unbiased.push_back(static_cast<float>(v * m / (m - 1)));
  testing::expect_close(h.read(bn.running_var()), unbiased, 1e-6, "running variance (momentum 1)");
  // The output error is bounded by rounding the mean 1000 to float (3e-5) times 1 / std.
  testing::expect_close(h.read(h.output), normalise(x, shape, s.mean, s.var, {1, 1, 1}, {0, 0, 0}, 1e-5), 1e-4,
                        "output");
}

// Channels whose runs are not a multiple of the lanes (37 = 2*16 + 5 = 4*8 + 5) and
// long enough (5 runs x 7 x 37 = 1295 values) that the lanes are flushed to
// double more than once: statistics, output and the parameter gradients
// against sums in double.
TEST(BatchNorm2d, SumsHoldOverLongRaggedChannels) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn", {.momentum = 1.0f});
  const Shape shape{5, 2, 7, 37};
  testing::LayerHarness h(ctx, bn, {shape});
  h.randomize(21);
  std::vector<float> x = testing::random_values(shape.numel(), 22);
  for (float& v : x) v += 10.0f;
  h.write(h.inputs[0], x);
  h.write(h.params[0], {1, 1});
  h.write(h.params[1], {0, 0});
  h.zero_param_grads();
  h.forward(Phase::kTraining);
  const Stats s = stats_of(x, shape);
  const double m = static_cast<double>(shape.numel() / shape[1]);
  std::vector<float> mean, unbiased;
  for (double v : s.mean) mean.push_back(static_cast<float>(v));
  for (double v : s.var) unbiased.push_back(static_cast<float>(v * m / (m - 1)));
  testing::expect_close(h.read(bn.running_mean()), mean, 1e-6, "running mean (momentum 1)");
  testing::expect_close(h.read(bn.running_var()), unbiased, 1e-6, "running variance (momentum 1)");
  testing::expect_close(h.read(h.output), normalise(x, shape, s.mean, s.var, {1, 1}, {0, 0}, 1e-5), 1e-5, "output");

  h.backward();
  const std::vector<float> dy = h.read(h.output_grad);
  const int64_t hw = shape[2] * shape[3];
  std::vector<double> sum_dy(2, 0.0), sum_dy_xhat(2, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<size_t>(static_cast<int64_t>(i) / hw % 2);
    sum_dy[c] += dy[i];
    sum_dy_xhat[c] += dy[i] * (x[i] - s.mean[c]) / std::sqrt(s.var[c] + 1e-5);
  }
  testing::expect_close(h.read(h.param_grads[1]), {static_cast<float>(sum_dy[0]), static_cast<float>(sum_dy[1])},
                        1e-4, "shift gradient (sum of dy)");
  testing::expect_close(h.read(h.param_grads[0]),
                        {static_cast<float>(sum_dy_xhat[0]), static_cast<float>(sum_dy_xhat[1])}, 1e-4,
                        "scale gradient (sum of dy * xhat)");
}

TEST(BatchNorm2d, RaggedChannelGradientsMatchFiniteDifferences) {
  testing::check_gradients(make_bn(), {Shape{3, 2, 5, 7}});  // runs of 35: two blocks of lanes and 3 more
}

TEST(BatchNorm2d, DescribesAndDeclaresParameters) {
  BatchNorm2d bn("bn1", {});
  bn.bind(std::vector<Shape>{Shape{8, 64, 7, 7}});
  EXPECT_EQ(bn.describe(), "64 channels, eps 1e-05, momentum 0.1");
  const auto specs = bn.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "scale");
  EXPECT_EQ(specs[0].shape, (Shape{64}));
  EXPECT_EQ(specs[0].init, Init::kOnes);
  EXPECT_EQ(specs[1].name, "shift");
  EXPECT_EQ(specs[1].init, Init::kZeros);
}

TEST(BatchNorm2d, RejectsBadOptionsAndInputs) {
  auto construct_error = [](Options o) -> std::string {
    try {
      BatchNorm2d bn("bn1", o);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(construct_error({.eps = -1e-3f}),
            "bn1 (BatchNorm2d): eps must be at least 0 (cuDNN's minimum) and finite, got -0.001");
  EXPECT_EQ(construct_error({.momentum = 1.5f}), "bn1 (BatchNorm2d): momentum must be in [0, 1], got 1.5");
  EXPECT_EQ(construct_error({.eps = 0.0f, .momentum = 0.0f}), "(no error)");

  BatchNorm2d bn("bn1", {});
  try {
    bn.bind(std::vector<Shape>{Shape{8, 64}});
    FAIL() << "accepted a rank-2 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "bn1 (BatchNorm2d): input 0 must be (N, C, H, W), got shape (8, 64)");
  }
}

TEST(BatchNorm2d, TrainingNeedsTwoValuesPerChannel) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn1", {});
  testing::LayerHarness h(ctx, bn, {Shape{1, 4, 1, 1}});
  h.randomize(1);
  try {
    h.forward(Phase::kTraining);
    FAIL() << "trained on one value per channel";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(),
                 "bn1 (BatchNorm2d): training needs more than one value per channel (N*H*W > 1), got input (1, 4, 1, 1)");
  }
  h.forward(Phase::kInference);  // fine: the running statistics need no batch
}

// eps 0 is for inference only: a training batch whose channel holds equal
// values has a variance of 0 to divide by.
TEST(BatchNorm2d, TrainingNeedsAPositiveEps) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn1", {.eps = 0.0f});
  testing::LayerHarness h(ctx, bn, {kShape});
  h.randomize(1);
  EXPECT_EQ(testing::message_of<ConfigError>([&] { h.forward(Phase::kTraining); }),
            "bn1 (BatchNorm2d): training needs a positive eps: a channel of equal values has a batch variance of 0, "
            "which eps 0 divides by (eps 0 is for inference only)");
  h.forward(Phase::kInference);
}

TEST(BatchNorm2d, BackwardNeedsATrainingForward) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn1", {});
  testing::LayerHarness h(ctx, bn, {kShape});
  h.randomize(1);
  const char* expected =
      "bn1 (BatchNorm2d): backward needs the batch statistics of a training-phase forward just before it; "
      "the last forward was in inference phase (or there was none)";
  try {
    h.backward();
    FAIL() << "backward without a forward";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), expected);
  }
  h.forward(Phase::kTraining);
  h.forward(Phase::kInference);
  try {
    h.backward();
    FAIL() << "backward after an inference forward";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), expected);
  }
  h.forward(Phase::kTraining);
  h.backward();
}

TEST(BatchNorm2d, TrainingGradientsMatchFiniteDifferences) {
  testing::check_gradients(make_bn(), {Shape{4, 3, 2, 3}});
  testing::check_gradients(make_bn({.eps = 1e-3f}), {Shape{2, 2, 5, 5}});
  testing::check_gradients(make_bn(), {Shape{5, 2, 1, 1}});  // one value per sample and channel
}

TEST(BatchNorm2d, CudaMatchesCpuInTraining) {
  testing::check_cpu_cuda_parity(make_bn(), {Shape{8, 16, 7, 7}});
  testing::check_cpu_cuda_parity(make_bn({.eps = 1e-3f, .momentum = 0.3f}), {Shape{3, 5, 4, 6}});
}

// Note [Batch norm inference in slices]: a batch over cuDNN's limit runs in
// slices of at most 65,535 samples, in order, each contiguous.
TEST(BatchNorm2d, InferenceBatchesOverCudnnsLimitRunInSlices) {
  using Slices = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(batch_slices(8, kCudnnInferenceBatchLimit), (Slices{{0, 8}}));
  EXPECT_EQ(batch_slices(65'535, 65'535), (Slices{{0, 65'535}}));
  EXPECT_EQ(batch_slices(65'536, 65'535), (Slices{{0, 65'535}, {65'535, 1}}));
  EXPECT_EQ(batch_slices(140'000, 65'535), (Slices{{0, 65'535}, {65'535, 65'535}, {131'070, 8'930}}));
}

// The same running statistics written on both devices, then inference; a
// batch over cuDNN's inference limit too (Note [Batch norm inference in slices]).
void expect_cuda_inference_matches_cpu(const Shape& shape) {
  Context cpu = Context::cpu(), gpu = Context::cuda(0);
  BatchNorm2d cpu_bn("bn", {}), gpu_bn("bn", {});
  testing::LayerHarness c(cpu, cpu_bn, {shape});
  testing::LayerHarness g(gpu, gpu_bn, {shape});
  c.randomize(11);
  g.copy_values_from(c);
  const std::vector<float> mean = testing::random_values(shape[1], 12);
  const std::vector<float> var = testing::random_values(shape[1], 13, 0.2f, 3.0f);
  c.write(cpu_bn.running_mean(), mean);
  g.write(gpu_bn.running_mean(), mean);
  c.write(cpu_bn.running_var(), var);
  g.write(gpu_bn.running_var(), var);
  c.poison(c.output);
  g.poison(g.output);
  c.forward(Phase::kInference);
  g.forward(Phase::kInference);
  testing::expect_close(g.read(g.output), c.read(c.output), 1e-5, "inference output of " + shape.str());
}

TEST(BatchNorm2d, CudaMatchesCpuInInference) {
  GLASSBOX_REQUIRE_CUDA();
  expect_cuda_inference_matches_cpu(Shape{4, 8, 5, 5});
  expect_cuda_inference_matches_cpu(Shape{kCudnnInferenceBatchLimit + 70, 2, 1, 3});
}

TEST(BatchNorm2d, CudaRunningStatisticsMatchCpu) {
  GLASSBOX_REQUIRE_CUDA();
  const Shape shape{6, 8, 5, 3};
  Context cpu = Context::cpu(), gpu = Context::cuda(0);
  BatchNorm2d cpu_bn("bn", {.momentum = 0.25f}), gpu_bn("bn", {.momentum = 0.25f});
  testing::LayerHarness c(cpu, cpu_bn, {shape});
  testing::LayerHarness g(gpu, gpu_bn, {shape});
  EXPECT_EQ(g.read(gpu_bn.running_var()), std::vector<float>(8, 1.0f));
  for (uint64_t step = 0; step < 2; ++step) {
    c.randomize(20 + step);
    g.copy_values_from(c);
    c.forward(Phase::kTraining);
    g.forward(Phase::kTraining);
  }
  testing::expect_close(g.read(gpu_bn.running_mean()), c.read(cpu_bn.running_mean()), 1e-5, "running mean");
  testing::expect_close(g.read(gpu_bn.running_var()), c.read(cpu_bn.running_var()), 1e-5, "running variance");
}

}  // namespace
}  // namespace glassbox
