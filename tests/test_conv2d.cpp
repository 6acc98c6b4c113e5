// tests/test_conv2d.cpp
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>

#include "layers/conv2d/conv2d.h"
#include "tensor/error.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

using Options = Conv2d::Options;

std::unique_ptr<Conv2d> make_conv(Options options) { return std::make_unique<Conv2d>("conv", options); }

// ---- Exact values ----------------------------------------------------------------------

// x = [[1 2 3] [4 5 6] [7 8 9]]: one image, one channel.
const std::vector<float> kImage = {1, 2, 3, 4, 5, 6, 7, 8, 9};

TEST(Conv2d, ForwardIsCrossCorrelationPlusBias) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", {.out_channels = 1, .kernel = 2});
  testing::LayerHarness h(ctx, conv, {Shape{1, 1, 3, 3}});
  h.write(h.inputs[0], kImage);
  h.write(h.params[0], {1, 2, 3, 4});
  h.write(h.params[1], {0.5f});
  h.forward();
  // y[0,0] = 1*1 + 2*2 + 3*4 + 4*5 = 37, and so on, plus 0.5 (not flipped: cross-correlation).
  EXPECT_EQ(h.read(h.output), (std::vector<float>{37.5f, 47.5f, 67.5f, 77.5f}));
}

TEST(Conv2d, ForwardWithStrideAndPaddingSumsTheWindowInside) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", {.out_channels = 1, .kernel = 3, .stride = 2, .pad = 1, .bias = false});
  testing::LayerHarness h(ctx, conv, {Shape{1, 1, 3, 3}});
  h.write(h.inputs[0], kImage);
  h.write(h.params[0], std::vector<float>(9, 1.0f));
  h.forward();
  // Windows centred on the corners: 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9.
  EXPECT_EQ(h.read(h.output), (std::vector<float>{12, 16, 24, 28}));
}

TEST(Conv2d, ForwardWithDilationSkipsBetweenTaps) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", {.out_channels = 1, .kernel = 2, .dilation = 2, .bias = false});
  testing::LayerHarness h(ctx, conv, {Shape{1, 1, 3, 3}});
  h.write(h.inputs[0], kImage);
  h.write(h.params[0], {1, 10, 100, 1000});
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{1 * 1 + 3 * 10 + 7 * 100 + 9 * 1000}));
}

TEST(Conv2d, GroupsSeeOnlyTheirOwnChannels) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", {.out_channels = 2, .kernel = 1, .groups = 2, .bias = false});
  testing::LayerHarness h(ctx, conv, {Shape{1, 2, 1, 2}});
  h.write(h.inputs[0], {1, 2, 3, 4});  // channel 0: (1, 2), channel 1: (3, 4)
  h.write(h.params[0], {10, 100});
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{10, 20, 300, 400}));
}

TEST(Conv2d, BackwardByHand) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", {.out_channels = 1, .kernel = 2});
  testing::LayerHarness h(ctx, conv, {Shape{1, 1, 3, 3}});
  h.write(h.inputs[0], kImage);
  h.write(h.params[0], {1, 2, 3, 4});
  h.write(h.params[1], {0});
  h.write(h.output_grad, {1, 0, 0, 1});  // dy at (0,0) and (1,1)
  h.forward();
  h.backward();
  // dx: w placed at (0,0) plus w placed at (1,1).
  EXPECT_EQ(h.read(h.input_grads[0]), (std::vector<float>{1, 2, 0, 3, 4 + 1, 2, 0, 3, 4}));
  // dw[r,s] = x[r,s] + x[r+1,s+1]; db = 2.
  EXPECT_EQ(h.read(h.param_grads[0]), (std::vector<float>{1 + 5, 2 + 6, 4 + 8, 5 + 9}));
  EXPECT_EQ(h.read(h.param_grads[1]), (std::vector<float>{2}));
}

// ---- Configurations: gradient checks and CPU-vs-CUDA parity --------------------------------

struct Case {
  std::string name;
  Options options;
  Shape input;
};

