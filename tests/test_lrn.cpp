// tests/test_lrn.cpp
#include <gtest/gtest.h>

#include <cmath>

#include "layers/lrn.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

using Options = LocalResponseNorm::Options;

std::function<std::unique_ptr<Layer>()> make_lrn(Options options) {
  return [=] { return std::make_unique<LocalResponseNorm>("lrn", options); };
}

// The header's formula in double precision, straight from its definition.
std::vector<float> reference(const std::vector<float>& x, const Shape& shape, const Options& o) {
  const int64_t n = shape[0], c = shape[1], hw = shape[2] * shape[3];
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < hw; ++p) {
        double sum = 0.0;
        for (int64_t j = ch - o.size / 2; j <= ch + o.size / 2; ++j) {
          if (j < 0 || j >= c) continue;
          const double v = x[static_cast<size_t>((i * c + j) * hw + p)];
          sum += v * v;
        }
        const double s = o.k + static_cast<double>(o.alpha) / o.size * sum;
        const size_t at = static_cast<size_t>((i * c + ch) * hw + p);
        y[at] = static_cast<float>(x[at] * std::pow(s, -static_cast<double>(o.beta)));
      }
    }
  }
  return y;
}

std::string construct_error(Options options) {
  try {
    LocalResponseNorm lrn("norm1", options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LocalResponseNorm, OneByThreeByHand) {
  Context ctx = Context::cpu();
  // alpha / size = 1: s = 1 + the sum of squares over the window.
  LocalResponseNorm lrn("lrn", {.size = 3, .alpha = 3.0f, .beta = 1.0f, .k = 1.0f});
  testing::LayerHarness h(ctx, lrn, {Shape{1, 3, 1, 1}});
  h.write(h.inputs[0], {1.0f, 2.0f, 3.0f});
  h.forward();
  // s = 1 + (1 + 4), 1 + (1 + 4 + 9), 1 + (4 + 9): the window stops at the first and last channel.
  testing::expect_close(h.read(h.output), {1.0f / 6.0f, 2.0f / 15.0f, 3.0f / 14.0f}, 1e-7, "LRN forward");

  // beta 0.75 (its own code path) and a window wider than the channels.
  LocalResponseNorm wide("lrn", {.size = 5, .alpha = 1.0f, .beta = 0.75f, .k = 2.0f});
  testing::LayerHarness w(ctx, wide, {Shape{1, 3, 1, 1}});
  w.write(w.inputs[0], {1.0f, 2.0f, 3.0f});
  w.forward();
  const double s = 2.0 + 14.0 / 5.0;  // every window holds all three channels
  const float f = static_cast<float>(std::pow(s, -0.75));
  testing::expect_close(w.read(w.output), {f, 2 * f, 3 * f}, 1e-7, "LRN forward, beta 0.75");
}

TEST(LocalResponseNorm, MatchesTheFormulaAcrossBlocksAndLongChannelRuns) {
  Context ctx = Context::cpu();
  const Options cases[] = {{.size = 5, .alpha = 1e-4f, .beta = 0.75f, .k = 2.0f},
                           {.size = 15, .alpha = 2.0f, .beta = 0.6f, .k = 1.0f},
                           {.size = 1, .alpha = 0.5f, .beta = 1.5f, .k = 0.5f}};
  const Shape shape{2, 20, 13, 11};  // 143 positions: two spatial blocks; 20 channels > the ring
  for (const Options& o : cases) {
    LocalResponseNorm lrn("lrn", o);
    testing::LayerHarness h(ctx, lrn, {shape});
    h.randomize(3);
    h.forward();
    testing::expect_close(h.read(h.output), reference(h.read(h.inputs[0]), shape, o), 1e-6,
                          "LRN forward, size " + std::to_string(o.size));
  }
}

TEST(LocalResponseNorm, Describes) {
  EXPECT_EQ(LocalResponseNorm("norm1", {}).describe(), "size 5, alpha 0.0001, beta 0.75, k 2");
}

TEST(LocalResponseNorm, RejectsWhatCudnnRejects) {
  EXPECT_EQ(construct_error({.size = 4}), "norm1 (LocalResponseNorm): size must be odd (a centred window), got 4");
  EXPECT_EQ(construct_error({.size = 17}),
            "norm1 (LocalResponseNorm): size must be between 1 and 16 (cuDNN's limits), got 17");
  EXPECT_EQ(construct_error({.size = 0}),
            "norm1 (LocalResponseNorm): size must be between 1 and 16 (cuDNN's limits), got 0");
  EXPECT_EQ(construct_error({.k = 0.0f}),
            "norm1 (LocalResponseNorm): k must be at least 1e-05 (cuDNN's minimum) and finite, got 0");
  EXPECT_EQ(construct_error({.beta = 0.0f}),
            "norm1 (LocalResponseNorm): beta must be at least 0.01 (cuDNN's minimum) and finite, got 0");
  EXPECT_EQ(construct_error({.alpha = -1.0f}),
            "norm1 (LocalResponseNorm): alpha must be finite and not negative, got -1");
  EXPECT_EQ(construct_error({.size = 15, .alpha = 0.0f, .beta = 0.01f + 1e-6f, .k = 1e-4f}), "(no error)");

  LocalResponseNorm lrn("norm1", {});
  try {
    lrn.bind(std::vector<Shape>{Shape{2, 96, 55}});
    FAIL() << "accepted a rank-3 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "norm1 (LocalResponseNorm): input 0 must be (N, C, H, W), got shape (2, 96, 55)");
  }
}

// alpha large enough that the cross-channel term of the gradient is not lost
// in the tolerance (with AlexNet's 1e-4 it would be).
TEST(LocalResponseNorm, GradientsMatchFiniteDifferences) {
  testing::check_gradients(make_lrn({.size = 5, .alpha = 2.0f, .beta = 0.75f, .k = 1.0f}), {Shape{2, 7, 3, 5}});
  testing::check_gradients(make_lrn({.size = 3, .alpha = 1.5f, .beta = 0.6f, .k = 0.5f}), {Shape{1, 4, 12, 12}},
                           {.max_elements = 96});
  testing::check_gradients(make_lrn({.size = 15, .alpha = 4.0f, .beta = 1.0f, .k = 1.0f}), {Shape{1, 20, 2, 2}},
                           {.max_elements = 80});
  testing::check_gradients(make_lrn({.size = 1, .alpha = 1.0f, .beta = 2.0f, .k = 1.0f}), {Shape{2, 3, 2, 2}});
}

TEST(LocalResponseNorm, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(make_lrn({}), {Shape{4, 16, 13, 13}});
  testing::check_cpu_cuda_parity(make_lrn({.size = 5, .alpha = 2.0f, .beta = 0.75f, .k = 1.0f}),
                                 {Shape{2, 20, 9, 15}});
  testing::check_cpu_cuda_parity(make_lrn({.size = 3, .alpha = 1.0f, .beta = 0.6f, .k = 0.5f}),
                                 {Shape{2, 6, 5, 5}});
}

}  // namespace
}  // namespace glassbox
