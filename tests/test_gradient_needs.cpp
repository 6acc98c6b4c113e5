// tests/test_gradient_needs.cpp: Note [Only what trains gets a gradient]
// (graph/memory_plan.h): values computed from the data alone get no gradient,
// the layers that make them run no backward, and no parameter gradient changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/builder.h"
#include "graph/memory_plan.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

// The data's max pooling feeds a batch norm (trains) and, around it, a
// residual add (a data-only term):
//   x (2,3,6,6) -> pool -> bn -> relu -> conv --+-> add -> flat -> fc -> loss
//                    +--------------------------+
Graph data_first_net() {
  GraphBuilder g;
  const Value x = g.input("x", {2, 3, 6, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Value pool = g.max_pool(x, {.kernel = 2}, "pool");
  const Value bn = g.relu(g.batch_norm(pool, {}, "bn"), "relu");
  const Value conv = g.conv(bn, {.out_channels = 3, .kernel = 3, .pad = 1}, "conv");
  const Value sum = g.add({pool, conv}, "add");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(g.flatten(sum, "flat"), {.out_features = 4}, "fc"),
                                                    labels));
}

// Residual adds around data-only values:
//   x (2,8,6,6) -> pool -> conv1 -> bn1 -> add1(bn1, pool) -> relu1   (z is the data's pooling)
//                   +----> bn2 -> add2(bn2, relu1) -> relu2 -> ...     (the batch norm's input is)
// `twice`: the data read as concat(x, x), 16 channels, first: on a GPU a
// Concat writes NHWC from the NCHW data, where a pooling writes NHWC only
// from NHWC, so the net's values can be channels-last there.
Graph data_residual_net_of(bool twice) {
  GraphBuilder g;
  const Value x = g.input("x", {2, 8, 6, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Value pool = g.max_pool(twice ? g.concat({x, x}, "twice") : x, {.kernel = 2}, "pool");
  const int channels = twice ? 16 : 8;
  const Value bn1 = g.batch_norm(g.conv(pool, {.out_channels = channels, .kernel = 3, .pad = 1}, "conv1"), {}, "bn1");
  const Value relu1 = g.relu(g.add({bn1, pool}, "add1"), "relu1");
  const Value relu2 = g.relu(g.add({g.batch_norm(pool, {}, "bn2"), relu1}, "add2"), "relu2");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(g.flatten(relu2, "flat"), {.out_features = 4}, "fc"),
                                                    labels));
}

Graph data_residual_net() { return data_residual_net_of(/*twice=*/false); }

void fill(Context& ctx, const Graph& graph) {
  const Shape& shape = graph.node("x").shape;
  from_vector<float>(ctx, testing::random_values(static_cast<size_t>(shape.numel()), 7), graph.input("x"));
  from_vector<int>(ctx, std::vector<int>{1, 3}, graph.input("labels"));
}

std::vector<float> parameter_gradients_of_a_step(Context& ctx, Graph& graph) {
  fill(ctx, graph);
  graph.zero_grad(ctx);
  graph.forward(ctx);
  graph.backward(ctx);
  return to_vector<float>(ctx, graph.gradients());
}

TEST(GradientNeeds, OnlyValuesDownstreamOfAParameterGetAGradient) {
  const Graph graph = data_first_net();
  const MemoryPlan plan = plan_activations(graph, Phase::kTraining);
  auto wants = [&](std::string_view name) {
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
      if (graph.nodes()[i].name == name) return static_cast<bool>(plan.wants_grad[i]);
    }
    ADD_FAILURE() << "no node " << name;
    return false;
  };
  EXPECT_FALSE(wants("x"));
  EXPECT_FALSE(wants("pool"));
  for (const char* name : {"bn", "relu", "conv", "add", "flat", "fc"}) EXPECT_TRUE(wants(name)) << name;
  EXPECT_FALSE(wants("loss"));  // it starts backward with 1
  const auto pool = static_cast<size_t>(std::find_if(graph.nodes().begin(), graph.nodes().end(),
                                                     [](const Node& n) { return n.name == "pool"; }) -
                                        graph.nodes().begin());
  EXPECT_EQ(plan.grad_block[pool], -1);
  // Asked for the data's gradient, everything on its way gets one.
  const std::vector<std::string> x = {"x"};
  const MemoryPlan asked = plan_activations(graph, Phase::kTraining, MemoryReuse::kOn, x);
  EXPECT_TRUE(asked.wants_grad[pool]);
  EXPECT_GE(asked.grad_block[pool], 0);
  EXPECT_EQ(find_overlap(plan.grad_blocks, plan.grads), "");
}

