// tests/test_conv2d_cpu_paths.cpp: Conv2d's CPU paths (layers/conv2d/conv2d.h): which
// one a layer takes, and oneDNN's (layers/conv2d/conv2d_onednn.h) against Glassbox's
// own im2col + GEMM, the plain reference, on every option Conv2d has: stride,
// padding, rectangular kernels, dilation, groups, bias; dx written and added,
// dW accumulated; the inference plan. tests/test_conv2d.cpp's exact values and
// gradient checks run on whichever path kAuto picks.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "layers/conv2d/conv2d.h"
#include "tests/support/checks.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

using Options = Conv2d::Options;
using CpuPath = Conv2d::CpuPath;

struct Case {
  std::string what;
  Options options;
  Shape x;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"3x3 pad 1", {.out_channels = 16, .kernel = 3, .pad = 1}, Shape{2, 8, 9, 9}},
      {"5x5 stride 2, no bias", {.out_channels = 20, .kernel = 5, .stride = 2, .bias = false}, Shape{3, 3, 17, 15}},
      {"7x7 stride 2 pad 3", {.out_channels = 16, .kernel = 7, .stride = 2, .pad = 3}, Shape{2, 3, 20, 20}},
      {"1x7 pad 0x3", {.out_channels = 12, .kernel = Size2(1, 7), .pad = Size2(0, 3)}, Shape{2, 10, 8, 8}},
      {"3x3 dilation 2", {.out_channels = 8, .kernel = 3, .pad = 2, .dilation = 2}, Shape{2, 6, 10, 10}},
      {"3x3 groups 4", {.out_channels = 16, .kernel = 3, .pad = 1, .groups = 4}, Shape{2, 8, 7, 7}},
      {"3x3 depthwise stride 2", {.out_channels = 8, .kernel = 3, .stride = 2, .pad = 1, .groups = 8},
       Shape{2, 8, 9, 9}},
      {"1x1 stride 2", {.out_channels = 32, .kernel = 1, .stride = 2, .bias = false}, Shape{2, 16, 8, 8}},
      {"3x3, 3 -> 5 channels", {.out_channels = 5, .kernel = 3, .pad = 1}, Shape{3, 3, 6, 6}},
  };
  return all;
}

// ---- Which path ------------------------------------------------------------------------

std::string prepared_path(Options options, Shape x, PrepareOptions prepare = {}, CpuPath pin = CpuPath::kAuto) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", options);
  conv.pin_cpu_path(pin);
  conv.bind(std::vector<Shape>{x});
  conv.prepare(ctx, prepare);
  return conv.algorithms();
}

TEST(Conv2dCpuPaths, AutoTakesOneDnnAbove1x1AndGlassboxsOwnPathsElsewhere) {
  const std::string three = prepared_path({.out_channels = 8, .kernel = 3, .pad = 1}, Shape{2, 4, 8, 8});
  if (GLASSBOX_WITH_ONEDNN) {
    EXPECT_TRUE(three.starts_with("oneDNN fwd ")) << three;
    EXPECT_NE(three.find(", bwd-data "), std::string::npos) << three;
    EXPECT_NE(three.find(", bwd-filter "), std::string::npos) << three;
  } else {
    EXPECT_EQ(three, "Glassbox im2col + GEMM");
  }
  // Pointwise: the forward on oneDNN's GEMM in place, the backward on Glassbox's
  // (Note [Pointwise forward on oneDNN's GEMM]); a strided 1x1 layer stays Glassbox's.
  const std::string pointwise = prepared_path({.out_channels = 8, .kernel = 1}, Shape{2, 4, 8, 8});
  if (GLASSBOX_WITH_ONEDNN) {
    EXPECT_TRUE(pointwise.starts_with("oneDNN fwd ")) << pointwise;
    EXPECT_TRUE(pointwise.ends_with("; backward: Glassbox 1x1 GEMM")) << pointwise;
    EXPECT_EQ(prepared_path({.out_channels = 8, .kernel = 1}, Shape{2, 4, 8, 8}, {.phase = Phase::kInference}),
              pointwise.substr(0, pointwise.find(';')));
  } else {
    EXPECT_EQ(pointwise, "Glassbox 1x1 GEMM");
  }
  EXPECT_EQ(prepared_path({.out_channels = 8, .kernel = 1, .stride = 2}, Shape{2, 4, 8, 8}), "Glassbox im2col + GEMM");
  EXPECT_EQ(prepared_path({.out_channels = 4, .kernel = 3, .pad = 1, .groups = 4}, Shape{2, 4, 8, 8}),
            "Glassbox depthwise taps");
  // PrepareOptions::cpu_conv asks for a path; a layer's pin wins over it.
  const PrepareOptions own{.cpu_conv = CpuPath::kGlassbox};
  EXPECT_EQ(prepared_path({.out_channels = 8, .kernel = 3, .pad = 1}, Shape{2, 4, 8, 8}, own),
            "Glassbox im2col + GEMM");
  if (GLASSBOX_WITH_ONEDNN) {
    const std::string pinned =
        prepared_path({.out_channels = 8, .kernel = 1}, Shape{2, 4, 8, 8}, own, CpuPath::kOneDnn);
    EXPECT_TRUE(pinned.starts_with("oneDNN fwd ")) << pinned;
  }
}

