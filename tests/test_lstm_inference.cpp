// tests/test_lstm_inference.cpp: the LSTM's inference plan on the CPU, which
// keeps nothing for a backward and runs the training forward's code (Note
// [LSTM inference on the training forward's steps] in layers/lstm/lstm_cpu.cpp):
// against the training plan's forward run in the inference phase, over layer
// counts, input sizes, bias, batch and initial state. On a GPU: a training
// plan's inference-phase forward applies no dropout, as an inference plan.
#include <gtest/gtest.h>

#include "layers/lstm/lstm.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

int64_t layer_state_bytes(const Context& ctx) {
  return ctx.memory().current[static_cast<size_t>(MemoryCategory::kLayerState)];
}

// A layer prepared for inference beside a harness's (training) one, sharing
// its parameters and input; reserves the workspace it asks for.
struct InferencePlan {
  Lstm layer;
  Tensor y;
  InferencePlan(Context& ctx, const Lstm::Options& options, const Shape& x)
      : layer("lstm", options) {
    layer.bind(std::vector<Shape>{x});
    layer.prepare(ctx, {.phase = Phase::kInference});
    ctx.reserve_workspace(layer.workspace_bytes());
    y = ctx.allocate(layer.output_shape(), DType::kFloat32, MemoryCategory::kActivations);
  }
  void forward(Context& ctx, const testing::LayerHarness& h) {
    layer.forward(ctx, {.inputs = h.inputs, .output = y, .params = h.params, .phase = Phase::kInference});
  }
};

// An inference plan keeps only the state and scratch (two layer outputs in
// turn, and one gate buffer) and computes what a training plan computes in
// the inference phase, to the bit: the same code, the same products. Three
// layers, so the layer outputs take turns.
TEST(LstmInference, APlanKeepsOnlyScratchAndComputesTheSame) {
  Context ctx = Context::cpu();
  const Lstm::Options options{.hidden = 8, .layers = 3, .dropout = 0.5f};
  Lstm trained("lstm", options);
  testing::LayerHarness h(ctx, trained, {Shape{5, 2, 3}});
  const int64_t state = 4 * 3 * 2 * 8, gates = 5 * 2 * 32, sequence = 5 * 2 * 8, step = 2 * 8;
  // Per layer gates, cells, gate gradients; per lower layer its output, mask, masked output; dL/dh; two steps.
  EXPECT_EQ(layer_state_bytes(ctx), 4 * (state + 3 * (2 * gates + sequence) + 2 * 3 * sequence + sequence + 2 * step));
  h.randomize(10);
  h.forward(Phase::kInference);

  const int64_t before = layer_state_bytes(ctx);
  InferencePlan inferring(ctx, options, Shape{5, 2, 3});
  EXPECT_EQ(layer_state_bytes(ctx) - before, 4 * (state + gates + 2 * sequence));
  inferring.forward(ctx, h);
  EXPECT_EQ(h.read(inferring.y), h.read(h.output));
  EXPECT_EQ(h.read(inferring.layer.final_cell()), h.read(trained.final_cell()));
}

// cuDNN: an evaluation forward of a training plan runs cudnnRNNForward in
// CUDNN_FWD_MODE_INFERENCE with the plan's dropout descriptor (p 0.5 between
// layers), which must then drop nothing: the same outputs as an inference
// plan, which has no dropout descriptor.
TEST(LstmInference, OnCudaATrainingPlansInferenceForwardDropsNothing) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0);
  const Lstm::Options options{.hidden = 8, .layers = 3, .dropout = 0.5f};
  Lstm trained("lstm", options);
  testing::LayerHarness h(ctx, trained, {Shape{5, 2, 3}});
  h.randomize(10);
  InferencePlan inferring(ctx, options, Shape{5, 2, 3});
  for (int call = 1; call <= 2; ++call) {
    h.forward(Phase::kInference);
    inferring.forward(ctx, h);
    testing::expect_close(h.read(inferring.y), h.read(h.output), 1e-6, cat("y, forward ", call));
  }
}

struct Case {
  std::string name;
  Lstm::Options options;
  Shape x;  // (T, B, I)
};

std::ostream& operator<<(std::ostream& out, const Case& c) { return out << c.name; }

// "wide_input" has I != H, so layer 0 and the layers above differ; "odd" has
// H and B that fill no vector; "one_step" a single step of one sequence.
const std::vector<Case> kCases = {
    {"wide_input", {.hidden = 16, .layers = 3}, Shape{6, 3, 24}},
    {"no_bias", {.hidden = 12, .layers = 2, .bias = false}, Shape{4, 2, 12}},
    {"odd", {.hidden = 17, .layers = 2}, Shape{7, 5, 9}},
    {"one_step", {.hidden = 8}, Shape{1, 1, 5}},
};

class InferenceCases : public ::testing::TestWithParam<Case> {};

// Against Glassbox's own forward from a non-zero initial state, then a second
// forward carrying the state over: outputs and final states of both.
TEST_P(InferenceCases, MatchesGlassboxsOwnForward) {
  const Case& c = GetParam();
  Lstm::Options options = c.options;
  options.carry_state = true;
  Context ctx = Context::cpu();
  Lstm trained("lstm", options);
  testing::LayerHarness h(ctx, trained, {c.x});
  InferencePlan inferring(ctx, options, c.x);
  EXPECT_EQ(inferring.layer.algorithms(), trained.algorithms());  // the same forward
  h.randomize(21);
  const Shape state{options.layers, c.x[1], options.hidden};
  Tensor h0 = ctx.allocate(state, DType::kFloat32, MemoryCategory::kData);
  Tensor c0 = ctx.allocate(state, DType::kFloat32, MemoryCategory::kData);
  h.write(h0, testing::random_values(state.numel(), 22));
  h.write(c0, testing::random_values(state.numel(), 23));
  for (Lstm* layer : {&trained, &inferring.layer}) layer->set_initial_state(ctx, h0, c0);
  for (int call = 1; call <= 2; ++call) {
    h.forward(Phase::kInference);
    inferring.forward(ctx, h);
    const std::string what = c.name + ", forward " + std::to_string(call);
    EXPECT_EQ(h.read(inferring.y), h.read(h.output)) << what << ": y";
    EXPECT_EQ(h.read(inferring.layer.final_hidden()), h.read(trained.final_hidden())) << what << ": hT";
    EXPECT_EQ(h.read(inferring.layer.final_cell()), h.read(trained.final_cell())) << what << ": cT";
    h.write(h.inputs[0], testing::random_values(c.x.numel(), 30 + static_cast<uint64_t>(call)));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, InferenceCases, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace glassbox
