// tests/test_graph.cpp: the builder's checks, compile's memory plan and
// wiring, and a graph-level finite-difference check through fan-out.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

// A small residual network: fc1's output fans out to fc2 and the skip add.
//   images (4,6) -> fc1 (5) -> relu -> fc2 (5) -> add(relu, fc2) -> fc3 (3) -> loss
Graph residual_net() {
  GraphBuilder g;
  const Value x = g.input("images", {4, 6});
  const Value labels = g.input("labels", {4}, DType::kInt32);
  const Value h = g.relu(g.linear(x, {.out_features = 5}, "fc1"));
  const Value skip = g.add({h, g.linear(h, {.out_features = 5}, "fc2")}, "add");
  const Value loss = g.softmax_cross_entropy(g.linear(skip, {.out_features = 3}, "fc3"), labels);
  return std::move(g).build(loss);
}

void fill(Context& ctx, const Graph& graph) {
  from_vector<float>(ctx, testing::random_values(24, 5), graph.input("images"));
  from_vector<int>(ctx, std::vector<int>{0, 2, 1, 2}, graph.input("labels"));
}

TEST(GraphBuilder, NamesLayersByTypeUnlessGiven) {
  GraphBuilder g;
  Value x = g.input("images", {2, 8});
  x = g.relu(g.linear(x, {.out_features = 4}));
  x = g.relu(g.linear(x, {.out_features = 4}, "fc_named"));
  const Value logits = g.linear(x, {.out_features = 3});
  const Value loss = g.softmax_cross_entropy(logits, g.input("labels", {2}, DType::kInt32));
  const Graph graph = std::move(g).build(loss);
  std::vector<std::string> names;
  for (const Node& n : graph.nodes()) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"images", "fc1", "relu1", "fc_named", "relu2", "fc2", "labels", "loss"}));
}

TEST(GraphBuilder, ShapeErrorsNameTheLayerAndShapes) {
  GraphBuilder g;
  const Value x = g.input("images", {2, 3, 8, 8});
  try {
    g.linear(x, {.out_features = 10}, "fc6");
    FAIL() << "a rank-4 input reached a linear layer";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "fc6 (Linear): expects (N, features) input, got (2, 3, 8, 8); flatten it first");
  }
}

TEST(GraphBuilder, RejectsAnUnconnectedInput) {
  GraphBuilder g;
  const Value x = g.input("images", {2, 4});
  g.input("extra", {2, 4});
  const Value loss = g.softmax_cross_entropy(g.linear(x, {.out_features = 3}), g.input("labels", {2}, DType::kInt32));
  try {
    std::move(g).build(loss);
    FAIL() << "built a graph with an unconnected input";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "input 'extra' is not connected to any layer");
  }
}

TEST(GraphBuilder, RejectsAnUnusedLayerOutput) {
  GraphBuilder g;
  const Value x = g.input("images", {2, 4});
  g.relu(x, "dangling");
  const Value loss = g.softmax_cross_entropy(g.linear(x, {.out_features = 3}), g.input("labels", {2}, DType::kInt32));
  try {
    std::move(g).build(loss);
    FAIL() << "built a graph with a dangling layer";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "the output of 'dangling' (ReLU) is not used by any layer and is not the loss");
  }
}

TEST(GraphBuilder, RejectsANonLossEnd) {
  GraphBuilder g;
  const Value logits = g.linear(g.input("images", {2, 4}), {.out_features = 3}, "fc8");
  try {
    std::move(g).build(logits);
    FAIL() << "built a graph that ends in a linear layer";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "build: 'fc8' (Linear) is not a loss layer; end the graph with softmax_cross_entropy");
  }
}

