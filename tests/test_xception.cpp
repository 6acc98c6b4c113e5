// tests/test_xception.cpp: Xception's layout (the names and shapes of
// Cadene's PyTorch port, whose checkpoints will load by name) and, on a
// narrow variant built by the same block code, the whole network's gradient
// and a few training steps. The full network's counts are in test_nets.cpp.
#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "layers/conv2d/conv2d.h"
#include "nets/nets.h"
#include "tests/support/devices.h"
#include "tests/support/network_checks.h"

namespace glassbox {
namespace {

// 48x48 -> 23 -> 21 -> blocks 11, 6, 3, two middle blocks, then 2x2 in the
// exit flow: every block kind, batch-norm statistics over at least 8 values.
const XceptionSizes kNarrow = {
    .image = 48, .classes = 5, .stem = {4, 8}, .entry = {8, 12, 16}, .middle_blocks = 2, .exit = {20, 24, 32}};

std::vector<int64_t> weight_shape(const Graph& graph, const std::string& layer) {
  return graph.node(layer).layer->param_specs().at(0).shape.dims();
}

// The port's state-dict keys and weight shapes (Cadene's pretrainedmodels
// xception; its "fc" is renamed "last_linear" when ImageNet weights load).
TEST(Xception, LayersCarryThePortsNamesAndShapes) {
  const Graph graph = xception(1);
  const struct {
    const char* layer;
    std::vector<int64_t> weight;
  } expected[] = {
      {"conv1", {32, 3, 3, 3}},
      {"bn1", {32}},
      {"conv2", {64, 32, 3, 3}},
      {"block1.rep.0.conv1", {64, 1, 3, 3}},  // block1 starts without a ReLU: its first module is a conv
      {"block1.rep.0.pointwise", {128, 64, 1, 1}},
      {"block1.rep.1", {128}},
      {"block1.rep.3.pointwise", {128, 128, 1, 1}},
      {"block1.skip", {128, 64, 1, 1}},
      {"block1.skipbn", {128}},
      {"block2.rep.1.conv1", {128, 1, 3, 3}},  // after rep.0, a ReLU
      {"block3.rep.4.pointwise", {728, 728, 1, 1}},
      {"block11.rep.7.pointwise", {728, 728, 1, 1}},
      {"block12.rep.1.pointwise", {728, 728, 1, 1}},  // grows at its last separable conv
      {"block12.rep.4.pointwise", {1024, 728, 1, 1}},
      {"block12.skip", {1024, 728, 1, 1}},
      {"conv3.conv1", {1024, 1, 3, 3}},
      {"conv3.pointwise", {1536, 1024, 1, 1}},
      {"conv4.pointwise", {2048, 1536, 1, 1}},
      {"bn4", {2048}},
      {"fc", {1000, 2048}},
  };
  for (const auto& e : expected) EXPECT_EQ(weight_shape(graph, e.layer), e.weight) << e.layer;

  // Module types at the port's Sequential indices, and the strided pools.
  EXPECT_EQ(graph.node("block1.rep.2").layer->type(), "ReLU");
  EXPECT_EQ(graph.node("block1.rep.5").layer->type(), "MaxPool2d");
  EXPECT_EQ(graph.node("block4.rep.0").layer->type(), "ReLU");
  EXPECT_EQ(graph.node("block4.rep.8").layer->type(), "BatchNorm2d");
  EXPECT_EQ(graph.node("block12.rep.6").layer->describe(), "3x3 s2 p1");
  // The middle flow adds its input itself: no shortcut convolution.
  EXPECT_THROW(graph.node("block4.skip"), Error);
  auto name_of_input = [&](const char* node, size_t i) {
    return graph.nodes()[static_cast<size_t>(graph.node(node).inputs.at(i))].name;
  };
  EXPECT_EQ(name_of_input("block4.add", 0), "block4.rep.8");
  EXPECT_EQ(name_of_input("block4.add", 1), "block3.add");
  EXPECT_EQ(name_of_input("block12.add", 1), "block12.skipbn");
  // Every depthwise convolution has groups = channels and no bias.
  const auto& depthwise = dynamic_cast<const Conv2d&>(*graph.node("block8.rep.4.conv1").layer);
  EXPECT_EQ(depthwise.options().groups, 728);
  EXPECT_FALSE(depthwise.options().bias);
}

// The whole network's gradient against the loss itself, as in test_nets.cpp's
// WholeNetGradientTest: along the unit gradient direction d, the central
// difference of the loss must approach |dL/dw|. Batch norm is in training
// mode on both sides (its backward is the training one), which makes the loss
// a fixed function of w: the running averages it also updates do not enter it.
// The steps are 5x smaller than test_nets.cpp's: along the gradient this
// loss bends sharply (at 1e-2, 5e-3, 2.5e-3 the errors were 19%, 13%, 5.3%;
// at 2e-3, 1e-3, 5e-4 they are 4.4%, 2.1%, 0.05%).
TEST(Xception, NarrowNetworkGradientMatchesDirectionalDifferences) {
  Context ctx = Context::cpu();
  Graph graph = xception(2, kNarrow);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, kNarrow.classes);
  testing::expect_gradient_matches_directional_differences(ctx, graph, Phase::kTraining, {2e-3, 1e-3, 5e-4},
                                                           "narrow Xception");
}

class XceptionTraining : public ::testing::TestWithParam<Device> {};

// A few SGD steps on one fixed batch lower the loss on that batch.
TEST_P(XceptionTraining, SgdStepsLowerTheLossOfTheNarrowNetwork) {
  const Device device = GetParam();
  if (device.is_cuda()) GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::on(device);
  Graph graph = xception(4, kNarrow);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, kNarrow.classes);
  // The loss is read with batch statistics: the running ones have seen only four batches.
  testing::expect_sgd_steps_lower_the_loss(ctx, graph, {.lr = 5e-2f, .momentum = 0.9f, .weight_decay = 0.0f},
                                           Phase::kTraining, 0.98f, cat("narrow Xception on ", device.str()));
}

INSTANTIATE_TEST_SUITE_P(Devices, XceptionTraining, ::testing::ValuesIn(testing::all_devices()),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
}  // namespace glassbox