std::ostream& operator<<(std::ostream& out, const Case& c) { return out << c.name; }

// Output tiles are at most 512 pixels, split evenly over an image: "tiles" has
// 31*37 = 1147 pixels, three tiles of 383/383/381 that start mid-row; the
// strided one has 31*30 = 930 pixels in two tiles of 465 (15.5 rows).
const std::vector<Case> kCases = {
    {"k3_pad1", {.out_channels = 4, .kernel = 3, .pad = 1}, Shape{2, 3, 6, 5}},
    {"k3_stride2_pad1", {.out_channels = 4, .kernel = 3, .stride = 2, .pad = 1}, Shape{2, 3, 7, 8}},
    {"k3_dilation2", {.out_channels = 3, .kernel = 3, .pad = 2, .dilation = 2}, Shape{1, 2, 7, 7}},
    {"groups2", {.out_channels = 6, .kernel = 3, .pad = 1, .groups = 2}, Shape{2, 4, 5, 5}},
    {"depthwise", {.out_channels = 8, .kernel = 3, .pad = 1, .groups = 4}, Shape{2, 4, 6, 6}},
    {"k1x3", {.out_channels = 3, .kernel = {1, 3}, .pad = {0, 1}}, Shape{2, 3, 4, 6}},
    {"k3x1_stride1x2", {.out_channels = 3, .kernel = {3, 1}, .stride = {1, 2}, .pad = {1, 0}}, Shape{2, 3, 5, 7}},
    {"no_bias", {.out_channels = 5, .kernel = 3, .pad = 1, .bias = false}, Shape{2, 2, 4, 4}},
    {"pointwise", {.out_channels = 4, .kernel = 1}, Shape{2, 6, 5, 7}},
    {"k1_stride2", {.out_channels = 4, .kernel = 1, .stride = 2}, Shape{2, 3, 5, 7}},
    {"k2_pad2_stride3", {.out_channels = 3, .kernel = 2, .stride = 3, .pad = 2}, Shape{1, 2, 7, 8}},
    {"mixed",  // everything rectangular and non-trivial at once
     {.out_channels = 4, .kernel = {3, 2}, .stride = {2, 1}, .pad = {2, 1}, .dilation = {2, 3}, .groups = 2},
     Shape{2, 4, 9, 10}},
    {"tiles", {.out_channels = 3, .kernel = 3, .pad = 1}, Shape{3, 2, 31, 37}},
    {"tiles_stride2", {.out_channels = 3, .kernel = 3, .stride = 2, .pad = 1}, Shape{3, 2, 61, 59}},
};

const Case& case_named(std::string_view name) {
  return *std::find_if(kCases.begin(), kCases.end(), [&](const Case& c) { return c.name == name; });
}

class Conv2dCases : public ::testing::TestWithParam<Case> {};

TEST_P(Conv2dCases, GradientsMatchFiniteDifferences) {
  const Case& c = GetParam();
  testing::check_gradients([&] { return make_conv(c.options); }, {c.input});
}

TEST_P(Conv2dCases, CudaMatchesCpu) {
  const Case& c = GetParam();
  testing::check_cpu_cuda_parity([&] { return make_conv(c.options); }, {c.input});
}

INSTANTIATE_TEST_SUITE_P(Configs, Conv2dCases, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// ---- CPU partitioning ----------------------------------------------------------------------

// Everything a forward and backward produce, for comparisons.
struct Results {
  std::vector<float> y, dx, dw, db;
};

Results run_cpu(const Options& options, const Shape& input, int threads, bool want_dx = true,
                Conv2d::CpuPath path = Conv2d::CpuPath::kAuto) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);  // the layer sizes its per-thread buffers at prepare
  Context ctx = Context::cpu();
  Conv2d conv("conv", options);
  conv.pin_cpu_path(path);
  testing::LayerHarness h(ctx, conv, {input});
  h.randomize(3);
  if (!want_dx) h.input_grads[0] = Tensor();
  h.forward();
  h.backward();
  omp_set_num_threads(saved);
  return {h.read(h.output), want_dx ? h.read(h.input_grads[0]) : std::vector<float>{},
          h.read(h.param_grads[0]), options.bias ? h.read(h.param_grads[1]) : std::vector<float>{}};
}

