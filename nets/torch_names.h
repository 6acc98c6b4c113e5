// nets/torch_names.h: the names PyTorch gives a network's weights, so that a
// Glassbox checkpoint is a state_dict that PyTorch loads as it is.
//
// For the networks torchvision also has (AlexNet, VGG11/13/16/19, GoogLeNet,
// InceptionV3, ResNet18/34/50/101/152) the names are torchvision's, e.g.
//   AlexNet   conv1.weight           -> features.0.weight
//   VGG16     fc6.bias               -> classifier.0.bias
//   ResNet50  layer1.0.bn1.scale     -> layer1.0.bn1.weight
//             layer1.0.bn1.running_mean (state) -> layer1.0.bn1.running_mean
// and every batch norm also has torchvision's "<bn>.num_batches_tracked" (an
// int64 scalar that Glassbox does not use, written so that PyTorch's strict
// loading finds every key). For the other networks (LeNet, Overfeat, ResNet56,
// Xception, FCN5, MLP specs) the layer names are Glassbox's, with PyTorch's
// parameter names (batch norm's scale and shift are weight and bias), which
// the PyTorch peer's modules carry too (bench/peers/peer_custom_models.py).
//
// tests/test_torch_names.cpp checks every network's whole list, names,
// shapes and order, against the state_dict of the PyTorch model itself
// (tests/data/torch_keys/, written by bench/peers/torch_state_keys.py).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nets/registry.h"

namespace glassbox {

struct TorchName {
  std::string glassbox;  // "conv1.weight", "bn1.running_mean"
  std::string torch;     // "features.0.weight", "bn1.running_mean"
};

// Every parameter (Graph::named_parameters order) and then every state tensor
// (Graph::named_state order) of `graph`, built from `net`, with its PyTorch
// name. Throws Error if two tensors would get the same PyTorch name.
std::vector<TorchName> torch_names(const NetSpec& net, const Graph& graph);

// The "<bn>.num_batches_tracked" keys of `graph`'s batch norms, under their
// PyTorch names, in graph order.
std::vector<std::string> torch_batches_tracked_names(const NetSpec& net, const Graph& graph);

// One entry of the state_dict, what it is in Glassbox.
enum class TorchTensorKind {
  kParameter,       // float32, a view of Graph::parameters()
  kState,           // float32, Layer::state() (running statistics)
  kBatchesTracked,  // int64 scalar that Glassbox does not keep
};

struct TorchTensor {
  std::string glassbox;  // "layer1.0.bn1.scale"; for num_batches_tracked "layer1.0.bn1.num_batches_tracked"
  std::string torch;     // "layer1.0.bn1.weight"
  Shape shape;           // () for num_batches_tracked
  TorchTensorKind kind;
};

// The whole state_dict of `graph` in PyTorch's order: module by module, each
// module's parameters and then its buffers (a batch norm: weight, bias,
// running_mean, running_var, num_batches_tracked). PyTorch orders modules as
// their __init__ registers them, which for every Glassbox network is graph
// order. Needs no compile: the shapes come from the layers (param_specs,
// state_specs). Throws Error as torch_names() does, and ConfigError naming
// the first node that differs where `graph` is not built from `net` (Note [A
// model file is its network's]).
std::vector<TorchTensor> torch_state_dict(const NetSpec& net, const Graph& graph);

}  // namespace glassbox
