// tests/test_input_gradients.cpp: gradients with respect to graph inputs
// (CompileOptions::input_gradients, Graph::input_gradient): against finite
// differences of the loss, through a convolution (LeNet) and through fan-out;
// kept alive by the memory plan until read; every refusal; both backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "graph/memory_plan.h"
#include "nets/nets.h"
#include "nets/registry.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

// The input `x` fans out to two linear layers whose outputs are added:
//   x (4,6) -> fc_a (5) --+
//   x (4,6) -> fc_b (5) --+-> add -> relu -> fc3 (3) -> loss
Graph fan_out_net() {
  GraphBuilder g;
  const Value x = g.input("x", {4, 6});
  const Value labels = g.input("labels", {4}, DType::kInt32);
  const Value a = g.linear(x, {.out_features = 5}, "fc_a");
  const Value b = g.linear(x, {.out_features = 5}, "fc_b");
  const Value h = g.relu(g.add({a, b}, "add"), "relu");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(h, {.out_features = 3}, "fc3"), labels));
}

void fill_fan_out(Context& ctx, const Graph& graph) {
  from_vector<float>(ctx, testing::random_values(24, 3), graph.input("x"));
  from_vector<int>(ctx, std::vector<int>{0, 2, 1, 2}, graph.input("labels"));
}

// One step's gradient with respect to input `name`.
std::vector<float> input_gradient_after_a_step(Context& ctx, Graph& graph, const std::string& name) {
  graph.zero_grad(ctx);
  graph.forward(ctx);
  graph.backward(ctx);
  return to_vector<float>(ctx, graph.input_gradient(name));
}

// The loss with input `name` set to `values` (a fresh forward).
double loss_at(Context& ctx, Graph& graph, const std::string& name, const std::vector<float>& values) {
  from_vector<float>(ctx, values, graph.input(name));
  graph.forward(ctx);
  return graph.loss(ctx);
}

// Central differences for the `count` elements with the largest |gradient|
// (all of them if count covers the tensor): the elements a wrong or missing
// gradient would show most, and the least troubled by rounding.
void expect_elements_match_differences(Context& ctx, Graph& graph, const std::string& name,
                                       const std::vector<float>& grad, size_t count, double eps) {
  const std::vector<float> x = to_vector<float>(ctx, graph.input(name));
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return std::fabs(grad[a]) > std::fabs(grad[b]); });
  order.resize(std::min(count, order.size()));
  for (size_t k : order) {
    std::vector<float> moved = x;
    moved[k] = x[k] + static_cast<float>(eps);
    const double up = loss_at(ctx, graph, name, moved);
    moved[k] = x[k] - static_cast<float>(eps);
    const double down = loss_at(ctx, graph, name, moved);
    const double numeric = (up - down) / (2 * eps);
    EXPECT_NEAR(grad[k], numeric, 2e-4 + 2e-2 * std::fabs(numeric)) << name << " element " << k;
  }
  from_vector<float>(ctx, x, graph.input(name));
}

// Along d = g / |g|, (L(x + eps d) - L(x - eps d)) / (2 eps) approaches |g|
// (tests/support/network_checks.h explains the form; here x moves, not w).
void expect_direction_matches_differences(Context& ctx, Graph& graph, const std::string& name,
                                          const std::vector<float>& grad) {
  const std::vector<float> x = to_vector<float>(ctx, graph.input(name));
  double norm = 0.0;
  for (float g : grad) norm += static_cast<double>(g) * g;
  norm = std::sqrt(norm);
  ASSERT_GT(norm, 0.0) << name << ": the input gradient is zero";
  std::vector<double> errors;
  for (double step : {1e-1, 3e-2, 1e-2}) {
    std::vector<float> up(x.size()), down(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      up[i] = x[i] + static_cast<float>(step * grad[i] / norm);
      down[i] = x[i] - static_cast<float>(step * grad[i] / norm);
    }
    const double numeric = (loss_at(ctx, graph, name, up) - loss_at(ctx, graph, name, down)) / (2 * step);
    errors.push_back(std::fabs(numeric - norm) / norm);
  }
  from_vector<float>(ctx, x, graph.input(name));
  EXPECT_LT(errors[2], 0.01) << name << ": |dL/dx| = " << norm << ", relative errors " << errors[0] << ", "
                             << errors[1] << ", " << errors[2];
}