// A name heads its layer's messages and names its parameters: one with a
// control character (a NUL would cut the message that quotes it, an escape
// sequence rewrite the terminal) or past 256 bytes is refused, quoted
// escaped and cut, before a layer's own checks quote it.
TEST(GraphBuilder, NamesWithControlCharactersOrPast256BytesAreRefused) {
  GraphBuilder g;
  const Value x = g.input("images", {2, 4});
  const std::string rule = "a graph node's name is 256 bytes at most, with no control character (it heads its "
                           "layer's messages and names its parameters in checkpoints), got '";
  EXPECT_EQ(testing::message_of<ConfigError>(
                [&] { g.conv(x, {.out_channels = 0}, std::string("evil\x1b[2J\0tail", 13)); }),
            rule + "evil\\x1b[2J\\x00tail' (13 bytes)");
  EXPECT_EQ(testing::message_of<ConfigError>([&] { g.input("line\nbreak", {2}); }),
            rule + "line\\nbreak' (10 bytes)");
  EXPECT_EQ(testing::message_of<ConfigError>([&] { g.relu(x, std::string(257, 'a')); }),
            rule + std::string(40, 'a') + "... (257 bytes)' (257 bytes)");
  EXPECT_EQ(testing::message_of<ConfigError>(
                [&] { g.softmax_cross_entropy(x, g.input("labels", {2}, DType::kInt32), "loss\t"); }),
            rule + "loss\\t' (5 bytes)");
  EXPECT_NO_THROW(g.relu(x, std::string(256, 'a')));
  EXPECT_NO_THROW(g.relu(x, "\xcf\x83-relu"));  // UTF-8 is a name's
}

TEST(GraphBuilder, RejectsDuplicateNamesAndForeignValues) {
  GraphBuilder g;
  const Value x = g.input("images", {2, 4});
  g.relu(x, "r");
  try {
    g.relu(x, "r");
    FAIL() << "two nodes named 'r'";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "the name 'r' is used twice in one graph");
  }
  try {
    g.input("", {2, 4});
    FAIL() << "an input without a name";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "a graph node needs a name");
  }
  GraphBuilder other;
  const Value foreign = other.input("images", {2, 4});
  try {
    g.relu(foreign, "r2");
    FAIL() << "accepted a value from another graph";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "r2 (ReLU) input 0: the value does not belong to this graph (node 0)");
  }
}

// A builder that has built its graph is spent: its Values name the graph's
// nodes, and a new node would take an old one's index.
TEST(GraphBuilder, ASpentBuilderRefusesMore) {
  GraphBuilder g;
  const Value x = g.input("images", {2, 4});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Value loss = g.softmax_cross_entropy(g.linear(x, {.out_features = 3}, "fc"), labels);
  const Graph graph = std::move(g).build(loss);
  const std::string spent = "this GraphBuilder has built its graph, which holds its nodes now; start a new "
                            "GraphBuilder for another graph";
  // NOLINTNEXTLINE(bugprone-use-after-move): the use after the move is what is tested
  EXPECT_EQ(testing::message_of<Error>([&] { g.input("more", {2, 4}); }), "input: " + spent);
  EXPECT_EQ(testing::message_of<Error>([&] { g.relu(x, "r"); }), "r (ReLU): " + spent);
  EXPECT_EQ(testing::message_of<Error>([&] { (void)g.shape(x); }), "shape: " + spent);
  EXPECT_EQ(graph.nodes().size(), 4u);
}

TEST(GraphBuilder, RejectsLabelsOfTheWrongType) {
  GraphBuilder g;
  const Value logits = g.linear(g.input("images", {2, 4}), {.out_features = 3});
  const Value labels = g.input("labels", {2});  // float32: a common slip
  try {
    g.softmax_cross_entropy(logits, labels);
    FAIL() << "float labels accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "loss (SoftmaxCrossEntropy): input 1 ('labels') is float32, expected int32");
  }
}

TEST(Graph, FanOutWritesOnceThenAdds) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  graph.compile(ctx);
  // relu1's output feeds fc2 and add; backward reaches add first (it comes later), so add writes, fc2 adds.
  const Node& add = graph.node("add");
  const Node& fc2 = graph.node("fc2");
  EXPECT_EQ(add.input_grad_modes[0], GradMode::kWrite);
  EXPECT_EQ(fc2.input_grad_modes[0], GradMode::kAdd);
  EXPECT_FALSE(graph.node("fc1").input_grads[0].defined()) << "the images need no gradient";
}

