// tests/test_fusion_residual.cpp: Note [A ReLU fused into its producer] and
// Note [A ReLU's backward fused into its producer] (graph/fusion.h) in a
// residual network: the ReLU after a batch norm (forward and backward) and
// after a residual add (forward). Which ReLUs each takes; the memory plan
// that makes the ReLU's gradient the batch norm's; and that a fused graph
// trains as the unfused one (losses, every parameter gradient, the parameters
// after three steps, an inference forward), in fp32, bf16 and fp16, on NCHW
// and NHWC values, on the CPU and (where one runs here) on a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/fusion.h"
#include "graph/memory_plan.h"
#include "layers/batch_norm/batch_norm.h"
#include "tests/support/devices.h"
#include "tests/support/fusion_runs.h"

namespace glassbox {
namespace {

// images -> bn0 -> relu0: bn0 reads the data, which gets no gradient, so it
//   takes relu0 in inference only (both or neither in training).
// conv1 -> bn1 -> relu1: fused, forward and backward. relu1's gradient is
//   also add2's (Note [Gradients shared through an add]).
// conv2 -> bn2 -> add2(bn2, relu1) -> relu2: fused into the add, forward
//   only (its backward stays the ReLU's).
// conv3 -> bn3 -> relu3: fused, forward and backward.
Graph net(int batch) {
  GraphBuilder g;
  const Value images = g.input("images", {batch, 4, 6, 6});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  const Conv2d::Options same{.out_channels = 8, .kernel = 3, .pad = 1, .bias = false};
  const Value h0 = g.relu(g.batch_norm(images, {}, "bn0"), "relu0");
  const Value h1 = g.relu(g.batch_norm(g.conv(h0, same, "conv1"), {}, "bn1"), "relu1");
  const Value b2 = g.batch_norm(g.conv(h1, same, "conv2"), {}, "bn2");
  const Value h2 = g.relu(g.add({b2, h1}, "add2"), "relu2");
  const Value b3 = g.batch_norm(g.conv(h2, {.out_channels = 12, .kernel = 1, .bias = false}, "conv3"), {}, "bn3");
  const Value h3 = g.relu(b3, "relu3");
  const Value logits = g.linear(g.flatten(g.global_avg_pool(h3, "pool"), "flatten"), {.out_features = 5}, "out");
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

int index_of(const Graph& graph, const std::string& name) {
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    if (graph.nodes()[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no node " << name;
  return 0;
}

class FusionResidualTest : public testing::DeviceTest {};

TEST_P(FusionResidualTest, ABatchNormOrAnAddTakesTheReluAfterItWhereItCan) {
  Context& ctx = this->ctx();
  for (Phase phase : {Phase::kTraining, Phase::kInference}) {
    Graph graph = net(2);
    graph.compile(ctx, {.precision = Precision::kFp16, .phase = phase, .layout = LayoutChoice::kNhwc});
    std::string expected = phase == Phase::kTraining ? "relu1<-bn1+backward relu2<-add2 relu3<-bn3+backward"
                                                     : "relu0<-bn0 relu1<-bn1 relu2<-add2 relu3<-bn3";
    // cuDNN fuses a ReLU into a training batch norm on NHWC half values only
    // (Note [Batch norm and ReLU in one cuDNN call]).
    if (ctx.is_cuda() && phase == Phase::kInference) expected = "relu2<-add2";
    EXPECT_EQ(testing::fused_relus(graph), expected) << (phase == Phase::kTraining ? "training" : "inference");
    Graph fp32 = net(2);
    fp32.compile(ctx, {.phase = phase, .layout = LayoutChoice::kNchw});
    EXPECT_EQ(testing::fused_relus(fp32), ctx.is_cuda() ? "relu2<-add2" : expected) << "fp32 NCHW";
    Graph unfused = net(2);
    unfused.compile(ctx, {.precision = Precision::kFp16, .phase = phase, .layout = LayoutChoice::kNhwc,
                          .fusion = false});
    EXPECT_EQ(testing::fused_relus(unfused), "");
  }
}

// On the CPU the fused passes compute the same floats in the same order as
// the ReLU and the batch norm apart: equal to the bit. cuDNN's fused kernels
// are other kernels than its separate ones, in half precision.
TEST_P(FusionResidualTest, AFusedGraphTrainsAsTheUnfusedOne) {
  Context& ctx = this->ctx();
  const double tolerance = ctx.is_cuda() ? 2e-2 : 0.0;
  for (LayoutChoice layout : {LayoutChoice::kNchw, LayoutChoice::kNhwc}) {
    for (Precision precision : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
      auto run = [&](bool fusion) {
        return testing::train_three_steps(ctx, net(3), {.precision = precision, .layout = layout, .fusion = fusion}, 5,
                                          "relu3");
      };
      testing::expect_same_run(run(true), run(false), tolerance,
                               cat(flag_name_of(precision), " ", name_of(layout), ": "));
    }
  }
}

GLASSBOX_INSTANTIATE_ON_DEVICES(FusionResidualTest);

// bn1's output gradient is relu1's block, which is add2's (shared through the
// add), alive until bn1's backward; bn1's value (relu1's) too, for the mask.
TEST(FusionResidual, TheBatchNormsGradientIsTheRelusBlock) {
  Context ctx = Context::cpu();
  Graph graph = net(2);
  graph.compile(ctx);
  const MemoryPlan& plan = graph.memory_plan();
  const auto at = [&](const std::string& name) { return static_cast<size_t>(index_of(graph, name)); };
  EXPECT_EQ(plan.fused_relu_grads, 2);
  EXPECT_EQ(plan.grad_block[at("bn1")], plan.grad_block[at("relu1")]);
  EXPECT_EQ(plan.grad_block[at("relu1")], plan.grad_block[at("add2")]) << "relu1 and add2 share through the add";
  EXPECT_EQ(plan.grad_block[at("bn3")], plan.grad_block[at("relu3")]);
  EXPECT_EQ(plan.grad_shared_with[at("bn2")], index_of(graph, "add2")) << "bn2's is add2's through the add";
  EXPECT_EQ(plan.value_block[at("bn1")], plan.value_block[at("relu1")]) << "relu1 runs in place";
  // Forward times are node positions among the layers (the graph's inputs are
  // nodes 0 and 1); bn1's backward runs at 2L - 1 - its forward time.
  const int layers = static_cast<int>(graph.nodes().size()) - 2;
  const int bn1_backward = 2 * layers - 1 - (index_of(graph, "bn1") - 2);
  EXPECT_GE(plan.value_blocks[static_cast<size_t>(plan.value_block[at("bn1")])].live.last, bn1_backward);
  EXPECT_GE(plan.grad_blocks[static_cast<size_t>(plan.grad_block[at("bn1")])].live.last, bn1_backward);
  EXPECT_EQ(find_overlap(plan.value_blocks, plan.values), "");
  EXPECT_EQ(find_overlap(plan.grad_blocks, plan.grads), "");

  Graph unfused = net(2);
  unfused.compile(ctx, {.fusion = false});
  EXPECT_EQ(unfused.memory_plan().fused_relu_grads, 0);
  EXPECT_NE(unfused.memory_plan().grad_block[at("bn1")], unfused.memory_plan().grad_block[at("relu1")]);
  EXPECT_LE(plan.grads.total, unfused.memory_plan().grads.total);
  // The fused backward reads y for its mask: its bytes count it.
  const Layer& bn1 = *graph.node("bn1").layer;
  EXPECT_EQ(bn1.bytes_moved(Pass::kBackward) - unfused.node("bn1").layer->bytes_moved(Pass::kBackward),
            2 * 8 * 6 * 6 * 4);
}

TEST(FusionResidual, CudnnFusesItsReluInTrainingOnNhwcHalfValuesInFoursOfChannels) {
  EXPECT_TRUE(cudnn_fuses_batch_norm_relu(Phase::kTraining, true, DType::kFloat16, 64));
  EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kInference, true, DType::kFloat16, 64)) << "no activation";
  EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kTraining, false, DType::kFloat16, 64)) << "NCHW";
  EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kTraining, true, DType::kBFloat16, 64));
  EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kTraining, true, DType::kFloat32, 64));
  EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kTraining, true, DType::kFloat16, 66));
}

