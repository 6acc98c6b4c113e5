// graph/graph.cpp: compile (parameters, memory plan, layer preparation),
// forward, backward and per-layer timing.
#include "graph/graph.h"

#include <algorithm>

#include "graph/init.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

// Every planned tensor starts on a 256-byte boundary: what cuDNN and cuBLAS
// kernels assume for their widest vector loads.
constexpr size_t kAlignment = 256;
size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// Places tensors back to back in one allocation: first reserve() each, then
// allocate(), then view() each at its offset.
class ArenaPlan {
 public:
  size_t reserve(size_t bytes) {
    const size_t offset = total_;
    total_ += aligned(bytes);
    return offset;
  }
  size_t total() const { return total_; }
  Tensor allocate(Context& ctx, MemoryCategory category) const {
    return ctx.allocate(Shape{static_cast<int64_t>(std::max<size_t>(total_, kAlignment) / sizeof(float))},
                        DType::kFloat32, category);
  }

 private:
  size_t total_ = 0;
};

size_t bytes_of(const Shape& shape, DType dtype) { return static_cast<size_t>(shape.numel()) * size_of(dtype); }

// Fails, before any of it is allocated, if the plan's total is more than the
// device has available: separately, each arena may fit while their sum does
// not, and on the CPU the kernel would not say so until a step first wrote
// the pages (Note [First touch] in tensor/allocator.cpp).
void check_plan_fits(const Context& ctx, std::initializer_list<std::pair<MemoryCategory, size_t>> plan) {
  size_t total = 0;
  std::string parts;
  for (const auto& [category, bytes] : plan) {
    total += bytes;
    parts += cat(parts.empty() ? "" : ", ", name_of(category), " ", format_bytes(static_cast<int64_t>(bytes)));
  }
  if (static_cast<int64_t>(total) > ctx.allocator().available().available) {
    throw OutOfMemoryError(ctx.allocator().out_of_memory_message(
        cat("for the graph's memory plan: ", format_bytes(static_cast<int64_t>(total)), " (", parts, ")")));
  }
}

}  // namespace

Graph::Graph(std::vector<Node> nodes, int loss) : nodes_(std::move(nodes)), loss_(loss) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].is_input()) layers_.push_back(static_cast<int>(i));
  }
}
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::~Graph() = default;

const Node& Graph::node(std::string_view name) const {
  for (const Node& n : nodes_) {
    if (n.name == name) return n;
  }
  std::string names;
  for (const Node& n : nodes_) names += (names.empty() ? "" : ", ") + n.name;
  throw ConfigError(cat("no node named '", name, "'; nodes: ", names));
}

int64_t Graph::parameter_count() const {
  int64_t count = 0;
  for (int i : layers_) {
    for (const ParamSpec& spec : nodes_[static_cast<size_t>(i)].layer->param_specs()) count += spec.shape.numel();
  }
  return count;
}

int64_t Graph::macs() const {
  int64_t total = 0;
  for (int i : layers_) total += nodes_[static_cast<size_t>(i)].layer->macs();
  return total;
}

int Graph::batch() const {
  for (const Node& n : nodes_) {
    if (n.is_input()) return static_cast<int>(n.shape[0]);
  }
  return 0;
}

void Graph::compile(Context& ctx, const CompileOptions& options) {
  options_ = options;
  device_ = ctx.device();
  ctx.set_precision(options.precision);
  plan_memory(ctx);

  size_t workspace = 0;
  for (int i : layers_) {
    Layer& layer = *nodes_[static_cast<size_t>(i)].layer;
    layer.prepare(ctx, options.layers);
    workspace = std::max(workspace, layer.workspace_bytes());
  }
  ctx.reserve_workspace(workspace);

  const int marks = static_cast<int>(layers_.size()) + 1;
  forward_marks_ = options.layer_timing ? std::make_unique<EventTimer>(ctx, marks) : nullptr;
  backward_marks_ = options.layer_timing ? std::make_unique<EventTimer>(ctx, marks) : nullptr;
  ctx.synchronize();
  compiled_ = true;
}

