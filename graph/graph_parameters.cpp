// graph/graph_parameters.cpp: a compiled graph's parameters and carried
// state by name (views into the flat buffers that compile() allocated), and
// each layer's byte range in them (the data-parallel gradient sync's buckets,
// `glassbox scale`).
#include "graph/graph.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tensor/allocator.h"
#include "tensor/error.h"

namespace glassbox {

std::vector<NamedTensor> Graph::named_parameters() const {
  require_compiled("named_parameters");
  return named_views(parameters_);
}

std::vector<NamedTensor> Graph::named_views(const Tensor& flat) const {
  require_compiled("named_views");
  if (!flat.defined() || flat.bytes() != parameters_.bytes() || flat.dtype() != DType::kFloat32) {
    throw ShapeError(cat("named_views: ", flat.defined() ? flat.str() : std::string("an undefined tensor"),
                         " is not laid out as the parameters (", format_bytes(static_cast<int64_t>(parameters_.bytes())),
                         ")"));
  }
  std::vector<NamedTensor> views;
  for (const ParameterSlot& slot : parameter_slots_) {
    views.push_back(
        {slot.name, flat.view(slot.offset, slot.shape, DType::kFloat32).with_layout(slot.layout).named(slot.name)});
  }
  return views;
}

std::vector<Graph::ParameterRange> Graph::parameter_ranges() const {
  require_compiled("parameter_ranges");
  std::vector<ParameterRange> ranges;
  for (size_t k = 0; k < layers_.size(); ++k) {
    const Node& node = nodes_[static_cast<size_t>(layers_[k])];
    if (node.params.empty()) continue;
    // The lowest start and the highest end: a packed layer's parameters need
    // not lie in param_specs() order (Note [LSTM weight space]).
    size_t begin = SIZE_MAX, end = 0;
    for (const Tensor& param : node.params) {
      // In a bf16 or fp16 graph a layer's parameters are views into the
      // 16-bit working copy, at the masters' element offsets (Note [Mixed
      // precision]): the range is the masters', in float32 bytes.
      const Tensor& flat = param.dtype() == DType::kFloat32 ? parameters_ : working_parameters_;
      const auto element = static_cast<size_t>(static_cast<const std::byte*>(param.raw()) -
                                                static_cast<const std::byte*>(flat.raw())) /
                           size_of(param.dtype());
      const size_t at = element * sizeof(float), bytes = static_cast<size_t>(param.numel()) * sizeof(float);
      if (!flat.defined() || at + bytes > parameters_.bytes()) {
        throw Error(cat("parameter_ranges: ", node.name, "'s ", param.name(), " lies outside the graph's parameters"));
      }
      begin = std::min(begin, at);
      end = std::max(end, at + bytes);
    }
    ranges.push_back({layers_[k], static_cast<int>(layers_.size() - 1 - k), begin, end});
  }
  return ranges;
}

std::vector<NamedTensor> Graph::named_state() const {
  require_compiled("named_state");
  std::vector<NamedTensor> state;
  for (int i : layers_) {
    const Node& node = nodes_[static_cast<size_t>(i)];
    for (NamedTensor& t : node.layer->state()) {
      const std::string name = cat(node.name, ".", t.name);
      state.push_back({name, t.tensor.named(name)});
    }
  }
  return state;
}

}  // namespace glassbox
