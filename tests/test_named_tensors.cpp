// tests/test_named_tensors.cpp: a compiled graph's parameters and layer state
// by name, in the documented order, as views of the graph's own memory.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "nets/nets.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

std::vector<std::string> names_of(const std::vector<NamedTensor>& tensors) {
  std::vector<std::string> names;
  for (const NamedTensor& t : tensors) names.push_back(t.name);
  return names;
}

// conv (weight, bias) -> batch norm (scale, shift; running statistics) -> linear.
Graph conv_bn_net() {
  GraphBuilder g;
  Value x = g.input("images", {2, 3, 6, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 4, .kernel = 3}, "conv1"), {}, "bn1"));
  x = g.linear(g.flatten(x), {.out_features = 5}, "fc");
  return std::move(g).build(g.softmax_cross_entropy(x, labels));
}

TEST(NamedTensors, ParametersInGraphOrderAsViewsOfTheFlatBuffer) {
  Context ctx = Context::cpu();
  Graph graph = lenet(2);
  graph.compile(ctx);
  const std::vector<NamedTensor> params = graph.named_parameters();
  EXPECT_EQ(names_of(params), (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                                        "fc3.weight", "fc3.bias", "fc4.weight", "fc4.bias",
                                                        "fc5.weight", "fc5.bias"}));
  EXPECT_EQ(params[0].tensor.shape(), (Shape{6, 1, 5, 5}));
  EXPECT_EQ(params[8].tensor.shape(), (Shape{10, 84}));
  int64_t total = 0;
  for (const NamedTensor& p : params) {
    EXPECT_EQ(p.tensor.name(), p.name);
    total += p.tensor.numel();
  }
  EXPECT_EQ(total, graph.parameter_count());
  // The same memory the layers use: writing through the view changes the node's parameter.
  params[9].tensor.data<float>()[3] = 12.5f;
  EXPECT_EQ(graph.node("fc5").params[1].data<float>()[3], 12.5f);
  EXPECT_EQ(params[0].tensor.raw(), graph.parameters().raw());
}

TEST(NamedTensors, ViewsOfAnotherFlatBufferShareTheLayout) {
  Context ctx = Context::cpu();
  Graph graph = lenet(2);
  graph.compile(ctx);
  const std::vector<NamedTensor> params = graph.named_parameters();
  const std::vector<NamedTensor> grads = graph.named_views(graph.gradients());
  ASSERT_EQ(grads.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(grads[i].name, params[i].name);
    EXPECT_EQ(grads[i].tensor.shape(), params[i].tensor.shape());
    const auto param_offset = static_cast<const char*>(params[i].tensor.raw()) -
                              static_cast<const char*>(graph.parameters().raw());
    const auto grad_offset = static_cast<const char*>(grads[i].tensor.raw()) -
                             static_cast<const char*>(graph.gradients().raw());
    EXPECT_EQ(grad_offset, param_offset) << params[i].name;
  }
  const Tensor wrong = ctx.allocate(Shape{7}, DType::kFloat32, MemoryCategory::kData);
  try {
    graph.named_views(wrong);
    FAIL() << "a 7-element buffer was taken for the parameters' layout";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("named_views: float32 (7) on cpu is not laid out as the parameters"),
              std::string::npos)
        << e.what();
  }
  // As many bytes, of int32: not float views of it.
  const Tensor ints = ctx.allocate(Shape{graph.parameters().numel()}, DType::kInt32, MemoryCategory::kData);
  EXPECT_THROW(graph.named_views(ints), ShapeError);
}

TEST(NamedTensors, StateIsBatchNormsRunningStatistics) {
  Context ctx = Context::cpu();
  Graph graph = conv_bn_net();
  graph.compile(ctx);
  const std::vector<NamedTensor> state = graph.named_state();
  EXPECT_EQ(names_of(state), (std::vector<std::string>{"bn1.running_mean", "bn1.running_var"}));
  EXPECT_EQ(to_vector<float>(ctx, state[1].tensor), std::vector<float>(4, 1.0f));
  EXPECT_EQ(names_of(graph.named_parameters()),
            (std::vector<std::string>{"conv1.weight", "conv1.bias", "bn1.scale", "bn1.shift", "fc.weight", "fc.bias"}));
}

TEST(NamedTensors, BeforeCompileIsAnError) {
  Graph graph = conv_bn_net();
  EXPECT_THROW(
      {
        try {
          graph.named_parameters();
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "named_parameters: the graph is not compiled; call compile(ctx) first");
          throw;
        }
      },
      Error);
  try {
    graph.named_views(Tensor());
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "named_views: the graph is not compiled; call compile(ctx) first");
  }
  try {
    graph.named_state();
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "named_state: the graph is not compiled; call compile(ctx) first");
  }
}

}  // namespace
}  // namespace glassbox
