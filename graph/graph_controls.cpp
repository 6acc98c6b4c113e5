// graph/graph_controls.cpp: what a program using Glassbox as a library asks of
// a graph by name: gradients with respect to its inputs (which inputs, and
// reading them after backward), and dropout's probability.
#include <algorithm>

#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "layers/dropout.h"

namespace glassbox {
namespace {

// "images, noise": the inputs a gradient can be asked for.
std::string float_inputs(const std::vector<Node>& nodes) {
  std::string names;
  for (const Node& node : nodes) {
    if (node.is_input() && node.dtype == DType::kFloat32) names += cat(names.empty() ? "" : ", ", node.name);
  }
  return names.empty() ? "none" : names;
}

}  // namespace

std::vector<int> input_gradient_nodes(const std::vector<Node>& nodes, std::span<const std::string> names,
                                      Phase phase) {
  std::vector<int> found;
  if (names.empty()) return found;
  if (phase == Phase::kInference) {
    throw ConfigError(cat("input_gradients: '", names[0], "' asks for a gradient, but the graph is compiled for "
                          "inference (no backward); compile with Phase::kTraining"));
  }
  for (const std::string& name : names) {
    const auto it = std::find_if(nodes.begin(), nodes.end(), [&](const Node& n) { return n.name == name; });
    if (it == nodes.end() || !it->is_input() || it->dtype != DType::kFloat32) {
      const std::string what = it == nodes.end()   ? "is not a node of the graph"
                               : !it->is_input()    ? cat("is a layer (", it->layer->type(), "), not a graph input")
                                                    : cat("is an input of ", name_of(it->dtype), ", which has no gradient");
      throw ConfigError(cat("input_gradients: '", name, "' ", what, "; float inputs: ", float_inputs(nodes)));
    }
    const int index = static_cast<int>(it - nodes.begin());
    if (std::find(found.begin(), found.end(), index) == found.end()) found.push_back(index);
  }
  return found;
}

const Tensor& Graph::input_gradient(std::string_view name) const {
  require_compiled("input_gradient");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    if (!node.is_input() || node.name != name) continue;
    if (std::find(input_gradient_nodes_.begin(), input_gradient_nodes_.end(), static_cast<int>(i)) ==
        input_gradient_nodes_.end()) {
      throw ConfigError(cat("input_gradient: '", name, "' was not asked for; compile with "
                            "CompileOptions::input_gradients = {\"", name, "\"}"));
    }
    return node.grad;
  }
  std::string names;
  for (const Node& node : nodes_) {
    if (node.is_input()) names += cat(names.empty() ? "" : ", ", node.name);
  }
  throw ConfigError(cat("input_gradient: no input named '", name, "'; inputs: ", names));
}

int Graph::set_dropout(float p) {
  check_not_moved("set_dropout");
  int count = 0;
  for (int i : layers_) {
    // The first layer checks p before anything changes, so a bad p changes no layer.
    if (auto* drop = dynamic_cast<Dropout*>(nodes_[static_cast<size_t>(i)].layer.get())) {
      const float before = drop->options().p;
      drop->set_probability(p);
      if (p != before) replay_generation_ = next_serial();
      ++count;
    }
  }
  // With no Dropout layer to check it, p is checked here: refused alike.
  if (count == 0 && !(p >= 0.0f && p < 1.0f)) throw ConfigError(cat("set_dropout: p must be in [0, 1), got ", p));
  return count;
}

void Graph::set_dropout(std::string_view layer, float p) {
  check_not_moved("set_dropout");
  std::string names;
  for (int i : layers_) {
    Node& node = nodes_[static_cast<size_t>(i)];
    auto* drop = dynamic_cast<Dropout*>(node.layer.get());
    if (drop == nullptr) continue;
    if (node.name == layer) {
      const float before = drop->options().p;
      drop->set_probability(p);
      if (p != before) replay_generation_ = next_serial();
      return;
    }
    names += cat(names.empty() ? "" : ", ", node.name);
  }
  throw ConfigError(cat("set_dropout: '", layer, "' is not a Dropout layer of the graph; dropout layers: ",
                        names.empty() ? "none" : names));
}

}  // namespace glassbox
