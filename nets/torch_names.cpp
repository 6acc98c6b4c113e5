// nets/torch_names.cpp: PyTorch's state_dict names for Glassbox's networks
// (nets/torch_names.h).
//
// Two mappings cover every network:
//   - torchvision's AlexNet and VGGs are two nn.Sequential, `features` (every
//     module before the flatten, which is torch.flatten in their forward, not a
//     module) and `classifier` (every module after it), whose children are
//     numbered in order, ReLUs, pools and dropouts included:
//       VGG11  conv1_1 relu1_1 pool1 conv2_1 ...  ->  features.0 features.1 features.2 features.3 ...
//              fc6 relu6 drop6 fc7 relu7 drop7 fc8 ->  classifier.0 ... classifier.6
//   - every other network names its layers as the PyTorch module does already
//     (nets/inception_blocks.h, nets/residual.h, nets/xception.cpp, and the
//     peer's modules, bench/peers/peer_custom_models.py).
// Parameters then take PyTorch's names: batch norm's scale and shift are
// weight and bias.
#include "nets/torch_names.h"

#include <algorithm>
#include <map>

namespace glassbox {
namespace {

bool is_torchvision_sequential(const NetSpec& net) {
  return net.name == "AlexNet" || net.name == "VGG11" || net.name == "VGG13" || net.name == "VGG16" ||
         net.name == "VGG19";
}

std::string torch_parameter(const std::string& name) {
  if (name == "scale") return "weight";
  if (name == "shift") return "bias";
  return name;
}

// The PyTorch module path of each layer node (empty for inputs and the loss,
// which are not modules).
std::vector<std::string> module_names(const NetSpec& net, const Graph& graph) {
  const std::vector<Node>& nodes = graph.nodes();
  std::vector<std::string> modules(nodes.size());
  const bool sequential = is_torchvision_sequential(net);
  bool classifier = false;
  int index = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    if (node.is_input() || node.layer->is_loss()) continue;
    if (!sequential) {
      modules[i] = node.name;
    } else if (node.layer->type() == "Flatten" && !classifier) {
      classifier = true;  // torch.flatten between the two Sequentials
      index = 0;
    } else {
      modules[i] = cat(classifier ? "classifier." : "features.", index++);
    }
  }
  return modules;
}

// A node as check_built_from names it: "conv2 (Conv2d, weight (16, 6, 5, 5), bias (16))".
std::string node_text(const Node& node) {
  if (node.is_input()) return cat(node.name, " (an input)");
  std::string text = cat(node.name, " (", node.layer->type());
  for (const ParamSpec& p : node.layer->param_specs()) text += cat(", ", p.name, " ", p.shape.str());
  return text + ")";
}

// Note [A model file is its network's]: the state_dict's names come from
// `net` and its shapes from `graph`. A graph built from another network
// would be written under that network's names (or read from its file), so
// the two must be one: the same nodes by name and type, with the same
// parameters. A NetSpec without a build function (a hand-made graph's) is
// taken at its word.
void check_built_from(const NetSpec& net, const Graph& graph) {
  if (!net.build) return;
  const Graph reference = net.build(std::max(graph.batch(), 1));
  const std::vector<Node>& ours = graph.nodes();
  const std::vector<Node>& theirs = reference.nodes();
  for (size_t i = 0; i < std::max(ours.size(), theirs.size()); ++i) {
    const std::string a = i < ours.size() ? node_text(ours[i]) : "nothing";
    const std::string b = i < theirs.size() ? node_text(theirs[i]) : "nothing";
    if (a != b) {
      throw ConfigError(cat("the graph is not ", net.name, "'s: its node ", i, " is ", a, ", where ", net.name,
                            " has ", b));
    }
  }
}

}  // namespace

std::vector<TorchTensor> torch_state_dict(const NetSpec& net, const Graph& graph) {
  check_built_from(net, graph);
  const std::vector<Node>& nodes = graph.nodes();
  const std::vector<std::string> modules = module_names(net, graph);
  std::vector<TorchTensor> entries;
  std::map<std::string, std::string> seen;  // torch name -> Glassbox name
  auto add = [&](const std::string& layer, const std::string& module, const std::string& glassbox_name,
                 const std::string& torch_name, const Shape& shape, TorchTensorKind kind) {
    TorchTensor t{cat(layer, ".", glassbox_name), cat(module, ".", torch_name), shape, kind};
    const auto [it, inserted] = seen.emplace(t.torch, t.glassbox);
    if (!inserted) {
      throw Error(cat(net.name, ": '", it->second, "' and '", t.glassbox, "' would both be '", t.torch,
                      "' in PyTorch's state_dict"));
    }
    entries.push_back(std::move(t));
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (modules[i].empty()) continue;
    const Layer& layer = *nodes[i].layer;
    for (const ParamSpec& p : layer.param_specs()) {
      add(nodes[i].name, modules[i], p.name, torch_parameter(p.name), p.shape, TorchTensorKind::kParameter);
    }
    for (const StateSpec& s : layer.state_specs()) {
      add(nodes[i].name, modules[i], s.name, s.name, s.shape, TorchTensorKind::kState);
    }
    if (layer.type() == "BatchNorm2d") {
      add(nodes[i].name, modules[i], "num_batches_tracked", "num_batches_tracked", Shape{},
          TorchTensorKind::kBatchesTracked);
    }
  }
  return entries;
}

std::vector<TorchName> torch_names(const NetSpec& net, const Graph& graph) {
  std::vector<TorchName> names;
  const std::vector<TorchTensor> entries = torch_state_dict(net, graph);
  for (const TorchTensorKind kind : {TorchTensorKind::kParameter, TorchTensorKind::kState}) {
    for (const TorchTensor& t : entries) {
      if (t.kind == kind) names.push_back({t.glassbox, t.torch});
    }
  }
  return names;
}

std::vector<std::string> torch_batches_tracked_names(const NetSpec& net, const Graph& graph) {
  std::vector<std::string> names;
  for (const TorchTensor& t : torch_state_dict(net, graph)) {
    if (t.kind == TorchTensorKind::kBatchesTracked) names.push_back(t.torch);
  }
  return names;
}

}  // namespace glassbox