TEST(Conv2d, ThreadCountDoesNotChangeResults) {
  // Three threads on uneven work: Glassbox's own path (partial weight gradients
  // over group ranges, channel blocks in backward-data), pinned, since the
  // automatic choice gives most of these shapes to oneDNN where the build has it;
  // then the automatic choice.
  for (const Conv2d::CpuPath path : {Conv2d::CpuPath::kGlassbox, Conv2d::CpuPath::kAuto}) {
    for (std::string_view name : {"groups2", "depthwise", "pointwise", "mixed", "tiles_stride2"}) {
      const Case& c = case_named(name);
      const std::string what = c.name + (path == Conv2d::CpuPath::kGlassbox ? " (Glassbox's path)" : " (auto)");
      const Results one = run_cpu(c.options, c.input, 1, true, path);
      const Results three = run_cpu(c.options, c.input, 3, true, path);
      testing::expect_close(three.y, one.y, 1e-5, what + ": output");
      testing::expect_close(three.dx, one.dx, 1e-5, what + ": dx");
      testing::expect_close(three.dw, one.dw, 1e-5, what + ": dw");
      testing::expect_close(three.db, one.db, 1e-5, what + ": db");
    }
  }
}

TEST(Conv2d, SkipsInputGradientWhenNotWanted) {
  const Case& c = case_named("k3_stride2_pad1");
  const Results full = run_cpu(c.options, c.input, 2);
  const Results no_dx = run_cpu(c.options, c.input, 2, /*want_dx=*/false);
  testing::expect_close(no_dx.dw, full.dw, 1e-6, "dw without dx");
  testing::expect_close(no_dx.db, full.db, 1e-6, "db without dx");
}

TEST(Conv2d, WorkspaceIsCheckedAtRunTime) {
  Context ctx = Context::cpu();
  Conv2d conv("conv1", {.out_channels = 4, .kernel = 3, .pad = 1});
  conv.bind(std::vector<Shape>{Shape{1, 3, 8, 8}});
  conv.prepare(ctx);
  ASSERT_GT(conv.workspace_bytes(), 0u);
  Tensor x = ctx.allocate(Shape{1, 3, 8, 8}, DType::kFloat32, MemoryCategory::kData);
  Tensor y = ctx.allocate(conv.output_shape(), DType::kFloat32, MemoryCategory::kActivations);
  Tensor w = ctx.allocate(Shape{4, 3, 3, 3}, DType::kFloat32, MemoryCategory::kParameters);
  Tensor b = ctx.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kParameters);
  const std::vector<Tensor> inputs = {x}, params = {w, b};
  try {
    conv.forward(ctx, {.inputs = inputs, .output = y, .params = params});
    FAIL() << "ran without its workspace";
  } catch (const Error& e) {
    const std::string needed = format_bytes(static_cast<int64_t>(conv.workspace_bytes()));
    EXPECT_EQ(std::string(e.what()), "conv1 (Conv2d): needs " + needed +
                                         " of workspace, the context has 0 B (reserve workspace_bytes() after prepare)");
  }
}

// ---- Shapes, options, reports -------------------------------------------------------------