TEST(Graph, ParametersLiveInOneFlatBuffer) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  graph.compile(ctx);
  EXPECT_EQ(graph.parameter_count(), (6 * 5 + 5) + (5 * 5 + 5) + (5 * 3 + 3));
  const auto* begin = static_cast<const char*>(graph.parameters().raw());
  const auto* end = begin + graph.parameters().bytes();
  for (const Node& node : graph.nodes()) {
    for (const Tensor& p : node.params) {
      EXPECT_GE(static_cast<const char*>(p.raw()), begin);
      EXPECT_LE(static_cast<const char*>(p.raw()) + p.bytes(), end);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p.raw()) % 256, 0u) << "parameters are 256-byte aligned";
    }
  }
}

TEST(Graph, InitialisationIsSeededAndReproducible) {
  auto weights = [](uint64_t seed) {
    Context ctx = Context::cpu();
    Graph graph = residual_net();
    graph.compile(ctx, {.seed = seed});
    return to_vector<float>(ctx, graph.node("fc1").params[0]);
  };
  EXPECT_EQ(weights(3), weights(3));
  EXPECT_NE(weights(3), weights(4));
  // Linear weights: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = 6.
  for (float w : weights(3)) EXPECT_LE(std::fabs(w), 1.0f / std::sqrt(6.0f));
}

// The whole graph's backward (fan-out included) against central differences of
// the whole graph's loss, for every parameter of every layer.
TEST(Graph, BackwardMatchesFiniteDifferencesThroughFanOut) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  graph.compile(ctx);
  fill(ctx, graph);
  graph.zero_grad(ctx);
  graph.forward(ctx);
  graph.backward(ctx);
  const std::vector<float> analytic = to_vector<float>(ctx, graph.gradients());
  std::vector<float> params = to_vector<float>(ctx, graph.parameters());
  const double eps = 1e-2;
  int checked = 0;
  for (const Node& node : graph.nodes()) {
    for (const Tensor& p : node.params) {
      const size_t first = (static_cast<const char*>(p.raw()) - static_cast<const char*>(graph.parameters().raw())) / 4;
      for (int64_t i = 0; i < p.numel(); i += 3) {  // every third element of every parameter
        const size_t k = first + static_cast<size_t>(i);
        const float original = params[k];
        params[k] = original + static_cast<float>(eps);
        from_vector<float>(ctx, params, graph.parameters());
        graph.forward(ctx);
        const double up = graph.loss(ctx);
        params[k] = original - static_cast<float>(eps);
        from_vector<float>(ctx, params, graph.parameters());
        graph.forward(ctx);
        const double down = graph.loss(ctx);
        params[k] = original;
        const double numeric = (up - down) / (2 * eps);
        EXPECT_NEAR(analytic[k], numeric, 1e-3 + 1e-2 * std::fabs(numeric)) << node.name << " parameter element " << i;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20);
}

TEST(Graph, AStepAllocatesNothing) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  graph.compile(ctx);
  fill(ctx, graph);
  const MemoryStats before = ctx.memory();
  graph.zero_grad(ctx);
  graph.forward(ctx);
  graph.backward(ctx);
  const MemoryStats after = ctx.memory();
  EXPECT_EQ(after.current_total, before.current_total);
  EXPECT_EQ(after.peak_total, before.peak_total);
  EXPECT_GT(before.current[static_cast<int>(MemoryCategory::kParameters)], 0);
  EXPECT_GT(before.current[static_cast<int>(MemoryCategory::kActivations)], 0);
  EXPECT_GT(before.current[static_cast<int>(MemoryCategory::kActivationGrads)], 0);
}

TEST(Graph, UseBeforeCompileAndWrongDeviceAreErrors) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  try {
    graph.forward(ctx);
    FAIL() << "forward ran before compile";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "forward: the graph is not compiled; call compile(ctx) first");
  }
  try {
    graph.reset_carried_state(ctx);
    FAIL() << "carried state reset before compile";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "reset_carried_state: the graph is not compiled; call compile(ctx) first");
  }
  try {
    graph.input("images");
    FAIL() << "an input's tensor before compile";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "input 'images': compile the graph before filling its inputs");
  }
  graph.compile(ctx);
  try {
    graph.input("pixels");
    FAIL() << "found an input that does not exist";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "no input named 'pixels'; inputs: images, labels");
  }
  try {
    graph.layer_times();
    FAIL() << "layer times without layer_timing";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "layer_times: compile with CompileOptions::layer_timing = true");
  }
}

