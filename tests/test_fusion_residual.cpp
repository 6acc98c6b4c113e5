// tests/test_fusion_residual.cpp: Note [A ReLU fused into its producer] and
// Note [A ReLU's backward fused into its producer] (graph/fusion.h) in a
// residual network: the ReLU after a batch norm (forward and backward) and
// after a residual add (forward). Which ReLUs each takes; the memory plan
// that makes the ReLU's gradient the batch norm's; and that a fused graph
// trains as the unfused one (losses, every parameter gradient, the parameters
// after three steps, an inference forward), in fp32, bf16 and fp16, on NCHW
// and NHWC values, on the CPU and (where one runs here) on a GPU.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/fusion.h"
#include "graph/memory_plan.h"
#include "layers/batch_norm/batch_norm.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"
#include "tests/support/fusion_runs.h"

namespace glassbox {
namespace {

// images -> bn0 -> relu0: bn0 reads the data, which gets no gradient, so it
//   takes relu0 in inference only (both or neither in training).
// conv1 -> bn1 -> relu1: fused, forward and backward. relu1's gradient is
//   also add2's (Note [Gradients shared through an add]).
// conv2 -> bn2 -> add2(bn2, relu1) -> relu2: add2 and relu2 fused into
//   bn2, forward and backward (Note [A residual add fused into its batch
//   norm]): relu1 is computed before bn2, and no reader of it comes after bn2
//   but add2.
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

class FusionResidualTest : public testing::DeviceTest {};

TEST_P(FusionResidualTest, ABatchNormOrAnAddTakesTheReluAfterItWhereItCan) {
  Context& ctx = this->ctx();
  for (Phase phase : {Phase::kTraining, Phase::kInference}) {
    const std::string expected =
        phase == Phase::kTraining ? "relu1<-bn1+backward add2<-bn2+backward relu2<-bn2+backward relu3<-bn3+backward"
                                  : "relu0<-bn0 relu1<-bn1 add2<-bn2 relu2<-bn2 relu3<-bn3";
    // cuDNN fuses a ReLU (and a residual add) into a training batch norm on
    // NHWC values only (Note [Batch norm and ReLU in one cuDNN call]).
    for (Precision precision : {Precision::kFp16, Precision::kBf16, Precision::kFp32}) {
      const std::string what = cat(phase == Phase::kTraining ? "training, " : "inference, ", flag_name_of(precision));
      Graph graph = net(2);
      graph.compile(ctx, {.precision = precision, .phase = phase, .layout = LayoutChoice::kNhwc});
      EXPECT_EQ(testing::fused_relus(graph), ctx.is_cuda() && phase == Phase::kInference ? "relu2<-add2" : expected)
          << what << " NHWC";
      for (const char* bn : {"bn0", "bn1", "bn2", "bn3"}) {
        EXPECT_EQ(graph.node(bn).layer->algorithms().find("runs apart: cuDNN refuses"), std::string::npos)
            << what << ": " << bn;
      }
      Graph unfused = net(2);
      unfused.compile(ctx, {.precision = precision, .phase = phase, .layout = LayoutChoice::kNhwc, .fusion = false});
      EXPECT_EQ(testing::fused_relus(unfused), "") << what;
    }
    Graph fp32 = net(2);
    fp32.compile(ctx, {.phase = phase, .layout = LayoutChoice::kNchw});
    EXPECT_EQ(testing::fused_relus(fp32), ctx.is_cuda() ? "relu2<-add2" : expected) << "fp32 NCHW";
  }
}

// On the CPU the fused passes compute the same floats in the same order as
// the ReLU, the add and the batch norm apart: in fp32, equal to the bit. In
// bf16 and fp16 the fused batch norm adds z to its fp32 result, where apart
// its output is rounded to 16 bits before the add: one rounding fewer, as in
// cuDNN's fused kernel. cuDNN's fused kernels are other kernels than its
// separate ones, in half precision: 2e-2. On a GPU in fp32 on NCHW values
// only the add takes a ReLU (an exact one); on NHWC values the batch norms'
// fused kernels are instances of the same persistent kernels with the ReLU
// (and the add) switched on (template flags of libcudnn_ops.so's
// batchnorm_fwtr_nhwc_semiPersist), which sum as the unfused ones: 1e-4.
TEST_P(FusionResidualTest, AFusedGraphTrainsAsTheUnfusedOne) {
  Context& ctx = this->ctx();
  for (LayoutChoice layout : {LayoutChoice::kNchw, LayoutChoice::kNhwc}) {
    for (Precision precision : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
      const double tolerance = precision != Precision::kFp32 ? 2e-2 : ctx.is_cuda() ? 1e-4 : 0.0;
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

// bn1's output gradient is relu1's block, alive until bn1's backward; bn1's
// value (relu1's) too, for the mask. bn2 does add2: add2's and relu2's
// values are bn2's block, bn2's gradient is relu2's, and relu1 (z) keeps a
// gradient of its own, which bn2's backward writes first.
TEST(FusionResidual, TheBatchNormsGradientIsTheRelusBlock) {
  Context ctx = Context::cpu();
  Graph graph = net(2);
  graph.compile(ctx);
  const MemoryPlan& plan = graph.memory_plan();
  const auto at = [&](const std::string& name) { return static_cast<size_t>(testing::node_index(graph, name)); };
  EXPECT_EQ(plan.fused_relu_grads, 3);
  EXPECT_EQ(plan.fused_adds, 1);
  EXPECT_EQ(plan.grad_block[at("bn1")], plan.grad_block[at("relu1")]);
  EXPECT_EQ(plan.grad_block[at("bn2")], plan.grad_block[at("relu2")]);
  EXPECT_EQ(plan.grad_block[at("add2")], plan.grad_block[at("relu2")]) << "never written: bn2's stands for it";
  EXPECT_NE(plan.grad_block[at("relu1")], plan.grad_block[at("relu2")]) << "z's gradient is its own";
  EXPECT_EQ(plan.grad_shared_with[at("relu1")], -1) << "a fused add shares nothing";
  EXPECT_EQ(plan.grad_shared_with[at("bn2")], -1);
  EXPECT_EQ(plan.grad_block[at("bn3")], plan.grad_block[at("relu3")]);
  EXPECT_EQ(plan.value_block[at("bn1")], plan.value_block[at("relu1")]) << "relu1 runs in place";
  EXPECT_EQ(plan.value_block[at("add2")], plan.value_block[at("bn2")]);
  EXPECT_EQ(plan.value_block[at("relu2")], plan.value_block[at("bn2")]);
  const Node& bn2 = graph.node("bn2");
  EXPECT_EQ(bn2.residual, testing::node_index(graph, "relu1"));
  ASSERT_EQ(bn2.input_values.size(), 2u) << "x, then z";
  EXPECT_EQ(bn2.input_values[1].raw(), graph.node("relu1").value.raw());
  EXPECT_EQ(bn2.input_grads[1].raw(), graph.node("relu1").grad.raw());
  EXPECT_EQ(bn2.input_grad_modes[1], GradMode::kWrite) << "the first gradient to reach relu1";
  EXPECT_EQ(graph.node("conv2").input_grad_modes[0], GradMode::kAdd) << "conv2 adds to relu1's after bn2";
  // Forward times are node positions among the layers (the graph's inputs are
  // nodes 0 and 1); bn1's backward runs at 2L - 1 - its forward time.
  const int layers = static_cast<int>(graph.nodes().size()) - 2;
  const int bn1_backward = 2 * layers - 1 - (testing::node_index(graph, "bn1") - 2);
  EXPECT_GE(plan.value_blocks[static_cast<size_t>(plan.value_block[at("bn1")])].live.last, bn1_backward);
  EXPECT_GE(plan.grad_blocks[static_cast<size_t>(plan.grad_block[at("bn1")])].live.last, bn1_backward);
  EXPECT_EQ(find_overlap(plan.value_blocks, plan.values), "");
  EXPECT_EQ(find_overlap(plan.grad_blocks, plan.grads), "");

  Graph unfused = net(2);
  unfused.compile(ctx, {.fusion = false});
  EXPECT_EQ(unfused.memory_plan().fused_relu_grads, 0);
  EXPECT_EQ(unfused.memory_plan().fused_adds, 0);
  EXPECT_NE(unfused.memory_plan().grad_block[at("bn1")], unfused.memory_plan().grad_block[at("relu1")]);
  EXPECT_LE(plan.grads.total, unfused.memory_plan().grads.total);
  // The fused backward reads y for its mask: its bytes count it.
  const Layer& bn1 = *graph.node("bn1").layer;
  EXPECT_EQ(bn1.bytes_moved(Pass::kBackward) - unfused.node("bn1").layer->bytes_moved(Pass::kBackward),
            2 * 8 * 6 * 6 * 4);
  // bn2 reads z in forward and writes its gradient in backward as well.
  const int64_t y_bytes = 2 * 8 * 6 * 6 * 4;
  EXPECT_EQ(graph.node("bn2").layer->bytes_moved(Pass::kForward) -
                unfused.node("bn2").layer->bytes_moved(Pass::kForward),
            y_bytes);
  EXPECT_EQ(graph.node("bn2").layer->bytes_moved(Pass::kBackward) -
                unfused.node("bn2").layer->bytes_moved(Pass::kBackward),
            2 * y_bytes);
}

// A projection block lists its shortcut after its main path (nets/residual.cpp):
// the add's inputs are two batch norms, and the later one, the shortcut's,
// takes the add (bn_b, before it, is z). Where z is no batch norm and comes
// after the branch's batch norm (ResNet-56's option A shortcut, a
// subsampling layer), nothing exists yet for the batch norm to add when it
// runs: the add keeps the ReLU.
Graph projection_net(bool shortcut_bn) {
  GraphBuilder g;
  const Value images = g.input("images", {2, 4, 6, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Conv2d::Options same{.out_channels = 8, .kernel = 3, .pad = 1, .bias = false};
  const Value x = g.relu(g.conv(images, same, "stem"), "stem_relu");
  const Value a = g.relu(g.batch_norm(g.conv(x, same, "conv_a"), {}, "bn_a"), "relu_a");
  const Value b = g.batch_norm(g.conv(a, same, "conv_b"), {}, "bn_b");
  const Value projected = g.conv(x, {.out_channels = 8, .kernel = 1, .bias = false}, "conv_s");
  const Value s = shortcut_bn ? g.batch_norm(projected, {}, "bn_s") : projected;
  const Value h = g.relu(g.add({b, s}, "add"), "relu");
  const Value logits = g.linear(g.flatten(g.global_avg_pool(h, "pool"), "flatten"), {.out_features = 5}, "out");
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

TEST(FusionResidual, TheLaterBatchNormOfAProjectionBlockTakesTheAdd) {
  Context ctx = Context::cpu();
  Graph graph = projection_net(true);
  graph.compile(ctx);
  EXPECT_EQ(testing::fused_relus(graph),
            "stem_relu<-stem relu_a<-bn_a+backward add<-bn_s+backward relu<-bn_s+backward");
  EXPECT_EQ(graph.node("bn_s").residual, testing::node_index(graph, "bn_b"));
  EXPECT_EQ(graph.node("bn_b").residual, -1);
  EXPECT_EQ(find_overlap(graph.memory_plan().value_blocks, graph.memory_plan().values), "");
  EXPECT_EQ(find_overlap(graph.memory_plan().grad_blocks, graph.memory_plan().grads), "");

  Graph late = projection_net(false);
  late.compile(ctx);
  EXPECT_EQ(testing::fused_relus(late), "stem_relu<-stem relu_a<-bn_a+backward relu<-add");
  EXPECT_EQ(late.node("bn_b").residual, -1);
}

TEST(FusionResidual, AProjectionBlockTrainsAsTheUnfusedOne) {
  Context ctx = Context::cpu();
  for (LayoutChoice layout : {LayoutChoice::kNchw, LayoutChoice::kNhwc}) {
    auto run = [&](bool fusion) {
      return testing::train_three_steps(ctx, projection_net(true), {.layout = layout, .fusion = fusion}, 5, "relu");
    };
    testing::expect_same_run(run(true), run(false), 0.0, cat(name_of(layout), ": "));
  }
}

// relu(bn(c) + c): z is the batch norm's own input. Its gradient would be
// the batch norm's dx and dz at once, and the batch norm's backward cannot be
// the first to write it (Note [A residual add fused into its batch norm]):
// the add keeps the ReLU, and the graph trains as the unfused one.
Graph self_residual_net() {
  GraphBuilder g;
  const Value images = g.input("images", {2, 4, 6, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Value c = g.relu(g.conv(images, {.out_channels = 8, .kernel = 3, .pad = 1, .bias = false}, "conv"), "conv_relu");
  const Value h = g.relu(g.add({g.batch_norm(c, {}, "bn"), c}, "add"), "relu");
  const Value logits = g.linear(g.flatten(g.global_avg_pool(h, "pool"), "flatten"), {.out_features = 5}, "out");
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

TEST(FusionResidual, ABatchNormDoesNotTakeAnAddOfItsOwnInput) {
  Context ctx = Context::cpu();
  Graph graph = self_residual_net();
  graph.compile(ctx);
  EXPECT_EQ(testing::fused_relus(graph), "conv_relu<-conv relu<-add");
  EXPECT_EQ(graph.node("bn").residual, -1);
  for (LayoutChoice layout : {LayoutChoice::kNchw, LayoutChoice::kNhwc}) {
    auto run = [&](bool fusion) {
      return testing::train_three_steps(ctx, self_residual_net(), {.layout = layout, .fusion = fusion}, 5, "relu");
    };
    testing::expect_same_run(run(true), run(false), 0.0, cat(name_of(layout), ": "));
  }
}

// Note [Gradients shared through an add] with a ReLU whose batch norm runs
// its backward: the ReLU reads the add's shared gradient block in the batch
// norm's backward, so another reader of the add's other input that runs
// between the batch norm and the ReLU would add into the block before it is
// read. relu_net: x = conv_x(images); bn(x); conv_c(x); add(relu(bn), x).
// residual_net: the same through a residual add that bn does.
const Conv2d::Options kSame4{.out_channels = 4, .kernel = 3, .pad = 1, .bias = false};

Value concat_head(GraphBuilder& g, Value a, Value c, Value labels) {
  const Value pooled = g.global_avg_pool(g.concat({a, c}, "cat"), "pool");
  return g.softmax_cross_entropy(g.linear(g.flatten(pooled, "flatten"), {.out_features = 5}, "out"), labels);
}

Graph late_reader_relu_net() {
  GraphBuilder g;
  const Value images = g.input("images", {2, 3, 6, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Value x = g.conv(images, kSame4, "conv_x");
  const Value b = g.batch_norm(x, {}, "bn");
  const Value c = g.conv(x, kSame4, "conv_c");
  const Value a = g.add({g.relu(b, "relu"), x}, "add");
  return std::move(g).build(concat_head(g, a, c, labels));
}

Graph late_reader_residual_net() {
  GraphBuilder g;
  const Value images = g.input("images", {2, 3, 6, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Value z = g.relu(g.conv(images, kSame4, "conv_z"), "relu_z");
  const Value q = g.conv(images, kSame4, "conv_q");
  const Value b = g.batch_norm(g.conv(z, kSame4, "conv_b"), {}, "bn");
  const Value c = g.conv(q, kSame4, "conv_c");
  const Value a = g.add({g.relu(g.add({b, z}, "res"), "relu"), q}, "add");
  return std::move(g).build(concat_head(g, a, c, labels));
}

TEST(FusionResidual, AnAddsSharedGradientIsReadWhereTheFusedReluReadsIt) {
  Context ctx = Context::cpu();
  for (Graph (*make)() : {late_reader_relu_net, late_reader_residual_net}) {
    Graph graph = make();
    graph.compile(ctx);
    const bool relu_net = make == late_reader_relu_net;
    const std::string what = relu_net ? "relu_net" : "residual_net";
    const MemoryPlan& plan = graph.memory_plan();
    const auto at = [&](const char* name) { return static_cast<size_t>(testing::node_index(graph, name)); };
    EXPECT_EQ(plan.grad_block[at("bn")], plan.grad_block[at("add")]) << what << ": the ReLU's input shares";
    const size_t other = at(relu_net ? "conv_x" : "conv_q");
    EXPECT_EQ(plan.grad_shared_with[other], -1) << what << ": conv_c would add into the block before bn reads it";
    EXPECT_NE(plan.grad_block[other], plan.grad_block[at("add")]) << what;
    EXPECT_EQ(find_overlap(plan.grad_blocks, plan.grads), "") << what;
    for (LayoutChoice layout : {LayoutChoice::kNchw, LayoutChoice::kNhwc}) {
      auto run = [&](bool fusion, MemoryReuse reuse) {
        return testing::train_three_steps(ctx, make(), {.memory_reuse = reuse, .layout = layout, .fusion = fusion},
                                          5, "out");
      };
      const std::string where = cat(what, " ", name_of(layout), ": ");
      testing::expect_same_run(run(true, MemoryReuse::kOn), run(false, MemoryReuse::kOff), 0.0, where);
    }
  }
}

// Without memory reuse nothing runs in place, so no ReLU is fused and no add.
TEST(FusionResidual, WithoutMemoryReuseNoAddIsFused) {
  Context ctx = Context::cpu();
  Graph graph = projection_net(true);
  graph.compile(ctx, {.memory_reuse = MemoryReuse::kOff});
  EXPECT_EQ(graph.memory_plan().fused_adds, 0);
  EXPECT_EQ(graph.node("bn_s").residual, -1);
}

TEST(FusionResidual, CudnnFusesItsReluInTrainingOnNhwcValues) {
  for (bool residual : {false, true}) {
    for (DType values : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      const std::string what = cat(name_of(values), residual ? ", with a residual add" : ", ReLU only");
      EXPECT_TRUE(cudnn_fuses_batch_norm_relu(Phase::kTraining, true, values, 64, residual)) << what;
      EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kInference, true, values, 64, residual))
          << what << ": no activation";
      EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kTraining, false, values, 64, residual)) << what << ": NCHW";
      // Channels in fours: for the residual add only.
      EXPECT_TRUE(cudnn_fuses_batch_norm_relu(Phase::kTraining, true, values, 66, false)) << what;
      EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kTraining, true, values, 66, true)) << what;
    }
    EXPECT_FALSE(cudnn_fuses_batch_norm_relu(Phase::kTraining, true, DType::kInt32, 64, residual)) << "int32";
  }
}

// On a GPU: cuDNN runs a batch norm with a fused ReLU (forward and backward)
// for every value type and channel count the rule fuses; a failure says the
// rule is too wide for this cuDNN. Where the rule fuses, the size question
// and the layer's compile-time question (the sizes, then a run on two
// samples) must agree with the run: where the layer's passes a call that then
// fails, the step fails instead of keeping the ReLU apart. Where cuDNN also
// runs one the rule does not fuse, the rule is only narrower than it could
// be (a speed question, not a failure): the test names each such case in
// its output, and cuDNN's status for each refusal.
TEST(FusionResidual, TheRuleIsWhatCudnnRuns) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0);
  for (bool residual : {false, true}) {
    for (DType values : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      for (int64_t channels : {64, 66}) {
        const std::string refused = cudnn_batch_norm_relu_refusal(ctx, Shape{4, channels, 7, 7}, values, residual);
        const bool fused = cudnn_fuses_batch_norm_relu(Phase::kTraining, true, values, channels, residual);
        const std::string what = cat(name_of(values), ", ", channels, " channels",
                                     residual ? ", with a residual add" : "", ": the rule ",
                                     fused ? "fuses" : "does not fuse", ", cuDNN ",
                                     refused.empty() ? "runs it" : "refuses it (" + refused + ")");
        if (fused) {
          const std::string sizes =
              cudnn_fused_batch_norm_size_refusal(ctx, Shape{4, channels, 7, 7}, values, residual);
          EXPECT_EQ(sizes.empty(), refused.empty()) << what << "; the sizes: " << (sizes.empty() ? "given" : sizes);
          const std::string compiled = cudnn_fused_batch_norm_refusal(ctx, Shape{4, channels, 7, 7}, values, residual);
          EXPECT_EQ(compiled.empty(), refused.empty()) << what << "; at compile time: " << compiled;
          EXPECT_TRUE(refused.empty()) << what;
        } else if (refused.empty()) {
          std::cout << "[ NOTE     ] rule narrower than cuDNN: " << what << "\n";
        }
      }
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

// Layer::set_fused_relu with a residual: only with the ReLU, only where the
// layer can (a convolution cannot), and forward and backward then count z.
TEST(FusionResidual, ALayerRefusesAResidualItCannotTakeAndCountsIt) {
  Context ctx = Context::cpu();
  Graph graph = net(2);
  graph.compile(ctx);
  auto error_of = [](const std::function<void()>& f) { return testing::message_of<Error>(f); };
  Layer& conv1 = *graph.node("conv1").layer;
  EXPECT_EQ(error_of([&] { conv1.set_fused_relu(ctx, Phase::kTraining, true, true); }),
            "conv1 (Conv2d): cannot add a residual and apply a ReLU to its output on cpu in training");
  Layer& bn3 = *graph.node("bn3").layer;
  EXPECT_EQ(error_of([&] { bn3.set_fused_relu(ctx, Phase::kTraining, false, true); }),
            "bn3 (BatchNorm2d): a fused residual add comes with its ReLU (set_fused_relu with fused = true)");
  bn3.set_fused_relu(ctx, Phase::kTraining, true, true);
  EXPECT_TRUE(bn3.fused_residual());
  bn3.prepare(ctx, {});
  const Node& node = graph.node("bn3");
  EXPECT_EQ(error_of([&] {
              bn3.forward(ctx, {.inputs = node.input_values, .output = node.value, .params = node.params});
            }),
            "bn3 (BatchNorm2d): forward with 1 input(s), prepared for 1 and a residual");
  const std::vector<Tensor> narrow_z = {node.input_values[0], graph.node("relu2").value};  // 8 channels, not 12
  EXPECT_EQ(error_of([&] { bn3.forward(ctx, {.inputs = narrow_z, .output = node.value, .params = node.params}); }),
            "bn3 (BatchNorm2d): the residual has shape (2, 8, 6, 6), expected (2, 12, 6, 6)");
  const std::vector<GradMode> modes(1, GradMode::kWrite);
  EXPECT_EQ(error_of([&] {
              bn3.backward(ctx, {.inputs = node.input_values, .output = node.value, .output_grad = node.grad,
                                 .input_grads = node.input_grads, .input_grad_modes = modes, .params = node.params,
                                 .param_grads = node.param_grads});
            }),
            "bn3 (BatchNorm2d): backward needs 1 input(s), input gradient(s) and grad mode(s), and the fused "
            "residual's; got 1, 1 and 1");
  bn3.set_fused_relu(ctx, Phase::kTraining, true, false);
  EXPECT_FALSE(bn3.fused_residual());
}

}  // namespace
}  // namespace glassbox
