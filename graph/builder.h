// graph/builder.h: building a network the way its paper reads.
//
//   GraphBuilder g;
//   Value x = g.input("images", {64, 3, 224, 224});
//   Value labels = g.input("labels", {64}, DType::kInt32);
//   x = g.relu(g.conv(x, {.out_channels = 64, .kernel = 3, .pad = 1}, "conv1_1"));
//   x = g.max_pool(x, {.kernel = 2, .stride = 2});
//   ...
//   Graph net = std::move(g).build(g.softmax_cross_entropy(logits, labels));
//
// Shapes are inferred as each layer is added, so a shape error is thrown at
// the line that caused it and names the layer, the expected and the actual
// shapes. Layers get paper names where given ("conv3_1") and numbered names
// otherwise ("relu7").
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "layers/batch_norm/batch_norm.h"
#include "layers/conv2d/conv2d.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/linear/linear.h"
#include "layers/lrn.h"
#include "layers/pool2d/pool2d.h"

namespace glassbox {

// The longest name a graph node may have: it heads each of its layer's
// messages and, with ".weight" and the like, names its parameters.
inline constexpr size_t kMaxNodeNameBytes = 256;
// Throws ConfigError for a node name that is empty, longer than
// kMaxNodeNameBytes or holds a control character (a NUL would cut a message
// short, an escape sequence rewrite the terminal that shows it).
void check_node_name(std::string_view name);

class GraphBuilder {
 public:
  GraphBuilder();

  Value input(std::string name, Shape shape, DType dtype = DType::kFloat32);
  // Any layer, for layers without a method below.
  Value append(std::unique_ptr<Layer> layer, std::vector<Value> inputs);

  Value conv(Value x, Conv2d::Options options, std::string name = "");
  Value linear(Value x, Linear::Options options, std::string name = "");
  Value relu(Value x, std::string name = "");
  Value max_pool(Value x, Pool2d::Window window, std::string name = "");
  Value avg_pool(Value x, Pool2d::Window window, std::string name = "");
  Value global_avg_pool(Value x, std::string name = "");
  Value lrn(Value x, LocalResponseNorm::Options options = {}, std::string name = "");
  Value batch_norm(Value x, BatchNorm2d::Options options = {}, std::string name = "");
  Value dropout(Value x, Dropout::Options options = {}, std::string name = "");
  Value flatten(Value x, std::string name = "");
  Value add(std::vector<Value> terms, std::string name = "");  // elementwise sum (residuals)
  Value concat(std::vector<Value> parts, std::string name = "");
  // tokens (...) int32 -> (..., dim): a row of the (vocabulary, dim) table per token.
  Value embedding(Value tokens, Embedding::Options options, std::string name = "");
  Value softmax_cross_entropy(Value logits, Value labels, std::string name = "loss");

  const Shape& shape(Value v) const;

  // Checks that the graph is connected (every input used, every layer output
  // used or the loss) and hands the nodes to a Graph. The builder is spent.
  Graph build(Value loss) &&;

 private:
  const Node& at(Value v, std::string_view use) const;
  std::string name_or_default(std::string name, std::string_view prefix);
  void claim(const std::string& name);

  // Throws where build() has spent this builder: its nodes are the Graph's,
  // and a Value of the built graph would name a new node at its index.
  void check_unspent(std::string_view use) const;

  uint32_t id_;
  bool spent_ = false;
  std::vector<Node> nodes_;
  std::map<std::string, int, std::less<>> counters_;  // numbered default names per prefix
  std::map<std::string, int, std::less<>> names_;     // every name in use
  int64_t total_macs_ = 0;                            // checked sums so far (graph/graph.h's totals)
  int64_t total_params_ = 0;
};

}  // namespace glassbox
