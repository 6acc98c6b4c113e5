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

}  // namespace glassbox
