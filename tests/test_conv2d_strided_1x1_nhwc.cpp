// tests/test_conv2d_strided_1x1_nhwc.cpp: Note [1x1 convolutions on NHWC
// values] (layers/conv2d/conv2d_strided_1x1_nhwc.cpp). Each pass of a strided 1x1
// layer on NHWC values against the same layer on NCHW through Glassbox's
// im2col path (the plain reference, itself gradient-checked in
// test_conv2d.cpp), at strides 2 and (2, 1), with and without bias, in both
// gradient modes; which 1x1 layers offer NHWC to the graph (strided ones);
// and a reduced ResNet-18, whose trunk this makes NHWC from end to end,
// trained against its all-NCHW graph value by value.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/layouts.h"
#include "layers/conv2d/conv2d.h"
#include "nets/nets.h"
#include "tests/support/checks.h"
#include "tests/support/harness.h"
#include "tests/support/layout_runs.h"

namespace glassbox {
namespace {

struct Strided1x1Case {
  Shape x;
  Conv2d::Options options;
};

// 24 and 40 channels: partial vectors; odd planes: the last row and column
// at stride 2; stride (2, 1): the two strides apart.
const Strided1x1Case kCases[] = {
    {Shape{2, 24, 6, 7}, {.out_channels = 40, .kernel = 1, .stride = 2}},
    {Shape{2, 16, 7, 9}, {.out_channels = 32, .kernel = 1, .stride = 2, .bias = false}},
    {Shape{3, 16, 6, 5}, {.out_channels = 24, .kernel = 1, .stride = Size2(2, 1)}},
};

// y, then dx written and added with dW (and db) written and added, each
// against the reference; dx and written gradients poisoned first, so an
// element the NHWC path leaves alone (a pixel the stride skips) shows.
void expect_matches_reference(const Strided1x1Case& c, Layout y_layout, const std::string& path) {
  Context ctx = Context::cpu();
  Conv2d plain("conv", c.options), nhwc("conv", c.options);
  plain.pin_cpu_path(Conv2d::CpuPath::kGlassbox);
  testing::LayerHarness ref(ctx, plain, {c.x});
  testing::LayerHarness h(ctx, nhwc, {c.x});
  ref.randomize(11);
  ASSERT_TRUE(nhwc.can_read_channels_last(0));
  testing::go_channels_last(h, ref, y_layout);
  const std::string what = c.x.str() + " " + nhwc.describe() + ": " + nhwc.algorithms();
  EXPECT_NE(nhwc.algorithms().find(path), std::string::npos) << what;
  const Shape y = ref.output.shape();
  auto in_layout = [](const std::vector<float>& nchw, const Shape& shape, Layout layout) {
    return layout == Layout::kNHWC ? channels_last_from_nchw(nchw, shape) : nchw;
  };
  ref.forward();
  h.poison(h.output);
  h.forward();
  testing::expect_close(h.read(h.output), in_layout(ref.read(ref.output), y, y_layout), 1e-5, what + ": y");
  testing::expect_backward_matches(h, ref, /*dx_nhwc=*/true, 1e-5, what);
}

TEST(Strided1x1Nhwc, EachPassMatchesTheNchwReference) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  for (const Strided1x1Case& c : kCases) expect_matches_reference(c, Layout::kNHWC, "Glassbox 1x1 GEMM over the batch's");
}

// An NHWC input with an NCHW output (the graph's choice where the output's
// readers need NCHW): every pass on oneDNN, which reorders.
TEST(Strided1x1Nhwc, WithOnlyItsInputNhwcEveryPassRunsOnOneDnn) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  for (const Strided1x1Case& c : kCases) expect_matches_reference(c, Layout::kNCHW, "; x NHWC");
}

