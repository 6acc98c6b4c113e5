// tests/test_param_grads_written.cpp: Note [A step's backward writes the
// parameter gradients] (graph/graph.h). A backward with ParamGrads::kReplace
// leaves the gradients a zero_grad + accumulating backward leaves, whatever
// they held: through every CPU path of Conv2d that writes (oneDNN, in slices
// of the batch too; Glassbox's 1x1 and depthwise passes), Linear, and the
// layers the graph zeroes for (batch norm). A layer that only adds refuses
// to be asked to write. Each layer's own kWrite check is in check_gradients
// (tests/support/checks.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "layers/batch_norm/batch_norm.h"
#include "layers/conv2d/conv2d.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

// A 3x3 convolution (oneDNN where built with it), batch norm, a depthwise
// and a 1x1 convolution (Glassbox's own passes), a linear layer.
Graph net() {
  GraphBuilder g;
  Value x = g.input("images", {3, 3, 10, 10});
  const Value labels = g.input("labels", {3}, DType::kInt32);
  x = g.relu(g.conv(x, {.out_channels = 16, .kernel = 3, .pad = 1}, "conv"));
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 16, .kernel = 3, .pad = 1, .groups = 16}, "depthwise"), {}, "bn"));
  x = g.relu(g.conv(x, {.out_channels = 8, .kernel = 1}, "pointwise"));
  const Value loss = g.softmax_cross_entropy(g.linear(g.flatten(x), {.out_features = 5}, "fc"), labels);
  return std::move(g).build(loss);
}

class ParamGradsWritten : public testing::DeviceTest {};

TEST_P(ParamGradsWritten, AReplacingBackwardGivesTheGradientsOfAFreshSum) {
  Context& ctx = this->ctx();
  Graph graph = net();
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, 5);

  graph.zero_grad(ctx);
  graph.forward(ctx, Phase::kTraining);
  graph.backward(ctx);  // kAccumulate onto zeros
  const std::vector<float> fresh = to_vector<float>(ctx, graph.gradients());

  // Far from the answer: a layer that read them would be far off. (Each
  // parameter's gradient: the alignment gaps between them hold zeros.)
  for (const Node& node : graph.nodes()) {
    for (const Tensor& g : node.param_grads) {
      from_vector<float>(ctx, std::vector<float>(static_cast<size_t>(g.numel()), 1e6f), g);
    }
  }
  for (int step = 0; step < 2; ++step) {  // the second replaces the first, does not add to it
    graph.forward(ctx, Phase::kTraining);
    graph.backward(ctx, Graph::ParamGrads::kReplace);
    testing::expect_close(to_vector<float>(ctx, graph.gradients()), fresh, 1e-6,
                          "gradients after replacing backward " + std::to_string(step + 1));
  }

  // kAccumulate after a replacing backward adds onto its gradients.
  graph.forward(ctx, Phase::kTraining);
  graph.backward(ctx);
  std::vector<float> twice = fresh;
  for (float& g : twice) g *= 2.0f;
  testing::expect_close(to_vector<float>(ctx, graph.gradients()), twice, 1e-5,
                        "a replacing backward, then an accumulating one");
}

GLASSBOX_INSTANTIATE_ON_DEVICES(ParamGradsWritten);

TEST(ParamGradsWrittenCpu, WhoWritesOnTheCpu) {
  Context ctx = Context::cpu();
  Graph graph = net();
  graph.compile(ctx);
  for (const char* name : {"conv", "depthwise", "pointwise", "fc"}) {
    EXPECT_TRUE(graph.node(name).layer->writes_param_grads()) << name;
  }
  EXPECT_FALSE(graph.node("bn").layer->writes_param_grads());
}

// oneDNN's backward-weights in slices of the batch (Note [Convolutions by
// slices of the batch]): the first slice writes dW, the others add to it.
TEST(ParamGradsWrittenCpu, AConvolutionInSlicesWritesThenAdds) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): no slices";
  Context ctx = Context::cpu();
  Conv2d conv("conv", {.out_channels = 16, .kernel = 3, .pad = 1});
  // One image's input and output, 2 x 16 x 96 x 96 floats, fill 1.2 MB of
  // the 2 MiB slice: one image a slice.
  testing::LayerHarness h(ctx, conv, {Shape{3, 16, 96, 96}});
  h.randomize(7);
  ASSERT_NE(conv.algorithms().find("in 3 slices"), std::string::npos) << conv.algorithms();
  h.forward();
  h.zero_param_grads();
  h.backward();
  std::vector<std::vector<float>> fresh;
  for (const Tensor& g : h.param_grads) fresh.push_back(h.read(g));
  for (const Tensor& g : h.param_grads) h.write(g, std::vector<float>(static_cast<size_t>(g.numel()), 1e6f));
  h.backward({}, GradMode::kWrite);
  for (size_t j = 0; j < fresh.size(); ++j) {
    testing::expect_close(h.read(h.param_grads[j]), fresh[j], 1e-6, "parameter " + std::to_string(j) + " written");
  }
}

TEST(ParamGradsWrittenCpu, ALayerThatOnlyAddsRefusesToWrite) {
  Context ctx = Context::cpu();
  BatchNorm2d bn("bn", {});
  testing::LayerHarness h(ctx, bn, {Shape{2, 4, 3, 3}});
  h.randomize(3);
  h.forward();
  try {
    h.backward({}, GradMode::kWrite);
    FAIL() << "batch norm wrote its parameter gradients";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bn (BatchNorm2d): backward asked to write the parameter gradients, but "
                                         "this layer only adds to them on cpu"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace glassbox