TEST(Conv2dCpuPaths, InferencePlansOnlyTheForwardPass) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  const std::string line = prepared_path({.out_channels = 8, .kernel = 3, .pad = 1}, Shape{2, 4, 8, 8},
                                         {.phase = Phase::kInference});
  EXPECT_TRUE(line.starts_with("oneDNN fwd ")) << line;
  EXPECT_EQ(line.find("bwd"), std::string::npos) << line;
}

// Note [One forward kernel for both phases]: a training plan and an
// inference plan run the same forward kernel, jit's with fewer than 16 input
// channels, brgconv's from 16 (Debian's oneDNN 2.6 on an AVX-512 machine: on
// another the names differ, the sameness holds).
TEST(Conv2dCpuPaths, TheForwardRunsOneKernelInBothPhases) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  const Options options{.out_channels = 16, .kernel = 3, .pad = 1};
  for (const Shape& x : {Shape{2, 3, 12, 12}, Shape{2, 32, 12, 12}}) {
    const std::string training = prepared_path(options, x);
    const std::string inference = prepared_path(options, x, {.phase = Phase::kInference});
    const std::string forward = training.substr(0, training.find(','));  // "oneDNN fwd jit:avx512_core"
    EXPECT_TRUE(forward.starts_with("oneDNN fwd ")) << training;
    EXPECT_TRUE(inference.starts_with(forward)) << inference << " against " << training;
  }
}

TEST(Conv2dCpuPaths, OneDnnInABuildWithoutItIsAConfigErrorNamingTheFlag) {
  if (GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built with oneDNN: the pin is honoured (the parity tests below)";
  try {
    prepared_path({.out_channels = 8, .kernel = 3}, Shape{1, 4, 8, 8}, {}, CpuPath::kOneDnn);
    ADD_FAILURE() << "prepare took a oneDNN pin in a build without oneDNN";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("conv (Conv2d): asked for oneDNN's CPU path, but Glassbox was built "
                                         "without oneDNN (-DGLASSBOX_CPU_CONV=im2col)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Conv2dCpuPaths, PathNamesParseAndOthersAreConfigErrors) {
  EXPECT_EQ(parse_cpu_conv_path("auto"), CpuPath::kAuto);
  EXPECT_EQ(parse_cpu_conv_path("glassbox"), CpuPath::kGlassbox);
  EXPECT_EQ(parse_cpu_conv_path("onednn"), CpuPath::kOneDnn);
  for (CpuPath path : {CpuPath::kAuto, CpuPath::kGlassbox, CpuPath::kOneDnn}) {
    EXPECT_EQ(parse_cpu_conv_path(name_of(path)), path);
  }
  try {
    parse_cpu_conv_path("mkldnn");
    ADD_FAILURE() << "parsed 'mkldnn'";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "unknown CPU convolution path 'mkldnn'; valid: auto, glassbox, onednn");
  }
}

// ---- oneDNN against the reference -----------------------------------------------------

Conv2d& pinned(Conv2d& conv, CpuPath path) {
  conv.pin_cpu_path(path);
  return conv;
}

// The case on one path, every value from the same seeds.
struct PathRun {
  Conv2d conv;
  testing::LayerHarness h;
  PathRun(Context& ctx, const Case& c, CpuPath path) : conv("conv", c.options), h(ctx, pinned(conv, path), {c.x}) {
    h.randomize(11);
  }
};

class OneDnnMatchesGlassbox : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  }
};

// Products summed in another order: a few float ulps of the sums' magnitude.
constexpr double kTolerance = 1e-5;

// `candidate` (the case on some path) against the reference: the forward, dx
// written and added, and dW (and db) accumulated over two backward passes.
void expect_agrees_with_reference(Context& ctx, const Case& c, PathRun& candidate) {
  PathRun reference(ctx, c, CpuPath::kGlassbox);
  ASSERT_EQ(reference.conv.cpu_path(), CpuPath::kGlassbox);
  candidate.h.poison(candidate.h.output);
  reference.h.forward();
  candidate.h.forward();
  testing::expect_close(candidate.h.read(candidate.h.output), reference.h.read(reference.h.output), kTolerance,
                        c.what + ": y");

  // dx written (over NaN: every element must be written) ...
  candidate.h.poison(candidate.h.input_grads[0]);
  reference.h.backward();
  candidate.h.backward();
  testing::expect_close(candidate.h.read(candidate.h.input_grads[0]), reference.h.read(reference.h.input_grads[0]),
                        kTolerance, c.what + ": dx written");
  // ... then added, and dW (and db) accumulated over the two backward passes.
  reference.h.backward({GradMode::kAdd});
  candidate.h.backward({GradMode::kAdd});
  testing::expect_close(candidate.h.read(candidate.h.input_grads[0]), reference.h.read(reference.h.input_grads[0]),
                        kTolerance, c.what + ": dx added");
  for (size_t i = 0; i < reference.h.param_grads.size(); ++i) {
    testing::expect_close(candidate.h.read(candidate.h.param_grads[i]), reference.h.read(reference.h.param_grads[i]),
                          kTolerance, c.what + ": parameter gradient " + std::to_string(i) + ", accumulated twice");
  }
}

