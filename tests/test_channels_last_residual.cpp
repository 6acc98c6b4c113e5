// tests/test_channels_last_residual.cpp: Note [Channels-last values]
// (graph/layouts.h) through residual networks. Batch norm, Add and
// SubsamplePad keep their inputs' layout and global average pooling reads
// NHWC, so a ResNet's whole trunk is stored NHWC; each of those layers on NHWC
// against itself on NCHW (the plain reference, itself gradient-checked), and
// a residual net's training step against the all-NCHW graph, value by value.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/layouts.h"
#include "layers/batch_norm/batch_norm.h"
#include "layers/pool2d/pool2d.h"
#include "layers/subsample_pad.h"
#include "nets/nets.h"
#include "tests/support/checks.h"
#include "tests/support/harness.h"
#include "tests/support/layout_runs.h"

namespace glassbox {
namespace {

// Training forward (y, the running statistics), backward (dx written and
// added, dscale and dshift) and an inference forward, on 16 and 128
// channels (one and eight vectors: the sums in registers, layers/
// batch_norm_nhwc.cpp), on 40 (two and a half) and 144 (nine): the sums in L1.
TEST(ChannelsLastResidual, BatchNormOnNhwcMatchesItselfOnNchw) {
  for (const Shape& x : {Shape{2, 16, 5, 7}, Shape{2, 128, 3, 5}, Shape{3, 40, 3, 3}, Shape{2, 144, 3, 2}}) {
    const std::string what = x.str();
    Context ctx = Context::cpu();
    BatchNorm2d plain("bn", {}), nhwc("bn", {});
    testing::LayerHarness ref(ctx, plain, {x});
    testing::LayerHarness h(ctx, nhwc, {x});
    ref.randomize(3);
    testing::go_channels_last(h, ref, Layout::kNHWC);
    ref.forward();
    h.poison(h.output);
    h.forward();
    testing::expect_close(h.read(h.output), channels_last_from_nchw(ref.read(ref.output), x), 1e-5, what + ": y");
    testing::expect_close(h.read(nhwc.running_mean()), ref.read(plain.running_mean()), 1e-6, what + ": running mean");
    testing::expect_close(h.read(nhwc.running_var()), ref.read(plain.running_var()), 1e-6, what + ": running var");
    for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
      ref.backward({mode});
      if (mode == GradMode::kWrite) h.poison(h.input_grads[0]);
      h.backward({mode});
      testing::expect_close(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), x), 1e-5,
                            what + ": dx");
      testing::expect_close(h.read(h.param_grads[0]), ref.read(ref.param_grads[0]), 1e-5, what + ": dscale");
      testing::expect_close(h.read(h.param_grads[1]), ref.read(ref.param_grads[1]), 1e-5, what + ": dshift");
    }
    ref.forward(Phase::kInference);
    h.forward(Phase::kInference);
    testing::expect_close(h.read(h.output), channels_last_from_nchw(ref.read(ref.output), x), 1e-5, what + ": inference y");
  }
}

// The shortcut of a stage change (stride 2, zero channels each side) and one
// that only pads: outputs and both gradient modes, exact (nothing is summed).
TEST(ChannelsLastResidual, SubsamplePadOnNhwcMatchesItselfOnNchw) {
  struct Case {
    SubsamplePad::Options options;
    Shape x;
  };
  for (const Case& c : {Case{{.stride = 2, .out_channels = 32, .first_channel = 8}, Shape{2, 16, 7, 9}},
                        Case{{.stride = 1, .out_channels = 24, .first_channel = 0}, Shape{1, 16, 4, 4}}}) {
    Context ctx = Context::cpu();
    SubsamplePad plain("pad", c.options), nhwc("pad", c.options);
    testing::LayerHarness ref(ctx, plain, {c.x});
    testing::LayerHarness h(ctx, nhwc, {c.x});
    const std::string what = c.x.str() + " " + plain.describe();
    ref.randomize(4);
    testing::go_channels_last(h, ref, Layout::kNHWC);
    const Shape y = ref.output.shape();
    ref.forward();
    h.poison(h.output);
    h.forward();
    EXPECT_EQ(h.read(h.output), channels_last_from_nchw(ref.read(ref.output), y)) << what;
    for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
      ref.backward({mode});
      if (mode == GradMode::kWrite) h.poison(h.input_grads[0]);
      h.backward({mode});
      EXPECT_EQ(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), c.x)) << what;
    }
  }
}