std::string bind_error(Options options, Shape input) {
  try {
    Conv2d conv("conv3_1", options);
    conv.bind(std::vector<Shape>{input});
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Conv2d, RejectsBadInputShapes) {
  EXPECT_EQ(bind_error({.out_channels = 8}, Shape{2, 3, 4}),
            "conv3_1 (Conv2d): input 0 must be (N, C, H, W), got shape (2, 3, 4)");
  EXPECT_EQ(bind_error({.out_channels = 8, .groups = 4}, Shape{2, 6, 8, 8}),
            "conv3_1 (Conv2d): input has 6 channels, not divisible by groups 4");
  EXPECT_EQ(bind_error({.out_channels = 8, .kernel = 5, .pad = 1}, Shape{2, 3, 2, 9}),
            "conv3_1 (Conv2d): kernel 5x5 does not fit the padded input 4x11 (input 2x9, pad 1)");
  EXPECT_EQ(bind_error({.out_channels = 8, .kernel = {3, 2}, .dilation = 4}, Shape{2, 3, 8, 8}),
            "conv3_1 (Conv2d): kernel 3x2 (dilated to 9x5) does not fit the padded input 8x8 (input 8x8, pad 0)");
}

TEST(Conv2d, RejectsBadOptions) {
  auto error = [](Options options) {
    try {
      Conv2d conv("conv3_1", options);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({.out_channels = 0}), "conv3_1 (Conv2d): out_channels must be positive, got 0");
  EXPECT_EQ(error({.out_channels = 6, .groups = 4}), "conv3_1 (Conv2d): out_channels 6 is not divisible by groups 4");
  EXPECT_EQ(error({.out_channels = 6, .groups = 0}), "conv3_1 (Conv2d): groups must be positive, got 0");
  EXPECT_EQ(error({.out_channels = 6, .kernel = {0, 3}}), "conv3_1 (Conv2d): kernel must be positive, got 0x3");
  EXPECT_EQ(error({.out_channels = 6, .stride = 0}), "conv3_1 (Conv2d): stride must be positive, got 0x0");
  EXPECT_EQ(error({.out_channels = 6, .dilation = {1, -1}}),
            "conv3_1 (Conv2d): dilation must be positive, got 1x-1");
  EXPECT_EQ(error({.out_channels = 6, .pad = -1}), "conv3_1 (Conv2d): pad must not be negative, got -1x-1");
}

TEST(Conv2d, InfersOutputShapes) {
  auto out = [](Options options, Shape input) {
    Conv2d conv("conv", options);
    return conv.bind(std::vector<Shape>{input});
  };
  EXPECT_EQ(out({.out_channels = 64, .kernel = 3, .pad = 1}, Shape{2, 3, 224, 224}), (Shape{2, 64, 224, 224}));
  EXPECT_EQ(out({.out_channels = 96, .kernel = 11, .stride = 4, .pad = 2}, Shape{1, 3, 224, 224}),
            (Shape{1, 96, 55, 55}));  // AlexNet conv1
  EXPECT_EQ(out({.out_channels = 64, .kernel = 7, .stride = 2, .pad = 3}, Shape{1, 3, 224, 224}),
            (Shape{1, 64, 112, 112}));  // ResNet conv1
  EXPECT_EQ(out({.out_channels = 8, .kernel = {1, 7}, .pad = {0, 3}}, Shape{1, 4, 17, 17}), (Shape{1, 8, 17, 17}));
  EXPECT_EQ(out({.out_channels = 8, .kernel = 3, .pad = 2, .dilation = 2}, Shape{1, 4, 9, 9}), (Shape{1, 8, 9, 9}));
}

TEST(Conv2d, Describes) {
  auto text = [](Options options, int64_t channels) {
    Conv2d conv("conv", options);
    conv.bind(std::vector<Shape>{Shape{1, channels, 32, 32}});
    return conv.describe();
  };
  EXPECT_EQ(text({.out_channels = 128, .kernel = 3, .pad = 1}, 64), "3x3 s1 p1, 64 -> 128");
  EXPECT_EQ(text({.out_channels = 64, .kernel = 3, .pad = 2, .dilation = 2}, 64), "3x3 s1 p2 d2, 64 -> 64");
  EXPECT_EQ(text({.out_channels = 256, .kernel = 3, .pad = 1, .groups = 32}, 256), "3x3 s1 p1 g32, 256 -> 256");
  EXPECT_EQ(text({.out_channels = 64, .kernel = 1, .stride = 2, .bias = false}, 32), "1x1 s2 p0, 32 -> 64, no bias");
  EXPECT_EQ(text({.out_channels = 192, .kernel = {1, 7}, .pad = {0, 3}}, 160), "1x7 s1 p0x3, 160 -> 192");
}

TEST(Conv2d, ParametersAndMacs) {
  Conv2d conv("conv1_1", {.out_channels = 64, .kernel = 3, .pad = 1});
  conv.bind(std::vector<Shape>{Shape{1, 3, 224, 224}});
  const auto specs = conv.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "weight");
  EXPECT_EQ(specs[0].shape, (Shape{64, 3, 3, 3}));
  EXPECT_EQ(specs[0].init, Init::kHeNormal);
  EXPECT_EQ(specs[0].fan_in, 27);
  EXPECT_EQ(specs[1].name, "bias");
  EXPECT_EQ(specs[1].shape, (Shape{64}));
  EXPECT_EQ(specs[1].init, Init::kZeros);
  EXPECT_EQ(conv.macs(), int64_t{86'704'128});  // 64*224*224 outputs x 3*3*3 taps

  Conv2d grouped("conv2", {.out_channels = 256, .kernel = 3, .pad = 1, .groups = 32, .bias = false});
  grouped.bind(std::vector<Shape>{Shape{2, 128, 28, 28}});
  const auto grouped_specs = grouped.param_specs();
  ASSERT_EQ(grouped_specs.size(), 1u);
  EXPECT_EQ(grouped_specs[0].shape, (Shape{256, 4, 3, 3}));
  EXPECT_EQ(grouped_specs[0].fan_in, 36);
  EXPECT_EQ(grouped.macs(), int64_t{2} * 256 * 28 * 28 * 4 * 9);
}

TEST(Conv2d, CpuReadsNoCudnnPinsAndNamesItsOwnPath) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", {.out_channels = 4, .kernel = 3, .pad = 1});
  conv.bind(std::vector<Shape>{Shape{1, 3, 8, 8}});
  conv.pin_algorithms({.forward = 1});  // only CUDA devices read pins
  conv.prepare(ctx);
  // The CPU path taken (tests/test_conv2d_cpu_paths.cpp), never a cuDNN algorithm.
  EXPECT_TRUE(conv.algorithms().starts_with(GLASSBOX_WITH_ONEDNN ? "oneDNN fwd " : "Glassbox im2col + GEMM"))
      << conv.algorithms();
  EXPECT_TRUE(conv.algorithm_candidates(Conv2d::Pass::kForward).empty());
}

