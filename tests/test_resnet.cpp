// tests/test_resnet.cpp: the ResNets' structure (depth, names, shortcuts,
// stage shapes), their whole-network gradients on reduced variants built by
// the same code, and training ResNet-56. Parameter and MAC counts are in
// tests/test_nets.cpp with the other networks.
#include <gtest/gtest.h>

#include <map>

#include "data/synthetic.h"
#include "layers/subsample_pad.h"
#include "nets/nets.h"
#include "nets/registry.h"
#include "tests/support/devices.h"
#include "tests/support/network_checks.h"

namespace glassbox {
namespace {

int count_of(const Graph& graph, std::string_view type) {
  int count = 0;
  for (const Node& node : graph.nodes()) count += !node.is_input() && node.layer->type() == type;
  return count;
}

// The name of a ResNet is its count of weighted layers on the main path:
// convolutions and the classifier, not the shortcut projections.
int weighted_depth(const Graph& graph) {
  int depth = 0;
  for (const Node& node : graph.nodes()) {
    if (node.is_input() || node.name.find("downsample") != std::string::npos) continue;
    depth += node.layer->type() == "Conv2d" || node.layer->type() == "Linear";
  }
  return depth;
}

TEST(ResNet, EachDepthHasThatManyWeightedLayersAndOneAddPerBlock) {
  const std::map<int, int> blocks = {{18, 8}, {34, 16}, {50, 16}, {101, 33}, {152, 50}};
  for (const auto& [depth, count] : blocks) {
    const Graph graph = resnet(depth, 1);
    EXPECT_EQ(weighted_depth(graph), depth) << "ResNet-" << depth;
    EXPECT_EQ(count_of(graph, "Add"), count) << "ResNet-" << depth;
    EXPECT_EQ(count_of(graph, "BatchNorm2d"), count_of(graph, "Conv2d")) << "a batch norm after every convolution";
    // One projection per stage that changes the shape: all four with bottlenecks, three without.
    EXPECT_EQ(count_of(graph, "Conv2d") - weighted_depth(graph) + 1, depth >= 50 ? 4 : 3) << "ResNet-" << depth;
  }
  EXPECT_EQ(weighted_depth(cifar_resnet(56, 1)), 56);
  EXPECT_EQ(count_of(cifar_resnet(56, 1), "Add"), 27);
  EXPECT_EQ(count_of(cifar_resnet(56, 1), "SubsamplePad"), 2);
}

// Names are torchvision's module names; the nodes it has no module for are named apart.
TEST(ResNet, NodesCarryTorchvisionNamesAndShapes) {
  const Graph r50 = resnet(50, 2);
  EXPECT_EQ(r50.node("maxpool").shape, (Shape{2, 64, 56, 56}));
  EXPECT_EQ(r50.node("layer1.0.downsample.0").shape, (Shape{2, 256, 56, 56})) << "64 -> 256 needs a projection";
  EXPECT_EQ(r50.node("layer1.2.relu3").shape, (Shape{2, 256, 56, 56}));
  EXPECT_EQ(r50.node("layer2.0.conv1").shape, (Shape{2, 128, 56, 56})) << "v1.5: the 1x1 keeps the resolution";
  EXPECT_EQ(r50.node("layer2.0.conv2").shape, (Shape{2, 128, 28, 28})) << "v1.5: the 3x3 has the stride";
  EXPECT_EQ(r50.node("layer2.0.downsample.1").shape, (Shape{2, 512, 28, 28}));
  EXPECT_EQ(r50.node("layer3.5.add").shape, (Shape{2, 1024, 14, 14}));
  EXPECT_EQ(r50.node("layer4.2.relu3").shape, (Shape{2, 2048, 7, 7}));
  EXPECT_EQ(r50.node("fc").shape, (Shape{2, 1000}));
  EXPECT_EQ(r50.node("layer4.2.bn3").layer->type(), "BatchNorm2d");

  const Graph r18 = resnet(18, 2);
  EXPECT_EQ(r18.node("layer1.1.relu2").shape, (Shape{2, 64, 56, 56}));
  EXPECT_EQ(r18.node("layer2.0.conv1").shape, (Shape{2, 128, 28, 28})) << "a basic block strides its first conv";
  EXPECT_EQ(r18.node("layer4.1.relu2").shape, (Shape{2, 512, 7, 7}));
  EXPECT_THROW(r18.node("layer1.0.downsample.0"), ConfigError) << "64 -> 64 at stride 1 is the identity";
  EXPECT_EQ(r18.node("layer2.0.downsample.0").shape, (Shape{2, 128, 28, 28}));
}

TEST(ResNet, OptionAShortcutsSubsampleAndCentreTheZeroChannels) {
  const Graph graph = cifar_resnet(56, 4);
  EXPECT_THROW(graph.node("layer1.0.shortcut"), ConfigError) << "16 -> 16 at stride 1 is the identity";
  EXPECT_EQ(graph.node("layer1.8.relu2").shape, (Shape{4, 16, 32, 32}));
  struct { const char* name; Shape shape; int first_channel; } shortcuts[] = {
      {"layer2.0.shortcut", Shape{4, 32, 16, 16}, 8}, {"layer3.0.shortcut", Shape{4, 64, 8, 8}, 16}};
  for (const auto& s : shortcuts) {
    const Node& node = graph.node(s.name);
    EXPECT_EQ(node.shape, s.shape) << s.name;
    ASSERT_EQ(node.layer->type(), "SubsamplePad");
    const auto& options = static_cast<const SubsamplePad&>(*node.layer).options();
    EXPECT_EQ(options.stride, 2);
    EXPECT_EQ(options.first_channel, s.first_channel) << "F.pad(x[:, :, ::2, ::2], ..., planes // 4, planes // 4)";
    EXPECT_EQ(graph.node(s.name).shape, graph.node(std::string(s.name, 9) + "bn2").shape) << "the sum's two terms";
  }
  EXPECT_EQ(graph.node("layer3.8.relu2").shape, (Shape{4, 64, 8, 8}));
  EXPECT_EQ(graph.node("linear").shape, (Shape{4, 10}));
}

TEST(ResNet, UnknownDepthsAreConfigErrors) {
  try {
    resnet(42, 1);
    FAIL() << "built a ResNet-42";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "ResNet-42: valid depths are 18, 34, 50, 101, 152");
  }
  for (const int depth : {57, 2, -4}) {
    try {
      cifar_resnet(depth, 1);
      FAIL() << "built a CIFAR ResNet-" << depth;
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), cat("CIFAR ResNet-", depth,
                                           ": the depth must be 6n + 2 with n >= 1 (20, 32, 44, 56, 110, ...)"));
    }
  }
  EXPECT_EQ(cifar_resnet(20, 1).parameter_count(), 269'722) << "the paper's ResNet-20: 0.27M";
}