TEST(InputGradients, FanOutWritesOnceThenAddsAndMatchesDifferences) {
  Context ctx = Context::cpu();
  Graph graph = fan_out_net();
  graph.compile(ctx, {.input_gradients = {"x"}});
  fill_fan_out(ctx, graph);
  // Backward reaches fc_b first (it comes later): it writes, fc_a adds.
  EXPECT_EQ(graph.node("fc_b").input_grad_modes[0], GradMode::kWrite);
  EXPECT_EQ(graph.node("fc_a").input_grad_modes[0], GradMode::kAdd);
  EXPECT_EQ(graph.input_gradient("x").raw(), graph.node("fc_a").input_grads[0].raw());
  EXPECT_EQ(graph.input_gradient("x").name(), "x gradient");
  const std::vector<float> grad = input_gradient_after_a_step(ctx, graph, "x");
  expect_elements_match_differences(ctx, graph, "x", grad, grad.size(), 1e-2);
  // A second step writes again rather than adding onto the first.
  EXPECT_EQ(input_gradient_after_a_step(ctx, graph, "x"), grad);
}

TEST(InputGradients, LeNetsImageGradientMatchesDifferences) {
  Context ctx = Context::cpu();
  Graph graph = lenet(2);
  graph.compile(ctx, {.input_gradients = {"images"}});
  fill_synthetic_batch(ctx, graph, 10);
  const std::vector<float> grad = input_gradient_after_a_step(ctx, graph, "images");
  ASSERT_EQ(grad.size(), 2u * 28 * 28);
  expect_direction_matches_differences(ctx, graph, "images", grad);
  // A step of 1e-2 moved two of these 40 pixels' paths across a ReLU or a max
  // pool's choice (6% off); 3e-3 keeps every path, and rounding stays far below the tolerance.
  expect_elements_match_differences(ctx, graph, "images", grad, 40, 3e-3);
}

// Asking for an input's gradient changes no other result: the parameter
// gradients are those of a graph compiled without it, bit for bit.
TEST(InputGradients, ChangeNoParameterGradient) {
  std::vector<std::vector<float>> grads;
  for (bool ask : {false, true}) {
    Context ctx = Context::cpu();
    Graph graph = lenet(2);
    CompileOptions options;
    if (ask) options.input_gradients = {"images"};
    graph.compile(ctx, options);
    fill_synthetic_batch(ctx, graph, 10);
    graph.zero_grad(ctx);
    graph.forward(ctx);
    graph.backward(ctx);
    grads.push_back(to_vector<float>(ctx, graph.gradients()));
  }
  EXPECT_EQ(grads[0], grads[1]);
}

// The plan keeps the gradient until after the step: with reuse it holds what
// it holds without, bit for bit, in a network where every other gradient
// shares memory.
TEST(InputGradients, ThePlanKeepsTheGradientUntilAfterTheStep) {
  std::vector<std::vector<float>> grads;
  for (MemoryReuse reuse : {MemoryReuse::kOn, MemoryReuse::kOff}) {
    Context ctx = Context::cpu();
    Graph graph = lenet(2);
    graph.compile(ctx, {.memory_reuse = reuse, .input_gradients = {"images"}});
    fill_synthetic_batch(ctx, graph, 10);
    grads.push_back(input_gradient_after_a_step(ctx, graph, "images"));
  }
  EXPECT_EQ(grads[0], grads[1]);
  const Graph graph = lenet(2);
  const std::vector<std::string> images = {"images"};
  const MemoryPlan plan = plan_activations(graph, Phase::kTraining, MemoryReuse::kOn, images);
  const int block = plan.grad_block[0];  // node 0: images
  ASSERT_GE(block, 0);
  EXPECT_EQ(plan.grad_blocks[static_cast<size_t>(block)].live.last, Lifetime::kAfterStep);
  EXPECT_EQ(find_overlap(plan.grad_blocks, plan.grads), "");
  EXPECT_EQ(plan_activations(graph, Phase::kTraining).grad_blocks.size() + 1, plan.grad_blocks.size());
}