// ---- CUDA: algorithm choice -------------------------------------------------------------------

TEST(Conv2dCuda, RecordsItsAlgorithmChoice) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  for (AlgoSearch search : {AlgoSearch::kHeuristic, AlgoSearch::kMeasured}) {
    Conv2d conv("conv", {.out_channels = 16, .kernel = 3, .pad = 1});
    conv.bind(std::vector<Shape>{Shape{2, 8, 12, 12}});
    conv.prepare(ctx, {.algo_search = search});
    const std::string line = conv.algorithms();
    EXPECT_NE(line.find("fwd "), std::string::npos) << line;
    EXPECT_NE(line.find(", bwd-data "), std::string::npos) << line;
    EXPECT_NE(line.find(", bwd-filter "), std::string::npos) << line;
    EXPECT_NE(line.find(search == AlgoSearch::kMeasured ? "measured" : "heuristic"), std::string::npos) << line;
    for (Conv2d::Pass pass : {Conv2d::Pass::kForward, Conv2d::Pass::kBackwardData, Conv2d::Pass::kBackwardFilter}) {
      const auto& list = conv.algorithm_candidates(pass);
      EXPECT_EQ(std::count_if(list.begin(), list.end(), [](const auto& c) { return c.verdict == "chosen"; }), 1)
          << line;
    }
  }
}