void Graph::plan_memory(Context& ctx) {
  // Parameters and their gradients: one flat buffer each, same layout.
  ArenaPlan parameter_plan;
  std::vector<std::vector<size_t>> parameter_offsets(nodes_.size());
  for (int i : layers_) {
    for (const ParamSpec& spec : nodes_[static_cast<size_t>(i)].layer->param_specs()) {
      parameter_offsets[static_cast<size_t>(i)].push_back(parameter_plan.reserve(bytes_of(spec.shape, DType::kFloat32)));
    }
  }
  // Inputs, activations and activation gradients: one arena each. Every layer
  // output keeps its own slot (no reuse yet), so any tensor can be inspected
  // after a step.
  ArenaPlan input_plan, value_plan, grad_plan;
  std::vector<size_t> value_offset(nodes_.size()), grad_offset(nodes_.size(), SIZE_MAX);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    const size_t bytes = bytes_of(node.shape, node.dtype);
    value_offset[i] = node.is_input() ? input_plan.reserve(bytes) : value_plan.reserve(bytes);
    if (!node.is_input() && static_cast<int>(i) != loss_) grad_offset[i] = grad_plan.reserve(bytes);
  }
  check_plan_fits(ctx, {{MemoryCategory::kParameters, parameter_plan.total()},
                        {MemoryCategory::kGradients, parameter_plan.total()},
                        {MemoryCategory::kData, input_plan.total()},
                        {MemoryCategory::kActivations, value_plan.total()},
                        {MemoryCategory::kActivationGrads, grad_plan.total()}});

  parameters_ = parameter_plan.allocate(ctx, MemoryCategory::kParameters);
  gradients_ = parameter_plan.allocate(ctx, MemoryCategory::kGradients);
  fill_zero(ctx, parameters_);  // the alignment gaps too, so the optimizer sees only zeros there
  fill_zero(ctx, gradients_);
  int parameter_index = 0;
  for (int i : layers_) {
    Node& node = nodes_[static_cast<size_t>(i)];
    const std::vector<ParamSpec> specs = node.layer->param_specs();
    node.params.clear();
    node.param_grads.clear();
    for (size_t j = 0; j < specs.size(); ++j) {
      const size_t offset = parameter_offsets[static_cast<size_t>(i)][j];
      const std::string name = cat(node.name, ".", specs[j].name);
      node.params.push_back(parameters_.view(offset, specs[j].shape, DType::kFloat32).named(name));
      node.param_grads.push_back(gradients_.view(offset, specs[j].shape, DType::kFloat32).named(name + " gradient"));
      const std::vector<float> values = initial_values(specs[j], options_.seed, parameter_index++);
      from_vector<float>(ctx, values, node.params.back());
    }
  }

  const Tensor inputs = input_plan.allocate(ctx, MemoryCategory::kData);
  const Tensor values = value_plan.allocate(ctx, MemoryCategory::kActivations);
  const Tensor grads = grad_plan.allocate(ctx, MemoryCategory::kActivationGrads);
  arenas_ = {inputs, values, grads};
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    node.value = (node.is_input() ? inputs : values).view(value_offset[i], node.shape, node.dtype).named(node.name);
    if (grad_offset[i] != SIZE_MAX) {
      node.grad = grads.view(grad_offset[i], node.shape, DType::kFloat32).named(node.name + " gradient");
    } else {
      node.grad = Tensor().named(cat("gradient of '", node.name, "' (none: ",
                                     node.is_input() ? "graph inputs get no gradient"
                                                     : "the loss starts backward with 1", ")"));
    }
  }

  // Wiring: each layer's inputs and input gradients. Walking backward order,
  // the first gradient to reach a value writes it, later ones add to it.
  std::vector<bool> reached(nodes_.size(), false);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    Node& node = nodes_[static_cast<size_t>(*it)];
    node.input_values.clear();
    node.input_grads.clear();
    node.input_grad_modes.clear();
    for (int producer : node.inputs) {
      const auto p = static_cast<size_t>(producer);
      node.input_values.push_back(nodes_[p].value);
      node.input_grads.push_back(nodes_[p].grad);  // undefined for graph inputs: no gradient wanted
      node.input_grad_modes.push_back(reached[p] ? GradMode::kAdd : GradMode::kWrite);
      if (nodes_[p].grad.defined()) reached[p] = true;
    }
  }
}