// On a GPU: cuDNN runs a batch norm with a fused ReLU (forward and backward)
// for exactly the value types and channel counts the rule fuses. A failure
// here says the rule is too wide (a graph would fail at prepare) or too
// narrow (bf16 could fuse too).
TEST(FusionResidual, TheRuleIsWhatCudnnRuns) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0);
  for (DType values : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (int64_t channels : {64, 66}) {
      EXPECT_EQ(cudnn_runs_batch_norm_relu(ctx, Shape{4, channels, 7, 7}, values),
                cudnn_fuses_batch_norm_relu(Phase::kTraining, true, values, channels))
          << name_of(values) << ", " << channels << " channels";
    }
  }
}

TEST(FusionResidual, AFusedReluIsSetForAPhase) {
  Context ctx = Context::cpu();
  Graph graph = net(2);
  graph.compile(ctx);
  Layer& bn0 = *graph.node("bn0").layer;
  bn0.set_fused_relu(ctx, Phase::kInference, true);
  EXPECT_TRUE(bn0.fused_relu());
  EXPECT_FALSE(bn0.fused_relu_backward()) << "no backward in inference";
  bn0.set_fused_relu(ctx, Phase::kTraining, true);
  EXPECT_TRUE(bn0.fused_relu_backward());
  bn0.set_fused_relu(ctx, Phase::kTraining, false);
  EXPECT_FALSE(bn0.fused_relu_backward());
}

}  // namespace
}  // namespace glassbox
