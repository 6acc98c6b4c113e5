// train/model_file.h: matching a safetensors file's tensors to a graph's,
// strictly, shared by the model file and the training file of a checkpoint
// (train/checkpoint.cpp, optim/checkpoint_dir.cpp). Internal to optim/.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "nets/registry.h"
#include "tensor/safetensors.h"

namespace glassbox::model_file {

// A tensor the file must hold: its name there, dtype and shape, and where
// its values go (undefined for num_batches_tracked, which is only checked).
struct Wanted {
  std::string name;
  std::string dtype;  // "F32", "I64"
  Shape shape;
  Tensor target;
};

// A model file's tensors, in PyTorch's state_dict order (nets/torch_names.h):
// parameters and running statistics as views of the compiled `graph`, then
// each batch norm's num_batches_tracked.
std::vector<Wanted> model_tensors(const Graph& graph, const NetSpec& net);
// The momentum buffers, "momentum_buffer.<PyTorch name>", as views of `velocity`.
std::vector<Wanted> momentum_tensors(const Graph& graph, const NetSpec& net, const Tensor& velocity);

// The file's tensor for each wanted one, in the same order. Throws DataError
// "PATH: does not match NET: " and every problem: tensors of another shape or
// dtype ("layer1.0.conv1.weight: the file has (64, 64, 3, 3), ResNet50
// expects (64, 64, 1, 1)"), missing ones and unexpected ones (the first few
// of each, then how many more). Writes nothing.
std::vector<const HostTensor*> match(const SafetensorsFile& file, const std::vector<Wanted>& wanted,
                                     const std::string& path, const std::string& net);

// Copies each matched float32 tensor into its target (through tensor/copy.h:
// any device). The checks are match()'s, already done.
void assign(Context& ctx, const std::vector<Wanted>& wanted, const std::vector<const HostTensor*>& found);

// A float32 tensor of the graph (any device) as a file's tensor named `name`.
HostTensor host_copy(Context& ctx, const std::string& name, const Tensor& tensor);

}  // namespace glassbox::model_file
