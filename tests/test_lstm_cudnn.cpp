// tests/test_lstm_cudnn.cpp: what cuDNN's RNN API asks of the LSTM layer.
// Where the graph places its packed parameters: on the CPU, back to back in
// param_specs() order; on CUDA, where cuDNN's weight space has each one (Note
// [LSTM weight space] in layers/lstm/lstm_cuda.cpp), which is not that order for
// two layers. And one backward per training forward on CUDA (Note [One
// backward per forward]).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "layers/lstm/lstm.h"
#include "tests/support/harness.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

Graph two_layer_lstm() {
  GraphBuilder g;
  Value x = g.input("tokens", {5, 3, 7});
  x = g.append(std::make_unique<Lstm>("lstm", Lstm::Options{.hidden = 6, .layers = 2}), {x});
  x = g.linear(g.flatten(x), {.out_features = 4}, "fc");
  return std::move(g).build(g.softmax_cross_entropy(x, g.input("labels", {5}, DType::kInt32)));
}

// Each parameter and its gradient lie at the block's start plus the layer's
// packed offset, and the parameters fill the block without gaps or overlaps.
void expect_placed_at_packed_offsets(const Graph& graph) {
  const Node& lstm = graph.node("lstm");
  const std::vector<size_t> offsets = lstm.layer->packed_offsets();
  ASSERT_EQ(offsets.size(), lstm.params.size());
  const auto at = [](const Tensor& t) { return static_cast<const std::byte*>(t.raw()); };
  const size_t first = static_cast<size_t>(std::min_element(offsets.begin(), offsets.end()) - offsets.begin());
  EXPECT_EQ(offsets[first], 0u);
  const std::byte* block = at(lstm.params[first]);
  const std::byte* grad_block = at(lstm.param_grads[first]);
  size_t total = 0;
  for (size_t k = 0; k < offsets.size(); ++k) {
    const std::string name = lstm.layer->param_specs()[k].name;  // a copy: param_specs() returns a temporary
    EXPECT_EQ(at(lstm.params[k]), block + offsets[k]) << name;
    EXPECT_EQ(at(lstm.param_grads[k]), grad_block + offsets[k]) << name << " gradient";
    total += lstm.params[k].bytes();
  }
  std::vector<size_t> order(offsets.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
  size_t end = 0;
  for (size_t k : order) {
    EXPECT_EQ(offsets[k], end) << lstm.layer->param_specs()[k].name << " does not follow the parameter before it";
    end = offsets[k] + lstm.params[k].bytes();
  }
  EXPECT_EQ(end, total);
}

TEST(LstmCudnn, OnTheCpuTheParametersAreBackToBackInTheirOrder) {
  Graph graph = two_layer_lstm();
  Context ctx = Context::cpu();
  graph.compile(ctx);
  expect_placed_at_packed_offsets(graph);
  const std::vector<size_t> offsets = graph.node("lstm").layer->packed_offsets();
  EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end()));
}

// The graph trains through cuDNN with the parameters where cuDNN has them;
// CudaMatchesCpu (test_lstm.cpp) checks the values.
TEST(LstmCudnn, OnCudaTheParametersLieWhereCudnnHasThem) {
  GLASSBOX_REQUIRE_CUDA();
  Graph graph = two_layer_lstm();
  Context ctx = Context::cuda(0);
  graph.compile(ctx);
  expect_placed_at_packed_offsets(graph);
  graph.forward(ctx);
  graph.backward(ctx);
  ctx.synchronize();
}

// cuDNN's backward changes the reserve space its forward filled, so a second
// backward on one forward is refused, naming the Note; after a new forward
// the backward runs again.
TEST(LstmCudnn, ASecondBackwardOnOneForwardIsRefused) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0);
  Lstm lstm("lstm", {.hidden = 6, .layers = 2});
  testing::LayerHarness h(ctx, lstm, {Shape{5, 3, 7}});
  h.randomize(3);
  h.forward(Phase::kTraining);
  h.backward();
  try {
    h.backward();
    ADD_FAILURE() << "a second backward after one forward ran";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("lstm (LSTM): a second backward after one forward"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("Note [One backward per forward]"), std::string::npos) << e.what();
  }
  h.forward(Phase::kTraining);
  h.backward();
  ctx.synchronize();
}

}  // namespace
}  // namespace glassbox