// A forward that throws part-way (a label out of range, a callback's error)
// leaves values that are not one forward's: the loss and backward refuse
// them, not read the loss of the forward before, until a forward runs whole.
TEST(Graph, AForwardThatThrowsLeavesNothingToReadUntilOneRunsWhole) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  graph.compile(ctx);
  fill(ctx, graph);
  graph.forward(ctx);
  const float before = graph.loss(ctx);
  from_vector<int>(ctx, std::vector<int>{0, 7, 1, 2}, graph.input("labels"));  // 7: outside [0, 3)
  EXPECT_THROW(graph.forward(ctx), Error);
  const std::string stopped = "the last forward stopped with an error before its end, so the values are not one "
                              "forward's; run forward again";
  EXPECT_EQ(testing::message_of<Error>([&] { (void)graph.loss(ctx); }), "loss: " + stopped);
  EXPECT_EQ(testing::message_of<Error>([&] { graph.backward(ctx); }), "backward: " + stopped);
  // A callback's error part-way through is the same.
  fill(ctx, graph);
  graph.forward(ctx);
  EXPECT_EQ(graph.loss(ctx), before);
  EXPECT_THROW(graph.forward(ctx, Phase::kTraining,
                             [](const Node& node) {
                               if (node.name == "fc2") throw Error("stop");
                             }),
               Error);
  EXPECT_EQ(testing::message_of<Error>([&] { graph.backward(ctx); }), "backward: " + stopped);
  graph.forward(ctx);
  EXPECT_EQ(graph.loss(ctx), before) << "a whole forward again";
  EXPECT_NO_THROW(graph.backward(ctx));
}

// Options cast from numbers that are none of their enumeration's values are
// refused by name at compile (phase 5 compiled as inference), and so is a
// dtype that is none of DType's at an input.
TEST(Graph, OptionsOutsideTheirEnumerationsAreRefused) {
  Context ctx = Context::cpu();
  const auto refused = [&](const CompileOptions& options) {
    Graph graph = residual_net();
    return testing::message_of<ConfigError>([&] { graph.compile(ctx, options); });
  };
  EXPECT_EQ(refused({.phase = static_cast<Phase>(5)}),
            "compile: CompileOptions::phase is 5, none of its values (0 to 1)");
  EXPECT_EQ(refused({.precision = static_cast<Precision>(9)}),
            "compile: CompileOptions::precision is 9, none of its values (0 to 3)");
  EXPECT_EQ(refused({.memory_reuse = static_cast<MemoryReuse>(-1)}),
            "compile: CompileOptions::memory_reuse is -1, none of its values (0 to 1)");
  EXPECT_EQ(refused({.layout = static_cast<LayoutChoice>(7)}),
            "compile: CompileOptions::layout is 7, none of its values (0 to 2)");
  EXPECT_EQ(refused({.layers = {.cpu_conv = static_cast<CpuConvPath>(3)}}),
            "compile: CompileOptions::layers.cpu_conv is 3, none of its values (0 to 2)");
  GraphBuilder g;
  EXPECT_EQ(testing::message_of<ConfigError>([&] { g.input("x", {2}, static_cast<DType>(77)); }),
            "input 'x': dtype 77 is none of DType's values");
}

// A graph's inputs hold zeros from compile, not the heap's old bytes: a
// forward before the caller writes them computes on zeros. (The graph before
// it leaves its inputs' bytes in the heap, where the next one's may land.)
TEST(Graph, InputsAreZeroAfterCompile) {
  Context ctx = Context::cpu();
  {
    Graph before = residual_net();
    before.compile(ctx);
    fill(ctx, before);
  }
  Graph graph = residual_net();
  graph.compile(ctx);
  for (const float v : to_vector<float>(ctx, graph.input("images"))) ASSERT_EQ(v, 0.0f);
  for (const int label : to_vector<int>(ctx, graph.input("labels"))) ASSERT_EQ(label, 0);
}