const Tensor& Graph::input(std::string_view name) const {
  std::string names;
  for (const Node& node : nodes_) {
    if (!node.is_input()) continue;
    if (node.name == name) {
      if (!compiled_) throw Error(cat("input '", name, "': compile the graph before filling its inputs"));
      return node.value;
    }
    names += (names.empty() ? "" : ", ") + node.name;
  }
  throw ConfigError(cat("no input named '", name, "'; inputs: ", names));
}

void Graph::check_context(const Context& ctx, std::string_view what) const {
  if (!compiled_) throw Error(cat(what, ": the graph is not compiled; call compile(ctx) first"));
  if (ctx.device() != device_) {
    throw Error(cat(what, ": the graph was compiled for ", device_.str(), ", called with a ",
                    ctx.device().str(), " context"));
  }
}

void Graph::after_layer(Context& ctx, const Node& node, std::string_view pass) const {
  try {
    ctx.synchronize();
  } catch (const Error& e) {
    throw Error(cat("after the ", pass, " of ", node.name, " (", node.layer->type(), "): ", e.what()));
  }
}

void Graph::forward(Context& ctx, Phase phase) {
  check_context(ctx, "forward");
  if (forward_marks_) forward_marks_->record(0);
  for (size_t k = 0; k < layers_.size(); ++k) {
    Node& node = nodes_[static_cast<size_t>(layers_[k])];
    node.layer->forward(ctx, {.inputs = node.input_values, .output = node.value, .params = node.params, .phase = phase});
    if (forward_marks_) forward_marks_->record(static_cast<int>(k) + 1);
    if (options_.sync_each_layer) after_layer(ctx, node, "forward");
  }
}

void Graph::zero_grad(Context& ctx) {
  check_context(ctx, "zero_grad");
  fill_zero(ctx, gradients_);
}

void Graph::backward(Context& ctx) {
  check_context(ctx, "backward");
  if (backward_marks_) backward_marks_->record(0);
  for (size_t j = 0; j < layers_.size(); ++j) {
    Node& node = nodes_[static_cast<size_t>(layers_[layers_.size() - 1 - j])];
    node.layer->backward(ctx, {.inputs = node.input_values,
                               .output = node.value,
                               .output_grad = node.grad,
                               .input_grads = node.input_grads,
                               .input_grad_modes = node.input_grad_modes,
                               .params = node.params,
                               .param_grads = node.param_grads});
    if (backward_marks_) backward_marks_->record(static_cast<int>(j) + 1);
    if (options_.sync_each_layer) after_layer(ctx, node, "backward");
  }
}

float Graph::loss(Context& ctx) const {
  check_context(ctx, "loss");
  return to_vector<float>(ctx, nodes_[static_cast<size_t>(loss_)].value)[0];
}

std::vector<LayerTime> Graph::layer_times() const {
  if (!forward_marks_) throw Error("layer_times: compile with CompileOptions::layer_timing = true");
  const int count = static_cast<int>(layers_.size());
  std::vector<LayerTime> times;
  for (int k = 0; k < count; ++k) {
    const int j = count - 1 - k;  // the same layer's position in backward order
    times.push_back({layers_[static_cast<size_t>(k)], forward_marks_->elapsed_ms(k, k + 1),
                     backward_marks_->elapsed_ms(j, j + 1)});
  }
  return times;
}

}  // namespace glassbox
