// graph/builder.cpp
#include "graph/builder.h"

#include <algorithm>
#include <atomic>

#include "layers/add.h"
#include "layers/concat.h"
#include "layers/flatten.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"

namespace glassbox {
namespace {
std::atomic<uint32_t> next_builder_id{1};
}  // namespace

GraphBuilder::GraphBuilder() : id_(next_builder_id++) {}

void check_node_name(std::string_view name) {
  if (name.empty()) throw ConfigError("a graph node needs a name");
  const bool control = std::any_of(name.begin(), name.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
  if (control || name.size() > kMaxNodeNameBytes) {
    throw ConfigError(cat("a graph node's name is ", kMaxNodeNameBytes, " bytes at most, with no control character "
                          "(it heads its layer's messages and names its parameters in checkpoints), got '",
                          excerpt(name), "' (", name.size(), " bytes)"));
  }
}

void GraphBuilder::claim(const std::string& name) {
  check_node_name(name);
  if (!names_.emplace(name, static_cast<int>(nodes_.size())).second) {
    throw ConfigError(cat("the name '", name, "' is used twice in one graph"));
  }
}

std::string GraphBuilder::name_or_default(std::string name, std::string_view prefix) {
  if (!name.empty()) {
    check_node_name(name);  // before the layer's own checks quote it
    return name;
  }
  // The next free numbered name: relu1, relu2, ... (skipping names given explicitly).
  int& counter = counters_[std::string(prefix)];
  std::string candidate;
  do {
    candidate = cat(prefix, ++counter);
  } while (names_.contains(candidate));
  return candidate;
}

void GraphBuilder::check_unspent(std::string_view use) const {
  if (spent_) {
    throw Error(cat(use, ": this GraphBuilder has built its graph, which holds its nodes now; start a new "
                         "GraphBuilder for another graph"));
  }
}

const Node& GraphBuilder::at(Value v, std::string_view use) const {
  check_unspent(use);
  if (v.graph_id != id_ || v.node < 0 || v.node >= static_cast<int>(nodes_.size())) {
    throw ConfigError(cat(use, ": the value does not belong to this graph (node ", v.node, ")"));
  }
  return nodes_[static_cast<size_t>(v.node)];
}

const Shape& GraphBuilder::shape(Value v) const { return at(v, "shape").shape; }

Value GraphBuilder::input(std::string name, Shape shape, DType dtype) {
  check_unspent("input");
  if (static_cast<int>(dtype) < 0 || static_cast<int>(dtype) > static_cast<int>(DType::kBFloat16)) {
    throw ConfigError(
        cat("input '", excerpt(name), "': dtype ", static_cast<int>(dtype), " is none of DType's values"));
  }
  claim(name);
  Node node;
  node.name = std::move(name);
  node.shape = std::move(shape);
  node.dtype = dtype;
  nodes_.push_back(std::move(node));
  return {static_cast<int>(nodes_.size()) - 1, id_};
}

Value GraphBuilder::append(std::unique_ptr<Layer> layer, std::vector<Value> inputs) {
  if (layer == nullptr) throw ConfigError("GraphBuilder::append: a null layer");
  check_unspent(cat(layer->name(), " (", layer->type(), ")"));
  std::vector<Shape> shapes;
  std::vector<int> producers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node& producer = at(inputs[i], cat(layer->name(), " (", layer->type(), ") input ", i));
    if (producer.dtype != layer->input_dtype(static_cast<int>(i))) {
      throw ConfigError(cat(layer->name(), " (", layer->type(), "): input ", i, " ('", producer.name,
                            "') is ", name_of(producer.dtype), ", expected ",
                            name_of(layer->input_dtype(static_cast<int>(i)))));
    }
    shapes.push_back(producer.shape);
    producers.push_back(inputs[i].node);
  }
  Node node;
  node.shape = layer->bind(shapes);  // shape inference: throws naming the layer
  // Running totals, checked here so that Graph::macs() and parameter_count(),
  // which add the same numbers in the same order, cannot overflow.
  try {
    total_macs_ = checked_add(total_macs_, layer->macs(), "the network's multiply-accumulates");
    for (const ParamSpec& spec : layer->param_specs()) {
      total_params_ = checked_add(total_params_, spec.shape.numel(), "the network's parameters");
    }
  } catch (const SizeError& e) {
    throw SizeError(cat(layer->name(), " (", layer->type(), "): ", e.what()));
  }
  claim(layer->name());
  node.name = layer->name();
  node.inputs = std::move(producers);
  node.layer = std::move(layer);
  nodes_.push_back(std::move(node));
  return {static_cast<int>(nodes_.size()) - 1, id_};
}

Value GraphBuilder::conv(Value x, Conv2d::Options options, std::string name) {
  return append(std::make_unique<Conv2d>(name_or_default(std::move(name), "conv"), options), {x});
}
Value GraphBuilder::linear(Value x, Linear::Options options, std::string name) {
  return append(std::make_unique<Linear>(name_or_default(std::move(name), "fc"), options), {x});
}
Value GraphBuilder::relu(Value x, std::string name) {
  return append(std::make_unique<ReLU>(name_or_default(std::move(name), "relu")), {x});
}
Value GraphBuilder::max_pool(Value x, Pool2d::Window window, std::string name) {
  return append(std::make_unique<Pool2d>(name_or_default(std::move(name), "pool"), Pool2d::Mode::kMax, window),
                {x});
}
Value GraphBuilder::avg_pool(Value x, Pool2d::Window window, std::string name) {
  return append(
      std::make_unique<Pool2d>(name_or_default(std::move(name), "pool"), Pool2d::Mode::kAverage, window), {x});
}
Value GraphBuilder::global_avg_pool(Value x, std::string name) {
  return append(std::make_unique<Pool2d>(name_or_default(std::move(name), "avgpool"), Pool2d::Mode::kAverage,
                                         Pool2d::Window{.global = true}),
                {x});
}
Value GraphBuilder::lrn(Value x, LocalResponseNorm::Options options, std::string name) {
  return append(std::make_unique<LocalResponseNorm>(name_or_default(std::move(name), "lrn"), options), {x});
}
Value GraphBuilder::batch_norm(Value x, BatchNorm2d::Options options, std::string name) {
  return append(std::make_unique<BatchNorm2d>(name_or_default(std::move(name), "bn"), options), {x});
}
Value GraphBuilder::dropout(Value x, Dropout::Options options, std::string name) {
  return append(std::make_unique<Dropout>(name_or_default(std::move(name), "drop"), options), {x});
}
Value GraphBuilder::flatten(Value x, std::string name) {
  return append(std::make_unique<Flatten>(name_or_default(std::move(name), "flatten")), {x});
}
Value GraphBuilder::add(std::vector<Value> terms, std::string name) {
  return append(std::make_unique<Add>(name_or_default(std::move(name), "add")), std::move(terms));
}
Value GraphBuilder::concat(std::vector<Value> parts, std::string name) {
  return append(std::make_unique<Concat>(name_or_default(std::move(name), "concat")), std::move(parts));
}
Value GraphBuilder::embedding(Value tokens, Embedding::Options options, std::string name) {
  return append(std::make_unique<Embedding>(name_or_default(std::move(name), "embed"), options), {tokens});
}
Value GraphBuilder::softmax_cross_entropy(Value logits, Value labels, std::string name) {
  check_node_name(name);
  return append(std::make_unique<SoftmaxCrossEntropy>(std::move(name)), {logits, labels});
}

Graph GraphBuilder::build(Value loss) && {
  const Node& end = at(loss, "build");
  if (end.is_input() || !end.layer->is_loss()) {
    throw ConfigError(cat("build: '", end.name, "' (", end.is_input() ? "input" : end.layer->type(),
                          ") is not a loss layer; end the graph with softmax_cross_entropy"));
  }
  std::vector<int> uses(nodes_.size(), 0);
  for (const Node& node : nodes_) {
    for (int producer : node.inputs) ++uses[static_cast<size_t>(producer)];
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (uses[i] > 0 || static_cast<int>(i) == loss.node) continue;
    const Node& node = nodes_[i];
    if (node.is_input()) {
      throw ConfigError(cat("input '", node.name, "' is not connected to any layer"));
    }
    throw ConfigError(cat("the output of '", node.name, "' (", node.layer->type(),
                          ") is not used by any layer and is not the loss"));
  }
  spent_ = true;
  return Graph(std::move(nodes_), loss.node);
}

}  // namespace glassbox