// Small ResNets built by the same code as the registered ones: one block per
// stage and 8 base planes, both block kinds, and the CIFAR ResNet-8 (one block
// per stage, both option-A shortcuts). The ImageNet ones take 128x128, so that
// layer4 is 4x4 and its batch norms see 32 values per channel: at 32x32 (two
// values) and 64x64 (eight) batch norm made the loss so curved that the
// differences converged only below eps = 1e-3.
struct SmallNet {
  const char* name;
  std::function<Graph(int batch)> build;
  double eps;        // the largest step; then eps / 2, eps / 4
  double tolerance;  // on the relative error at eps / 4, about 4x what was measured
};

Graph small_resnet(ResNetConfig::Block block, int batch) {
  return resnet({.block = block, .blocks = {1, 1, 1, 1}, .base_planes = 8, .image_size = 128, .classes = 10}, batch);
}

// Measured relative errors at eps, eps / 2, eps / 4: Bottleneck 0.0061, 0.0025,
// 0.0011; Basic 0.0050, 0.0022, 0.0014 (ReLU and max-pool kinks: first order);
// Cifar8 1.2e-4, 4.5e-5, 1.7e-5 (smooth; halving the shortcut's gradient
// gives 7.7e-3 there, which this tolerance catches).
const SmallNet kSmallNets[] = {
    {"Bottleneck", [](int batch) { return small_resnet(ResNetConfig::Block::kBottleneck, batch); }, 2.5e-3, 5e-3},
    {"Basic", [](int batch) { return small_resnet(ResNetConfig::Block::kBasic, batch); }, 2.5e-3, 5e-3},
    {"Cifar8", [](int batch) { return cifar_resnet(8, batch); }, 1e-2, 1e-3},
};

// The method of WholeNetGradientTest (tests/test_nets.cpp): along the unit
// gradient direction d, (L(w + eps d) - L(w - eps d)) / (2 eps) must approach
// |dL/dw|. With batch norm the loss is read in the training phase: batch
// statistics, a fixed function of w (there is no dropout to redraw; the
// running statistics, which the steps move, are not read).
class ResNetGradientTest : public ::testing::TestWithParam<SmallNet> {};

TEST_P(ResNetGradientTest, MatchesDirectionalDifferencesOfTheLoss) {
  const SmallNet& net = GetParam();
  Context ctx = Context::cpu();
  Graph graph = net.build(2);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, 10);
  testing::expect_gradient_matches_directional_differences(
      ctx, graph, Phase::kTraining, {net.eps, net.eps / 2, net.eps / 4}, net.name, net.tolerance);
}

INSTANTIATE_TEST_SUITE_P(Cpu, ResNetGradientTest, ::testing::ValuesIn(kSmallNets),
                         [](const auto& info) { return std::string(info.param.name); });

// A few SGD steps on one fixed batch lower ResNet-56's loss on that batch
// (measured on the CPU: 4.29 -> 2.93 in four steps at lr 0.05, batch 4, about
// 1 s single-threaded). It is not in test_nets.cpp's kTrainedNets because that
// test reads the loss in the inference phase, which for a batch-norm network
// reads the running statistics: they start at mean 0 and variance 1 and move
// with every step, so the loss would change by that alone. Here the loss is
// read in the training phase (batch statistics) before and after.
class ResNet56TrainingTest : public testing::DeviceTest {};

TEST_P(ResNet56TrainingTest, SgdStepsLowerTheLossOnAFixedBatch) {
  Context& ctx = this->ctx();
  const NetSpec net = find_net("ResNet56");
  Graph graph = net.build(4);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, net.classes);
  testing::expect_sgd_steps_lower_the_loss(ctx, graph, {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f},
                                           Phase::kTraining, 0.9f, net.name);
}

GLASSBOX_INSTANTIATE_ON_DEVICES(ResNet56TrainingTest);

}  // namespace
}  // namespace glassbox
