// tests/test_step_spans.cpp: a step recorded as spans (graph/step_spans.h):
// which passes each layer gets, the optimizer's span, the listener's calls,
// and the recorder's errors. CPU: spans are host-clock marks.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "optim/train_step.h"
#include "tensor/copy.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

//   images (4,1,6,6) -> conv1 -> relu1 -> conv2 -> flatten -> fc -> loss
Graph small_net() {
  GraphBuilder g;
  Value x = g.input("images", {4, 1, 6, 6});
  const Value labels = g.input("labels", {4}, DType::kInt32);
  x = g.relu(g.conv(x, {.out_channels = 2, .kernel = 3, .pad = 1}, "conv1"), "relu1");
  x = g.conv(x, {.out_channels = 2, .kernel = 3, .pad = 1}, "conv2");
  x = g.linear(g.flatten(x, "flatten"), {.out_features = 3}, "fc");
  return std::move(g).build(g.softmax_cross_entropy(x, labels, "loss"));
}

Graph compiled(Context& ctx, bool timing) {
  Graph graph = small_net();
  graph.compile(ctx, {.layer_timing = timing});
  from_vector<float>(ctx, testing::random_values(4 * 36, 3), graph.input("images"));
  from_vector<int>(ctx, std::vector<int>{0, 2, 1, 2}, graph.input("labels"));
  return graph;
}

std::vector<std::string> labels_of(const std::vector<SpanTime>& spans) {
  std::vector<std::string> labels;
  for (const SpanTime& span : spans) labels.push_back(span.name + " " + std::string(pass_name(span.pass)));
  return labels;
}

TEST(StepSpans, ATrainStepIsEveryLayersPassesThenTheOptimizer) {
  Context ctx = Context::cpu();
  Graph graph = compiled(ctx, true);
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {});
  train_step(ctx, graph, sgd);
  const std::vector<SpanTime> spans = graph.spans();
  // conv1's input is the data: its backward has no data part. Convolutions
  // and linear layers split their backward; the others do not.
  const std::vector<std::string> expected = {
      "conv1 forward",   "relu1 forward",         "conv2 forward",         "flatten forward",
      "fc forward",      "loss forward",          "loss backward",         "fc backward-data",
      "fc backward-weights", "flatten backward",  "conv2 backward-data",   "conv2 backward-weights",
      "relu1 backward",  "conv1 backward-weights", "sgd optimizer"};
  EXPECT_EQ(labels_of(spans), expected);
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(spans[i].id, i);
    EXPECT_GE(spans[i].duration_ms, 0.0) << spans[i].name;
    if (i > 0) {
      EXPECT_GE(spans[i].start_ms, spans[i - 1].start_ms + spans[i - 1].duration_ms) << spans[i].name;
    }
  }
  EXPECT_EQ(spans.front().start_ms, 0.0);
  EXPECT_EQ(spans.back().node, -1);  // the optimizer is no layer's

  // layer_times() adds a layer's passes up: backward = data + weights.
  for (const LayerTime& t : graph.layer_times()) {
    double backward = 0.0, weights = 0.0;
    for (const SpanTime& span : spans) {
      if (span.node != t.node || span.pass == Pass::kForward) continue;
      backward += span.duration_ms;
      if (span.pass == Pass::kBackwardWeights) weights += span.duration_ms;
    }
    EXPECT_DOUBLE_EQ(t.backward_ms, backward) << t.node;
    EXPECT_DOUBLE_EQ(t.backward_weights_ms, weights) << t.node;
  }
}

TEST(StepSpans, EachForwardStartsANewStep) {
  Context ctx = Context::cpu();
  Graph graph = compiled(ctx, true);
  graph.forward(ctx);
  graph.backward(ctx);
  graph.forward(ctx);
  EXPECT_EQ(graph.spans().size(), 6u);  // the second forward's six layers only
}

struct RecordingListener final : SpanListener {
  std::vector<std::string> calls;
  void span_begin(uint64_t id) override { calls.push_back("begin " + std::to_string(id)); }
  void span_end(uint64_t id) override { calls.push_back("end " + std::to_string(id)); }
};

TEST(StepSpans, AListenerHearsEverySpanBeginAndEndInOrder) {
  Context ctx = Context::cpu();
  Graph graph = compiled(ctx, false);  // a listener alone makes the spans active
  RecordingListener listener;
  graph.step_spans().set_listener(&listener);
  EXPECT_TRUE(graph.step_spans().active());
  graph.forward(ctx);
  graph.backward(ctx);
  ASSERT_EQ(listener.calls.size(), 2u * 14);  // 6 forward spans, 8 backward ones
  for (size_t i = 0; i < listener.calls.size(); ++i) {
    EXPECT_EQ(listener.calls[i], (i % 2 == 0 ? "begin " : "end ") + std::to_string(i / 2));
  }
  graph.step_spans().set_listener(nullptr);
}

TEST(StepSpans, UntimedSpansCannotBeRead) {
  Context ctx = Context::cpu();
  Graph graph = compiled(ctx, false);
  EXPECT_FALSE(graph.step_spans().active());
  try {
    graph.spans();
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "spans: compile with CompileOptions::layer_timing = true");
  }
  StepSpans spans(ctx, 2, {.timing = false});
  try {
    spans.read();
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "StepSpans::read: spans are timed only with SpanOptions::timing "
                           "(CompileOptions::layer_timing)");
  }
}

TEST(StepSpans, AGraphHasNoRecorderBeforeCompile) {
  Graph graph = small_net();
  try {
    graph.step_spans();
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "step_spans: the graph is not compiled; call compile(ctx) first");
  }
}

TEST(StepSpans, RecorderErrorsNameTheProblem) {
  Context ctx = Context::cpu();
  try {
    StepSpans spans(ctx, 0, {.timing = true});
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "StepSpans: capacity must be positive, got 0");
  }
  StepSpans spans(ctx, 1, {.timing = true});
  spans.begin(0, "conv1", Pass::kForward);
  try {
    spans.read();
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "StepSpans::read: a span is still open; end() it first");
  }
  try {
    spans.begin(1, "relu1", Pass::kForward);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "StepSpans: more than 1 spans in one step (at relu1 forward); call start_step() at "
                           "the start of each step");
  }
  spans.start_step();  // closes the open span and starts over
  spans.begin(0, "conv1", Pass::kBackwardWeights);
  spans.switch_pass(Pass::kBackwardWeights);  // already in that pass: no second span
  spans.end();
  EXPECT_EQ(spans.read().size(), 1u);
}

}  // namespace
}  // namespace glassbox
