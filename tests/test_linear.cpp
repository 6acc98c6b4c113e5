// tests/test_linear.cpp
#include <gtest/gtest.h>

#include "layers/linear.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

TEST(Linear, ForwardIsXWTransposePlusBias) {
  Context ctx = Context::cpu();
  Linear fc("fc", {.out_features = 2});
  testing::LayerHarness h(ctx, fc, {Shape{1, 3}});
  h.write(h.inputs[0], {1.0f, 2.0f, 3.0f});
  h.write(h.params[0], {1.0f, 0.0f, -1.0f,   // row 0
                        0.5f, 0.5f, 0.5f});  // row 1
  h.write(h.params[1], {10.0f, 20.0f});
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{8.0f, 23.0f}));
}

TEST(Linear, CountsParametersAndMacs) {
  Linear fc("fc6", {.out_features = 4096});
  fc.bind(std::vector<Shape>{Shape{64, 25088}});
  const auto specs = fc.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, (Shape{4096, 25088}));
  EXPECT_EQ(specs[1].shape, (Shape{4096}));
  EXPECT_EQ(fc.macs(), int64_t{64} * 25088 * 4096);
  EXPECT_EQ(fc.describe(), "25088 -> 4096");
}

TEST(Linear, RejectsUnflattenedInput) {
  Linear fc("fc6", {.out_features = 10});
  try {
    fc.bind(std::vector<Shape>{Shape{2, 512, 7, 7}});
    FAIL() << "accepted a rank-4 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "fc6 (Linear): expects (N, features) input, got (2, 512, 7, 7); flatten it first");
  }
}

TEST(Linear, RejectsNonPositiveWidth) {
  try {
    Linear("fc", {.out_features = 0});
    FAIL() << "a linear layer of width 0";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "fc (Linear): out_features must be positive, got 0");
  }
}

TEST(Linear, GradientsMatchFiniteDifferences) {
  testing::check_gradients([] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 5}); },
                           {Shape{3, 7}});
}

TEST(Linear, GradientsWithoutBias) {
  testing::check_gradients(
      [] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 4, .bias = false}); },
      {Shape{2, 6}});
}

// Wide enough that forward, dx and dw are split into several feature blocks.
TEST(Linear, GradientsAcrossFeatureBlocks) {
  testing::check_gradients(
      [] { return std::make_unique<Linear>("fc6", Linear::Options{.out_features = 150}); }, {Shape{3, 900}});
}

TEST(Linear, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(
      [] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 33}); }, {Shape{16, 70}});
}

}  // namespace
}  // namespace glassbox