// From NHWC to (N, C, 1, 1), stored either way (the same bytes).
TEST(ChannelsLastResidual, GlobalAveragePoolingOfNhwcMatchesItselfOnNchw) {
  const Shape x{3, 24, 5, 6};
  for (Layout y_layout : {Layout::kNCHW, Layout::kNHWC}) {
    Context ctx = Context::cpu();
    Pool2d plain("avg", Pool2d::Mode::kAverage, {.global = true}), nhwc("avg", Pool2d::Mode::kAverage, {.global = true});
    testing::LayerHarness ref(ctx, plain, {x});
    testing::LayerHarness h(ctx, nhwc, {x});
    ASSERT_TRUE(nhwc.can_read_channels_last(0));
    ref.randomize(5);
    testing::go_channels_last(h, ref, y_layout);
    ref.forward();
    h.poison(h.output);
    h.forward();
    testing::expect_close(h.read(h.output), ref.read(ref.output), 1e-6, "y");
    for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
      ref.backward({mode});
      if (mode == GradMode::kWrite) h.poison(h.input_grads[0]);
      h.backward({mode});
      testing::expect_close(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), x), 1e-6, "dx");
    }
  }
}

// A stem, a residual block, a stage change with the parameter-free shortcut,
// global average pooling: the CIFAR ResNets' parts at 16 and 32 channels.
Graph residual_net(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 8, 8});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  auto conv_bn = [&](Value in, int channels, int stride, const std::string& name) {
    return g.batch_norm(g.conv(in, {.out_channels = channels, .kernel = 3, .stride = stride, .pad = 1, .bias = false}, name),
                        {}, name + "_bn");
  };
  x = g.relu(conv_bn(x, 16, 1, "stem"), "stem_relu");
  Value branch = conv_bn(g.relu(conv_bn(x, 16, 1, "a1"), "a1_relu"), 16, 1, "a2");
  x = g.relu(g.add({branch, x}, "a_add"), "a_relu");
  branch = conv_bn(g.relu(conv_bn(x, 32, 2, "b1"), "b1_relu"), 32, 1, "b2");
  const Value shortcut = g.append(
      std::make_unique<SubsamplePad>("b_shortcut", SubsamplePad::Options{.stride = 2, .out_channels = 32, .first_channel = 8}),
      {x});
  x = g.relu(g.add({branch, shortcut}, "b_add"), "b_relu");
  x = g.flatten(g.global_avg_pool(x, "avgpool"), "flatten");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 5}, "fc"), labels));
}

// Every 4-D value but the images and the pooled features, in training and
// inference graphs; and in ResNet-56 itself.
TEST(ChannelsLastResidual, AResidualTrunkIsStoredNhwc) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  for (Phase phase : {Phase::kTraining, Phase::kInference}) {
    for (bool cifar : {false, true}) {
      Context ctx = Context::cpu();
      Graph graph = cifar ? cifar_resnet(56, 1) : residual_net(2);
      graph.compile(ctx, {.phase = phase});
      int nhwc = 0;
      for (const Node& node : graph.nodes()) {
        const bool trunk = node.shape.rank() == 4 && !node.is_input() && node.name != "avgpool";
        EXPECT_EQ(node.channels_last, trunk) << node.name;
        nhwc += node.channels_last ? 1 : 0;
      }
      EXPECT_GE(nhwc, cifar ? 160 : 18);  // ResNet-56: 3 per layer, 2 per block more
    }
  }
}

// Every value, the losses, the first step's parameter gradients and the
// parameters after three SGD steps, as the all-NCHW graph has them; the
// step's backward writes the parameter gradients (Graph::ParamGrads::kReplace).
TEST(ChannelsLastResidual, TrainingComputesWhatTheNchwGraphComputes) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  auto run = [](bool channels_last) {
    return testing::train_three_steps([] { return residual_net(3); }, channels_last, Graph::ParamGrads::kReplace);
  };
  testing::expect_same_training(run(true), run(false));
}

}  // namespace
}  // namespace glassbox