// An inference prepare chooses the forward only (PrepareOptions::phase):
// nothing is searched, listed or reserved for the backward passes.
TEST(Conv2dCuda, AnInferencePrepareChoosesTheForwardOnly) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  for (AlgoSearch search : {AlgoSearch::kHeuristic, AlgoSearch::kMeasured}) {
    Conv2d conv("conv", {.out_channels = 16, .kernel = 3, .pad = 1});
    conv.bind(std::vector<Shape>{Shape{2, 8, 12, 12}});
    conv.prepare(ctx, {.algo_search = search, .phase = Phase::kInference});
    const std::string line = conv.algorithms();
    EXPECT_TRUE(line.starts_with("fwd ")) << line;
    EXPECT_EQ(line.find("bwd-"), std::string::npos) << line;
    EXPECT_NE(line.find("; no backward (inference)"), std::string::npos) << line;
    EXPECT_FALSE(conv.algorithm_candidates(Conv2d::Pass::kForward).empty()) << line;
    EXPECT_TRUE(conv.algorithm_candidates(Conv2d::Pass::kBackwardData).empty()) << line;
    EXPECT_TRUE(conv.algorithm_candidates(Conv2d::Pass::kBackwardFilter).empty()) << line;
  }
}

TEST(Conv2dCuda, RejectsAnUnknownPinnedAlgorithm) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  Conv2d conv("conv", {.out_channels = 16, .kernel = 3, .pad = 1});
  conv.bind(std::vector<Shape>{Shape{2, 8, 12, 12}});
  conv.pin_algorithms({.backward_filter = 99});
  try {
    conv.prepare(ctx);
    FAIL() << "accepted algorithm 99";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "conv (Conv2d): pinned backward-filter algorithm 99 (ALGO_99) is not a cuDNN backward-filter "
                 "algorithm");
  }
}

// The reference a choice is checked against: the harness's layer, from
// seed 11, forward and backward: y, dx and dW.
struct ReferenceRun {
  std::vector<float> y, dx, dw;
};
ReferenceRun run_reference(testing::LayerHarness& ref) {
  ref.randomize(11);
  ref.forward();
  ref.backward();
  return {ref.read(ref.output), ref.read(ref.input_grads[0]), ref.read(ref.param_grads[0])};
}

// Every algorithm cuDNN supports for a pass gives the default's answer.
TEST(Conv2dCuda, EveryAlgorithmAgreesWithTheDefault) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  for (std::string_view name : {"k3_pad1", "k3_stride2_pad1", "groups2", "mixed"}) {
    const Case& c = case_named(name);
    Conv2d reference("conv", c.options);
    testing::LayerHarness ref(ctx, reference, {c.input});
    const auto [y, dx, dw] = run_reference(ref);

    for (Conv2d::Pass pass : {Conv2d::Pass::kForward, Conv2d::Pass::kBackwardData, Conv2d::Pass::kBackwardFilter}) {
      for (const Conv2d::AlgorithmCandidate& candidate : reference.algorithm_candidates(pass)) {
        if (!candidate.supported) continue;
        if (kDeterministicByDefault && !candidate.deterministic) continue;  // a pin that prepare() would refuse
        Conv2d::AlgorithmPins pins;
        if (pass == Conv2d::Pass::kForward) pins.forward = candidate.algo;
        if (pass == Conv2d::Pass::kBackwardData) pins.backward_data = candidate.algo;
        if (pass == Conv2d::Pass::kBackwardFilter) pins.backward_filter = candidate.algo;
        Conv2d pinned("conv", c.options);
        pinned.pin_algorithms(pins);
        testing::LayerHarness h(ctx, pinned, {c.input});
        h.copy_values_from(ref);
        h.forward();
        h.backward();
        const std::string what = c.name + " with " + candidate.name + " (" + pinned.algorithms() + ")";
        // FFT and Winograd round differently from the GEMM-based algorithms.
        testing::expect_close(h.read(h.output), y, 1e-4, what + ": output");
        testing::expect_close(h.read(h.input_grads[0]), dx, 1e-4, what + ": dx");
        testing::expect_close(h.read(h.param_grads[0]), dw, 1e-4, what + ": dw");
      }
    }
  }
}