// What has no meaning is refused, not run on whatever the buffers hold: a
// backward or a loss before any forward, a second compile (which would leave
// the first's tensors and optimizers behind), a dropout p outside [0, 1) on
// a graph without Dropout. A backward after an inference-phase forward is the
// gradient of the inference loss, which gradient checks take.
TEST(Graph, MisuseThatWouldGiveGarbageIsRefused) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  graph.compile(ctx);
  fill(ctx, graph);
  EXPECT_EQ(testing::message_of<Error>([&] { graph.backward(ctx); }),
            "backward: no forward has run since compile, so there is nothing to differentiate; run forward first");
  EXPECT_EQ(testing::message_of<Error>([&] { (void)graph.loss(ctx); }),
            "loss: no forward has run since compile, so there is no loss yet; run forward first");
  graph.forward(ctx, Phase::kInference);
  EXPECT_TRUE(std::isfinite(graph.loss(ctx)));
  EXPECT_NO_THROW(graph.backward(ctx));
  EXPECT_EQ(testing::message_of<ConfigError>([&] { graph.compile(ctx); }),
            "compile: the graph is compiled already; a second compile would make new parameter, gradient and input "
            "buffers and leave every tensor and optimizer taken from the first behind: build the graph again to "
            "compile it with other options");
  EXPECT_EQ(testing::message_of<ConfigError>([&] { graph.set_dropout(2.0f); }),
            "set_dropout: p must be in [0, 1), got 2");
  EXPECT_EQ(graph.set_dropout(0.5f), 0) << "a graph without Dropout layers";
  // A graph moved from holds nothing: each call says so instead of running on what it no longer has.
  Graph moved = std::move(graph);
  const std::string gone = "this graph was moved from; its nodes and buffers are the Graph it was moved into's";
  EXPECT_EQ(testing::message_of<Error>([&] { graph.forward(ctx); }), "forward: " + gone);
  EXPECT_EQ(testing::message_of<Error>([&] { graph.backward(ctx); }), "backward: " + gone);
  EXPECT_EQ(testing::message_of<Error>([&] { (void)graph.loss(ctx); }), "loss: " + gone);
  EXPECT_EQ(testing::message_of<Error>([&] { graph.compile(ctx); }), "compile: " + gone);
  EXPECT_EQ(testing::message_of<Error>([&] { (void)graph.named_parameters(); }), "named_parameters: " + gone);
  EXPECT_EQ(testing::message_of<Error>([&] { (void)graph.input("images"); }), "input: " + gone);
  EXPECT_EQ(testing::message_of<Error>([&] { (void)graph.input("no such input"); }), "input: " + gone);
  EXPECT_EQ(testing::message_of<Error>([&] { (void)graph.batch(); }), "batch: " + gone);
  EXPECT_EQ(testing::message_of<Error>([&] { graph.set_dropout(0.1f); }), "set_dropout: " + gone);
  EXPECT_FALSE(graph.compiled());
  moved.forward(ctx);
  EXPECT_TRUE(std::isfinite(moved.loss(ctx))) << "the graph moved into runs";
  // A self-move leaves the graph as it was.
  Graph& same = moved;
  moved = std::move(same);
  moved.forward(ctx);
  EXPECT_TRUE(std::isfinite(moved.loss(ctx))) << "a graph moved into itself runs";
  graph = std::move(moved);
  EXPECT_NO_THROW(graph.forward(ctx)) << "assigned again, it holds a graph again";
  // Another context on the same device has none of the plan's memory; a context moved from has no memory.
  Context other = Context::cpu();
  EXPECT_EQ(testing::message_of<Error>([&] { graph.forward(other); }),
            "forward: called with another cpu Context than the one the graph was compiled with, whose memory, "
            "workspace and stream the plan uses; pass that one");
  Context kept = std::move(ctx);
  EXPECT_EQ(testing::message_of<Error>([&] { graph.forward(ctx); }),
            "a cpu Context that was moved from holds no memory; use the one it was moved to");
  EXPECT_NO_THROW(graph.forward(kept)) << "the context moved into is the one the graph was compiled with";
}