TEST(InputGradients, RefusalsNameTheChoices) {
  auto refusal = [](std::vector<std::string> names, Phase phase = Phase::kTraining) {
    Context ctx = Context::cpu();
    Graph graph = fan_out_net();
    try {
      graph.compile(ctx, {.phase = phase, .input_gradients = std::move(names)});
    } catch (const ConfigError& e) {
      EXPECT_FALSE(graph.compiled());
      return std::string(e.what());
    }
    return std::string("compiled");
  };
  EXPECT_EQ(refusal({"pixels"}), "input_gradients: 'pixels' is not a node of the graph; float inputs: x");
  EXPECT_EQ(refusal({"x", "labels"}), "input_gradients: 'labels' is an input of int32, which has no gradient; float inputs: x");
  EXPECT_EQ(refusal({"fc_a"}), "input_gradients: 'fc_a' is a layer (Linear), not a graph input; float inputs: x");
  EXPECT_EQ(refusal({"x"}, Phase::kInference),
            "input_gradients: 'x' asks for a gradient, but the graph is compiled for inference (no backward); "
            "compile with Phase::kTraining");
  EXPECT_EQ(refusal({"x", "x"}), "compiled") << "a name given twice is one gradient";
}

TEST(InputGradients, ReadingOneThatWasNotAskedForSaysHow) {
  Context ctx = Context::cpu();
  Graph graph = fan_out_net();
  auto read = [&](std::string_view name) {
    try {
      graph.input_gradient(name);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  EXPECT_EQ(read("x"), "input_gradient: the graph is not compiled; call compile(ctx) first");
  graph.compile(ctx);
  EXPECT_EQ(read("x"), "input_gradient: 'x' was not asked for; compile with CompileOptions::input_gradients = {\"x\"}");
  EXPECT_EQ(read("fc_a"), "input_gradient: no input named 'fc_a'; inputs: x, labels");
  EXPECT_EQ(graph.node("x").grad.name(), "gradient of 'x' (none: not in CompileOptions::input_gradients)");
  EXPECT_FALSE(graph.node("fc_a").input_grads[0].defined()) << "no input gradient unless asked for";
}

class InputGradientDeviceTest : public testing::DeviceTest {};

// Each backend's input gradient against the CPU's: through linear layers and
// fan-out, and through LeNet's convolutions (cuDNN's backward-data).
TEST_P(InputGradientDeviceTest, MatchesTheCpu) {
  if (!ctx().device().is_cuda()) {
    GTEST_SKIP() << "compares a GPU with the CPU; on the CPU it would compare the CPU with itself";
  }
  struct Case {
    Graph (*build)();
    std::string input;
    void (*fill)(Context&, const Graph&);
  };
  const Case cases[] = {
      {fan_out_net, "x", fill_fan_out},
      {[] { return lenet(2); }, "images", [](Context& c, const Graph& g) { fill_synthetic_batch(c, g, 10); }},
  };
  for (const Case& c : cases) {
    Context cpu = Context::cpu();
    Graph reference = c.build();
    reference.compile(cpu, {.input_gradients = {c.input}});
    c.fill(cpu, reference);
    const std::vector<float> expected = input_gradient_after_a_step(cpu, reference, c.input);

    Graph graph = c.build();
    graph.compile(ctx(), {.input_gradients = {c.input}});
    c.fill(ctx(), graph);
    const std::vector<float> actual = input_gradient_after_a_step(ctx(), graph, c.input);
    testing::expect_close(actual, expected, 1e-5, c.input + " gradient");
  }
}

GLASSBOX_INSTANTIATE_ON_DEVICES(InputGradientDeviceTest);

}  // namespace
}  // namespace glassbox