// Note [Engine configurations]: the graph API's choice, from its heuristics
// or timed, gives the legacy default's answer, both where dx is written and
// where it is added to (the plan's twin with beta 1), in each pass.
TEST(Conv2dCuda, TheGraphApisChoiceAgreesWithTheLegacyDefault) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  for (std::string_view name : {"k3_pad1", "k3_stride2_pad1", "groups2", "mixed"}) {
    const Case& c = case_named(name);
    Conv2d reference("conv", c.options);
    testing::LayerHarness ref(ctx, reference, {c.input});
    const auto [y, dx, dw] = run_reference(ref);
    std::vector<float> dx2 = dx, dw2 = dw;
    for (float& v : dx2) v *= 2;
    for (float& v : dw2) v *= 2;

    for (AlgoSearch search : {AlgoSearch::kHeuristic, AlgoSearch::kMeasured}) {
      Conv2d conv("conv", c.options);
      testing::LayerHarness h(ctx, conv, {c.input});
      conv.prepare(ctx, {.algo_search = search, .cudnn_api = CudnnApi::kGraph});
      ctx.reserve_workspace(conv.workspace_bytes());
      const std::string what = cat(c.name, " (", conv.algorithms(), ")");
      for (Conv2d::Pass pass : {Conv2d::Pass::kForward, Conv2d::Pass::kBackwardData, Conv2d::Pass::kBackwardFilter}) {
        const auto& list = conv.algorithm_candidates(pass);
        const auto chosen = std::find_if(list.begin(), list.end(), [](const auto& x) { return x.verdict == "chosen"; });
        ASSERT_NE(chosen, list.end()) << what;
        EXPECT_GE(chosen->engine, 0) << what << ": --cudnn-api graph chose a legacy algorithm";
        EXPECT_TRUE(chosen->name.starts_with("engine ")) << chosen->name;
      }
      h.copy_values_from(ref);
      h.forward();
      h.backward();
      testing::expect_close(h.read(h.output), y, 1e-4, what + ": output");
      testing::expect_close(h.read(h.input_grads[0]), dx, 1e-4, what + ": dx");
      testing::expect_close(h.read(h.param_grads[0]), dw, 1e-4, what + ": dw");
      h.backward({GradMode::kAdd});  // dx += ..., dW += ...
      testing::expect_close(h.read(h.input_grads[0]), dx2, 2e-4, what + ": dx added to");
      testing::expect_close(h.read(h.param_grads[0]), dw2, 2e-4, what + ": dw added to");
    }
  }
}

// The measured search times the legacy algorithms and the engine
// configurations together, on one clock, and takes the fastest that may run.
TEST(Conv2dCuda, TheMeasuredSearchTimesBothApisTogether) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  Conv2d conv("conv", {.out_channels = 16, .kernel = 3, .pad = 1});
  conv.bind(std::vector<Shape>{Shape{4, 16, 16, 16}});
  conv.prepare(ctx, {.algo_search = AlgoSearch::kMeasured, .autotune_cache = ""});
  const std::string line = conv.algorithms();
  EXPECT_NE(line.find("measured (legacy algorithms and graph-API engines)"), std::string::npos) << line;
  for (Conv2d::Pass pass : {Conv2d::Pass::kForward, Conv2d::Pass::kBackwardData, Conv2d::Pass::kBackwardFilter}) {
    const auto& list = conv.algorithm_candidates(pass);
    EXPECT_TRUE(std::any_of(list.begin(), list.end(), [](const auto& c) { return c.engine >= 0; })) << line;
    EXPECT_TRUE(std::any_of(list.begin(), list.end(), [](const auto& c) { return c.engine < 0; })) << line;
    float previous = 0;
    bool timed_part = true;
    for (const Conv2d::AlgorithmCandidate& c : list) {
      const bool ran = c.supported && c.time_ms >= 0;
      if (!ran) timed_part = false;
      EXPECT_FALSE(ran && !timed_part) << c.name << ": a timed candidate after an untimed one: " << line;
      if (ran) {
        EXPECT_GE(c.time_ms, previous) << c.name << " is listed after a slower one: " << line;
        previous = c.time_ms;
      }
    }
  }
}

}  // namespace
}  // namespace glassbox