TEST(GraphBuilder, ANullLayerAndABatchPastIntAreRefused) {
  GraphBuilder g;
  const Value x = g.input("images", {4, 6});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { g.append(nullptr, {x}); }), "GraphBuilder::append: a null layer");
  GraphBuilder huge;
  const Value images = huge.input("images", {int64_t{3'000'000'000}, 4});
  const Value labels = huge.input("labels", {int64_t{3'000'000'000}}, DType::kInt32);
  const Graph graph = std::move(huge).build(huge.softmax_cross_entropy(huge.linear(images, {.out_features = 3}, "fc"),
                                                                       labels));
  EXPECT_EQ(testing::message_of<SizeError>([&] { (void)graph.batch(); }),
            "input 'images' (3000000000, 4): a batch of 3000000000 is past 2147483647, the most a graph's batch may "
            "be");
}

TEST(Graph, AnUnknownNodeNameListsTheNodes) {
  const Graph graph = residual_net();
  try {
    graph.node("fc4");
    FAIL() << "found a node that does not exist";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "no node named 'fc4'; nodes: images, labels, fc1, relu1, fc2, add, fc3, loss");
  }
}

TEST(Graph, NamesEveryPlannedTensorAndWhyAGradientIsMissing) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  graph.compile(ctx);
  EXPECT_EQ(graph.node("fc2").value.name(), "fc2");
  EXPECT_EQ(graph.node("fc2").grad.name(), "fc2 gradient");
  EXPECT_EQ(graph.node("fc2").params[1].name(), "fc2.bias");
  EXPECT_EQ(graph.node("fc2").param_grads[0].name(), "fc2.weight gradient");
  try {
    graph.node("images").grad.data<float>();
    FAIL() << "a graph input has a gradient";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "access to an undefined tensor: gradient of 'images' (none: not in CompileOptions::input_gradients)");
  }
  EXPECT_EQ(graph.node("loss").grad.name(), "gradient of 'loss' (none: the loss starts backward with 1)");
}

TEST(Graph, LayerTimesCoverEveryLayer) {
  Context ctx = Context::cpu();
  Graph graph = residual_net();
  graph.compile(ctx, {.layer_timing = true});
  fill(ctx, graph);
  graph.forward(ctx);
  graph.backward(ctx);
  const std::vector<LayerTime> times = graph.layer_times();
  ASSERT_EQ(times.size(), 6u);  // fc1 relu1 fc2 add fc3 loss
  for (const LayerTime& t : times) {
    EXPECT_GE(t.forward_ms, 0.0);
    EXPECT_GE(t.backward_ms, 0.0);
    EXPECT_FALSE(graph.nodes()[static_cast<size_t>(t.node)].is_input());
  }
}

class GraphDeviceTest : public testing::DeviceTest {};

// CUDA and CPU compute the same loss and gradients for the same graph and seed.
TEST_P(GraphDeviceTest, StepMatchesTheCpu) {
  if (!ctx().device().is_cuda()) {
    GTEST_SKIP() << "compares a GPU with the CPU; on the CPU it would compare the CPU with itself";
  }
  Context cpu = Context::cpu();
  Graph reference = residual_net();
  reference.compile(cpu);
  fill(cpu, reference);
  reference.zero_grad(cpu);
  reference.forward(cpu);
  reference.backward(cpu);

  Graph graph = residual_net();
  graph.compile(ctx());
  fill(ctx(), graph);
  graph.zero_grad(ctx());
  graph.forward(ctx());
  graph.backward(ctx());
  EXPECT_NEAR(graph.loss(ctx()), reference.loss(cpu), 1e-5);
  const std::vector<float> expected = to_vector<float>(cpu, reference.gradients());
  const std::vector<float> actual = to_vector<float>(ctx(), graph.gradients());
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-5) << "gradient element " << i;
}

GLASSBOX_INSTANTIATE_ON_DEVICES(GraphDeviceTest);

}  // namespace
}  // namespace glassbox