TEST(GradientNeeds, TheLayersBeforeTheFirstThatTrainsRunNoBackward) {
  Context ctx = Context::cpu();
  Graph graph = data_first_net();
  graph.compile(ctx, {.layer_timing = true});
  EXPECT_FALSE(graph.node("pool").runs_backward);
  EXPECT_EQ(graph.node("pool").grad.name(), "gradient of 'pool' (none: no layer before it trains)");
  EXPECT_TRUE(graph.node("bn").runs_backward);
  EXPECT_FALSE(graph.node("bn").input_grads[0].defined()) << "the batch norm's input is the data's pooling";
  EXPECT_FALSE(graph.node("add").input_grads[0].defined()) << "the add's data-only term";
  EXPECT_TRUE(graph.node("conv").grad.defined());  // the add's own (Note [Gradients shared through an add])
  EXPECT_TRUE(graph.node("loss").runs_backward);
  // A ReLU's backward is fused into a batch norm only where the batch norm writes dx (graph/fusion.h).
  EXPECT_LT(graph.node("relu").backward_fused_into, 0);
  parameter_gradients_of_a_step(ctx, graph);
  for (const SpanTime& span : graph.spans()) {
    if (span.node >= 0 && graph.nodes()[static_cast<size_t>(span.node)].name == "pool") {
      EXPECT_EQ(span.pass, Pass::kForward) << "pool ran a " << pass_name(span.pass) << " pass";
    }
  }
}

// The parameter gradients are those of a plan that computes every gradient
// (asked for the data's), bit for bit, with and without memory reuse, in
// every precision: Note [Fusion does not follow the input gradients asked
// for] (graph/fusion.h) keeps a 16-bit graph's roundings the same.
TEST(GradientNeeds, ChangeNoParameterGradient) {
  for (Graph (*build)() : {data_first_net, data_residual_net}) {
    for (Precision precision : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
      std::vector<std::vector<float>> grads;
      for (MemoryReuse reuse : {MemoryReuse::kOn, MemoryReuse::kOff}) {
        for (bool ask : {false, true}) {
          Context ctx = Context::cpu();
          Graph graph = build();
          CompileOptions options{.precision = precision, .memory_reuse = reuse};
          if (ask) options.input_gradients = {"x"};
          graph.compile(ctx, options);
          grads.push_back(parameter_gradients_of_a_step(ctx, graph));
        }
      }
      for (size_t k = 1; k < grads.size(); ++k) {
        EXPECT_EQ(grads[k], grads[0]) << "run " << k << " in " << name_of(precision);
      }
    }
  }
}

// Note [A residual add fused into its batch norm] takes neither add: add1's
// z has no gradient for the batch norm to write (cuDNN's fused backward
// needs one), and bn2's input none, asked for or not.
TEST(GradientNeeds, NoResidualAddIsFusedAroundADataOnlyValue) {
  for (bool ask : {false, true}) {
    Context ctx = Context::cpu();
    Graph graph = data_residual_net();
    CompileOptions options;
    if (ask) options.input_gradients = {"x"};
    graph.compile(ctx, options);
    EXPECT_LT(graph.node("bn1").residual, 0) << "asked: " << ask;
    EXPECT_LT(graph.node("bn2").residual, 0) << "asked: " << ask;
    EXPECT_LT(graph.node("add1").backward_fused_into, 0) << "asked: " << ask;
  }
}

class GradientNeedsDeviceTest : public testing::DeviceTest {};

// Each backend's parameter gradients against the CPU's: on CUDA the batch
// norm's dx goes to scratch (Note [BatchNorm2d scratch dx]) and the Linear
// runs no backward-data.
TEST_P(GradientNeedsDeviceTest, MatchesTheCpu) {
  if (!ctx().device().is_cuda()) {
    GTEST_SKIP() << "compares a GPU with the CPU; on the CPU it would compare the CPU with itself";
  }
  for (Graph (*build)() : {data_first_net, data_residual_net}) {
    Context cpu = Context::cpu();
    Graph reference = build();
    reference.compile(cpu);
    const std::vector<float> expected = parameter_gradients_of_a_step(cpu, reference);
    Graph graph = build();
    graph.compile(ctx());
    testing::expect_close(parameter_gradients_of_a_step(ctx(), graph), expected, 1e-4, "parameter gradients");
  }
}

// In fp16 on NHWC values cuDNN's batch norm can take a residual add and its
// ReLU: a data-only z must not be given it (its fused backward needs z's gradient).
TEST_P(GradientNeedsDeviceTest, TrainsInFp16OnNhwcValues) {
  Graph graph = data_residual_net_of(/*twice=*/true);
  graph.compile(ctx(), {.precision = Precision::kFp16, .layout = LayoutChoice::kNhwc});
  if (ctx().device().is_cuda()) {
    ASSERT_TRUE(graph.node("bn1").channels_last) << "the case the rule is for: bn1 NHWC, where cuDNN could fuse z";
  }
  EXPECT_LT(graph.node("bn1").residual, 0);
  const std::vector<float> grads = parameter_gradients_of_a_step(ctx(), graph);
  EXPECT_TRUE(std::all_of(grads.begin(), grads.end(), [](float g) { return std::isfinite(g); }));
}

GLASSBOX_INSTANTIATE_ON_DEVICES(GradientNeedsDeviceTest);

}  // namespace
}  // namespace glassbox
