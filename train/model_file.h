// train/model_file.h: matching a safetensors file's tensors to a graph's,
// strictly, shared by the model file and the training file of a checkpoint
// (train/checkpoint.cpp). Internal to train/.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "nets/registry.h"
#include "tensor/safetensors.h"

namespace glassbox::model_file {

// What a tensor's values may be. Every float is finite; beyond that:
enum class Values {
  kTrained,    // a parameter or a momentum buffer: |x| <= kMaxTrained
  kStatistic,  // a running mean: any finite value
  kVariance,   // a running variance: >= 0
  kCount,      // num_batches_tracked (I64): >= 0
};

// Note [How large a trained value can be]: 1.8e19, about sqrt(FLT_MAX), the
// largest value whose square is a finite float. Past it the objective weight
// decay minimises (loss + wd/2 * sum w^2) is infinite in fp32, and what such a
// weight scales overflows where it is squared (batch norm's variance, the
// gradient norm). SGD from a small initialisation gets there only by
// diverging, which stops a run at its first non-finite loss
// (train/trainer.h): a file that holds such a value was damaged or made by
// hand, not trained in fp32.
inline constexpr float kMaxTrained = 1.8e19f;

// A tensor the file must hold: its name there, dtype and shape, where its
// values go (undefined for num_batches_tracked, which is only checked), and
// what they may be.
struct Wanted {
  std::string name;
  std::string dtype;  // "F32", "I64"
  Shape shape;
  Tensor target;
  Values values = Values::kTrained;
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
// of each, then how many more). Then, where all match, DataError naming the
// first value that its Values forbid, with its coordinates:
// "PATH: layer1.0.conv1.weight[12, 0, 1, 2] is nan; a model or checkpoint file
// holds finite values". Writes nothing.
std::vector<const HostTensor*> match(const SafetensorsFile& file, const std::vector<Wanted>& wanted,
                                     const std::string& path, const std::string& net);

// Copies each matched float32 tensor into its target (through tensor/copy.h:
// any device). The checks are match()'s, already done.
void assign(Context& ctx, const std::vector<Wanted>& wanted, const std::vector<const HostTensor*>& found);

// A float32 tensor of the graph (any device) as a file's tensor named `name`.
HostTensor host_copy(Context& ctx, const std::string& name, const Tensor& tensor);
// w's target as the tensor of the file at `path`, checked as match() checks
// what it reads: NumericalError naming the file and the first value it may
// not hold ("run/epoch-0003.safetensors: not written: fc1.weight[0, 0] is
// nan; a model or checkpoint file holds finite values (a load refuses such a
// file)"), so nothing is written that no load takes.
HostTensor savable_copy(Context& ctx, const Wanted& w, const std::string& path);

}  // namespace glassbox::model_file