TEST_P(OneDnnMatchesGlassbox, ForwardAndBothGradientsInBothModes) {
  const Case& c = cases()[GetParam()];
  Context ctx = Context::cpu();
  PathRun onednn(ctx, c, CpuPath::kOneDnn);
  ASSERT_EQ(onednn.conv.cpu_path(), CpuPath::kOneDnn) << onednn.conv.algorithms();
  ASSERT_EQ(onednn.conv.cpu_backward_path(), CpuPath::kOneDnn) << onednn.conv.algorithms();
  expect_agrees_with_reference(ctx, c, onednn);
}

// kAuto on pointwise layers: the forward on oneDNN's GEMM in Glassbox's
// layout, the backward on Glassbox's own 1x1 GEMM.
TEST(Conv2dCpuPaths, PointwiseForwardOnOneDnnMatchesTheReference) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  const std::vector<Case> pointwise = {
      {"1x1, 8 -> 24, bias", {.out_channels = 24, .kernel = 1}, Shape{2, 8, 9, 11}},
      {"1x1, 5 -> 3, no bias", {.out_channels = 3, .kernel = 1, .bias = false}, Shape{3, 5, 4, 7}},
      {"1x1, 32 -> 16 groups 2", {.out_channels = 16, .kernel = 1, .groups = 2, .bias = false}, Shape{2, 32, 6, 6}},
  };
  for (const Case& c : pointwise) {
    Context ctx = Context::cpu();
    PathRun automatic(ctx, c, CpuPath::kAuto);
    ASSERT_EQ(automatic.conv.cpu_path(), CpuPath::kOneDnn) << c.what << ": " << automatic.conv.algorithms();
    ASSERT_EQ(automatic.conv.cpu_backward_path(), CpuPath::kGlassbox) << c.what;
    expect_agrees_with_reference(ctx, c, automatic);
  }
}

// Note [Convolutions by slices of the batch]: a batch larger than the cache
// runs slice by slice, each slice's x, y, dx and dy at its own offset and dW
// summed over the slices; a layer with large weights runs whole.
TEST(Conv2dCpuPaths, OneDnnBySlicesOfTheBatchMatchesTheReference) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  const std::vector<std::pair<Case, std::string>> sliced = {
      {{"3x3 pad 1, 6 images of 0.66 MB", {.out_channels = 16, .kernel = 3, .pad = 1}, Shape{6, 16, 72, 72}},
       "; in 2 slices of 3 images"},
      {{"3x3 stride 2, 5 images of 1.2 MB", {.out_channels = 16, .kernel = 3, .stride = 2, .pad = 1, .bias = false},
        Shape{5, 8, 160, 160}},
       "; in 5 slices of 1 image"},
      {{"3x3 256 -> 256, weights larger than the saving", {.out_channels = 256, .kernel = 3, .pad = 1},
        Shape{4, 256, 24, 24}},
       ""},
  };
  for (const auto& [c, slices] : sliced) {
    Context ctx = Context::cpu();
    PathRun onednn(ctx, c, CpuPath::kOneDnn);
    const std::string algorithms = onednn.conv.algorithms();
    if (slices.empty()) {
      EXPECT_EQ(algorithms.find("slices"), std::string::npos) << c.what << ": " << algorithms;
    } else {
      EXPECT_TRUE(algorithms.ends_with(slices)) << c.what << ": " << algorithms;
    }
    expect_agrees_with_reference(ctx, c, onednn);
  }
}

TEST_P(OneDnnMatchesGlassbox, InferenceForward) {
  const Case& c = cases()[GetParam()];
  Context ctx = Context::cpu();
  PathRun reference(ctx, c, CpuPath::kGlassbox), onednn(ctx, c, CpuPath::kOneDnn);
  onednn.conv.prepare(ctx, {.phase = Phase::kInference});
  ctx.reserve_workspace(onednn.conv.workspace_bytes());
  onednn.h.poison(onednn.h.output);
  reference.h.forward(Phase::kInference);
  onednn.h.forward(Phase::kInference);
  testing::expect_close(onednn.h.read(onednn.h.output), reference.h.read(reference.h.output), kTolerance,
                        c.what + ": y (inference)");
}

TEST_P(OneDnnMatchesGlassbox, GradientsMatchFiniteDifferences) {
  const Case& c = cases()[GetParam()];
  testing::check_gradients(
      [&] {
        auto conv = std::make_unique<Conv2d>("conv", c.options);
        conv->pin_cpu_path(CpuPath::kOneDnn);
        return conv;
      },
      {c.x});
}

INSTANTIATE_TEST_SUITE_P(Cases, OneDnnMatchesGlassbox, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string name;
                           for (char ch : cases()[info.param].what) name += std::isalnum(ch) ? ch : '_';
                           return name;
                         });

}  // namespace
}  // namespace glassbox
