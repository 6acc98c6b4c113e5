// tests/test_inception.cpp: GoogLeNet's and Inception-v3's blocks
// (nets/inception_blocks.h). The real networks are checked by their counts in
// tests/test_nets.cpp; here the same block functions build a narrow network
// (1/16 of torchvision's widths, 32x32 images) whose whole-network gradient is
// checked and which must train. The real networks' layer names and weight
// shapes are checked against torchvision's.
#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "nets/inception_blocks.h"
#include "nets/nets.h"
#include "tests/support/devices.h"
#include "tests/support/network_checks.h"

namespace glassbox {
namespace {

constexpr int kClasses = 10;

// Every block function once, plus ceil-mode max pooling, at 1/16 width:
// 32x32 -> 16x16 (ceil; 15 rounding down) -> 7x7 (Mixed_6a) -> 3x3 (Mixed_7a).
Graph narrow_inception(int batch) {
  GraphBuilder g;
  const InceptionBlocks blocks(g, /*width_divisor=*/16);
  Value x = g.input("images", {batch, 3, 32, 32});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = blocks.basic_conv(x, "stem", {.out_channels = 8, .kernel = 3, .pad = 1});
  x = g.max_pool(x, {.kernel = 3, .stride = 2, .ceil_mode = true}, "maxpool1");
  x = blocks.googlenet_inception(x, "inception3a", {64, 96, 128, 16, 32, 32});  // 4 + 8 + 2 + 2 channels
  x = blocks.inception_a(x, "Mixed_5b", 32);                                     // 4 + 4 + 6 + 2
  x = blocks.inception_b(x, "Mixed_6a");                                         // 24 + 6 + 16
  x = blocks.inception_c(x, "Mixed_6b", 128);                                    // 4 x 12
  x = blocks.inception_d(x, "Mixed_7a");                                         // 20 + 12 + 48
  x = blocks.inception_e(x, "Mixed_7b");                                         // 20 + 48 + 48 + 12
  x = g.global_avg_pool(x, "avgpool");
  x = g.flatten(x, "flatten");
  const Value logits = g.linear(x, {.out_features = kClasses}, "fc");
  const Value loss = g.softmax_cross_entropy(logits, labels);
  return std::move(g).build(loss);
}

TEST(InceptionBlocks, NarrowNetworkShapes) {
  const Graph graph = narrow_inception(2);
  EXPECT_EQ(graph.node("maxpool1").shape, (Shape{2, 8, 16, 16}));
  EXPECT_EQ(graph.node("inception3a.concat").shape, (Shape{2, 16, 16, 16}));
  EXPECT_EQ(graph.node("Mixed_5b.concat").shape, (Shape{2, 16, 16, 16}));
  EXPECT_EQ(graph.node("Mixed_6a.concat").shape, (Shape{2, 46, 7, 7}));
  EXPECT_EQ(graph.node("Mixed_6b.concat").shape, (Shape{2, 48, 7, 7}));
  EXPECT_EQ(graph.node("Mixed_7a.concat").shape, (Shape{2, 80, 3, 3}));
  EXPECT_EQ(graph.node("Mixed_7b.branch3x3.concat").shape, (Shape{2, 48, 3, 3}));
  EXPECT_EQ(graph.node("Mixed_7b.concat").shape, (Shape{2, 128, 3, 3}));
}

Shape weight_shape(const Graph& graph, std::string_view layer) {
  return graph.node(layer).layer->param_specs().at(0).shape;
}

// torchvision's state_dict keys are these names plus ".weight"; the shapes
// are its weights' (out, in, kh, kw).
TEST(InceptionBlocks, RealNetworksHaveTorchvisionNamesAndWeightShapes) {
  const Graph googlenet_graph = googlenet(1);
  EXPECT_EQ(weight_shape(googlenet_graph, "conv1.conv"), (Shape{64, 3, 7, 7}));
  EXPECT_EQ(weight_shape(googlenet_graph, "inception3a.branch2.1.conv"), (Shape{128, 96, 3, 3}));
  // torchvision's "5x5" branch is a 3x3 convolution.
  EXPECT_EQ(weight_shape(googlenet_graph, "inception3a.branch3.1.conv"), (Shape{32, 16, 3, 3}));
  EXPECT_EQ(weight_shape(googlenet_graph, "inception5b.branch4.1.conv"), (Shape{128, 832, 1, 1}));
  EXPECT_EQ(weight_shape(googlenet_graph, "fc"), (Shape{1000, 1024}));
  EXPECT_EQ(googlenet_graph.node("inception3a.branch4.0").layer->describe(), "3x3 s1 p1 ceil");
  EXPECT_EQ(googlenet_graph.node("conv1.bn").layer->describe(), "64 channels, eps 0.001, momentum 0.1");
  EXPECT_EQ(googlenet_graph.node("conv1.conv").layer->param_specs().size(), 1u) << "no bias before batch norm";
  EXPECT_EQ(googlenet_graph.node("dropout").layer->describe(), "p 0.2");

  const Graph v3 = inception_v3(1);
  EXPECT_EQ(weight_shape(v3, "Conv2d_1a_3x3.conv"), (Shape{32, 3, 3, 3}));
  EXPECT_EQ(weight_shape(v3, "Mixed_5b.branch_pool.conv"), (Shape{32, 192, 1, 1}));
  EXPECT_EQ(weight_shape(v3, "Mixed_6b.branch7x7_2.conv"), (Shape{128, 128, 1, 7}));
  EXPECT_EQ(weight_shape(v3, "Mixed_6e.branch7x7dbl_4.conv"), (Shape{192, 192, 7, 1}));
  EXPECT_EQ(weight_shape(v3, "Mixed_7a.branch7x7x3_4.conv"), (Shape{192, 192, 3, 3}));
  EXPECT_EQ(weight_shape(v3, "Mixed_7c.branch3x3dbl_3b.conv"), (Shape{384, 384, 3, 1}));
  EXPECT_EQ(weight_shape(v3, "fc"), (Shape{1000, 2048}));
  EXPECT_EQ(v3.node("Mixed_7c.avg_pool").layer->describe(), "3x3 s1 p1");
  EXPECT_EQ(v3.node("Mixed_6a.max_pool").shape, (Shape{1, 288, 17, 17}));
  EXPECT_EQ(v3.node("dropout").layer->describe(), "p 0.5");
}

TEST(InceptionBlocks, WidthDivisorMustBePositive) {
  GraphBuilder g;
  try {
    InceptionBlocks blocks(g, 0);
    FAIL() << "made blocks of width divisor 0";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "Inception blocks: width divisor must be 1 or more, got 0");
  }
}

// The method of WholeNetGradientTest (tests/test_nets.cpp): along the unit
// gradient direction d, (L(w + eps d) - L(w - eps d)) / (2 eps) must approach
// |dL/dw|. The phase is training (batch norm uses batch statistics; the
// network has no dropout), so the loss is a fixed function of w. The steps are
// half of WholeNetGradientTest's: max pools, ReLUs and batch norm over small
// planes bend this loss more (relative errors 0.17, 0.083, 0.028, 0.014,
// 0.011, 0.0049, 0.0032 for steps 1e-2 halving to 1.5e-4: first-order
// convergence, as kinks give, towards zero).
TEST(InceptionBlocks, WholeNetworkGradientMatchesDirectionalDifferences) {
  Context ctx = Context::cpu();
  Graph graph = narrow_inception(2);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, kClasses);
  testing::expect_gradient_matches_directional_differences(ctx, graph, Phase::kTraining, {5e-3, 2.5e-3, 1.25e-3},
                                                           "narrow Inception blocks");
}

// A few SGD steps on one fixed batch lower the loss on that batch. The loss is
// read in the training phase (batch statistics, as the steps saw them; with
// only four steps the running statistics are still near their start). On
// the CPU at lr 0.05: 2.26 -> 1.34.
class InceptionTrainingTest : public testing::DeviceTest {};

TEST_P(InceptionTrainingTest, SgdStepsLowerTheLossOnAFixedBatch) {
  Context& ctx = this->ctx();
  Graph graph = narrow_inception(8);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, kClasses);
  testing::expect_sgd_steps_lower_the_loss(ctx, graph, {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f},
                                           Phase::kTraining, 0.9f, "narrow Inception blocks");
}

GLASSBOX_INSTANTIATE_ON_DEVICES(InceptionTrainingTest);

}  // namespace
}  // namespace glassbox