TEST(Strided1x1Nhwc, OnlyAStridedOneByOneOnTheAutomaticPathTakesNhwc) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  Context ctx = Context::cpu();
  const Shape x{1, 16, 4, 4};
  auto takes_nhwc = [&](Conv2d::Options options, Conv2d::CpuPath pin) {
    Conv2d conv("conv", options);
    conv.pin_cpu_path(pin);
    testing::LayerHarness h(ctx, conv, {x});
    return std::pair{conv.can_read_channels_last(0), conv.can_write_channels_last({true})};
  };
  using Path = Conv2d::CpuPath;
  EXPECT_EQ(takes_nhwc({.out_channels = 16, .kernel = 1, .stride = 2}, Path::kAuto), std::pair(true, true));
  EXPECT_EQ(takes_nhwc({.out_channels = 16, .kernel = 1, .stride = Size2(1, 2)}, Path::kAuto), std::pair(true, true));
  // Stride 1: NCHW only (measured slower in ResNet-50's bottlenecks).
  EXPECT_EQ(takes_nhwc({.out_channels = 16, .kernel = 1}, Path::kAuto), std::pair(false, false));
  EXPECT_EQ(takes_nhwc({.out_channels = 16, .kernel = 1, .stride = 2}, Path::kGlassbox), std::pair(false, false));
  EXPECT_EQ(takes_nhwc({.out_channels = 16, .kernel = 1, .stride = 2, .pad = 1}, Path::kAuto), std::pair(false, false));
  EXPECT_EQ(takes_nhwc({.out_channels = 16, .kernel = 1, .stride = 2, .groups = 2}, Path::kAuto),
            std::pair(false, false));
  // From an NCHW input it writes NCHW only: its products need both NHWC.
  Conv2d conv("conv", {.out_channels = 16, .kernel = 1, .stride = 2});
  testing::LayerHarness h(ctx, conv, {x});
  EXPECT_FALSE(conv.can_write_channels_last({false}));
}

Graph reduced_resnet(ResNetConfig::Block block, int batch) {
  return resnet({.block = block, .blocks = {1, 1, 1, 1}, .base_planes = 16, .image_size = 64, .classes = 5}, batch);
}

// Basic blocks: every 4-D value but the images and the pooled features (the
// stem, the trunk, the strided 1x1 shortcuts of layer2..4). Bottlenecks:
// their stride-1 1x1 layers keep the trunk NCHW, and no layer takes this path.
TEST(Strided1x1Nhwc, AResNet18IsStoredNhwcFromEndToEnd) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  for (auto block : {ResNetConfig::Block::kBasic, ResNetConfig::Block::kBottleneck}) {
    const bool basic = block == ResNetConfig::Block::kBasic;
    for (Phase phase : {Phase::kTraining, Phase::kInference}) {
      Context ctx = Context::cpu();
      Graph graph = reduced_resnet(block, 2);
      graph.compile(ctx, {.phase = phase});
      int pointwise = 0;
      for (const Node& node : graph.nodes()) {
        const bool trunk = node.shape.rank() == 4 && !node.is_input() && node.name != "avgpool";
        if (basic) {
          EXPECT_EQ(node.channels_last, trunk) << node.name;
        }
        const std::string algorithms = node.is_input() ? "" : node.layer->algorithms();
        pointwise += algorithms.find("Glassbox 1x1 GEMM over the batch's") != std::string::npos ? 1 : 0;
      }
      EXPECT_EQ(pointwise, basic ? 3 : 0);
      if (!basic) {
        EXPECT_FALSE(graph.node("layer1.0.add").channels_last);
      }
    }
  }
}

TEST(Strided1x1Nhwc, ResNet18TrainingComputesWhatTheNchwGraphComputes) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  auto run = [&](bool channels_last) {
    return testing::train_three_steps([&] { return reduced_resnet(ResNetConfig::Block::kBasic, 2); }, channels_last,
                                      Graph::ParamGrads::kReplace);
  };
  testing::expect_same_training(run(true), run(false));
}

}  // namespace
}  // namespace glassbox
