// graph/graph.cpp: compile (parameters, memory plan, layer preparation),
// forward, backward and per-layer timing.
#include "graph/graph.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstddef>
#include <new>

#include "graph/fusion.h"
#include "graph/init.h"
#include "graph/layouts.h"
#include "graph/memory_plan.h"
#include "graph/mixed_precision.h"
#include "tensor/convert.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

// An option of an enumeration type that holds none of its values (cast from
// a number) is refused by name, not read as whichever branch takes the rest.
template <typename E>
void check_enum(E value, E last, std::string_view option) {
  const auto v = static_cast<int64_t>(value);
  if (v < 0 || v > static_cast<int64_t>(last)) {
    throw ConfigError(cat("compile: CompileOptions::", option, " is ", v, ", none of its values (0 to ",
                          static_cast<int64_t>(last), ")"));
  }
}

void check_enums(const CompileOptions& o) {
  check_enum(o.precision, Precision::kFp16, "precision");
  check_enum(o.phase, Phase::kInference, "phase");
  check_enum(o.memory_reuse, MemoryReuse::kOff, "memory_reuse");
  check_enum(o.layout, LayoutChoice::kNhwc, "layout");
  check_enum(o.layers.algo_search, AlgoSearch::kMeasured, "layers.algo_search");
  check_enum(o.layers.cudnn_api, CudnnApi::kGraph, "layers.cudnn_api");
  check_enum(o.layers.cpu_conv, CpuConvPath::kOneDnn, "layers.cpu_conv");
}

// Places tensors back to back in one allocation: first reserve() each, then
// allocate(), then view() each at its offset, a multiple of `alignment`.
class ArenaPlan {
 public:
  explicit ArenaPlan(size_t alignment = kPlanAlignment) : alignment_(alignment) {}
  size_t reserve(size_t bytes) {
    const size_t offset = total_;
    total_ += (bytes + alignment_ - 1) / alignment_ * alignment_;
    return offset;
  }
  size_t total() const { return total_; }

 private:
  size_t alignment_;
  size_t total_ = 0;
};

Tensor allocate_arena(Context& ctx, size_t bytes, MemoryCategory category) {
  return ctx.allocate(Shape{static_cast<int64_t>(std::max(bytes, kPlanAlignment) / sizeof(float))}, DType::kFloat32,
                      category);
}

size_t bytes_of(const Shape& shape, DType dtype) { return static_cast<size_t>(shape.numel()) * size_of(dtype); }

// Fails, before any of it is allocated, if the plan's total is more than the
// device has available: separately, each arena may fit while their sum does
// not, and on the CPU the kernel would not say so until a step first wrote
// the pages (Note [First touch] in tensor/allocator.cpp).
void check_plan_fits(const Context& ctx, std::initializer_list<std::pair<MemoryCategory, size_t>> plan) {
  size_t total = 0;
  std::string parts;
  for (const auto& [category, bytes] : plan) {
    if (bytes == 0) continue;
    total += bytes;
    parts += cat(parts.empty() ? "" : ", ", name_of(category), " ", format_bytes(static_cast<int64_t>(bytes)));
  }
  if (static_cast<int64_t>(total) > ctx.allocator().available().available) {
    throw OutOfMemoryError(ctx.allocator().out_of_memory_message(
        cat("for the graph's memory plan: ", format_bytes(static_cast<int64_t>(total)), " (", parts, ")")));
  }
}

// Reserves one layer's parameters and returns their offsets: each aligned on
// its own, or, for a layer that packs them (Layer::packs_parameters), as one
// block aligned at its start, each parameter at its packed_offsets() entry.
std::vector<size_t> reserve_parameters(ArenaPlan& plan, const Layer& layer) {
  std::vector<size_t> offsets;
  const std::vector<ParamSpec> specs = layer.param_specs();
  if (!layer.packs_parameters()) {
    for (const ParamSpec& spec : specs) offsets.push_back(plan.reserve(bytes_of(spec.shape, DType::kFloat32)));
    return offsets;
  }
  size_t block = 0;
  for (const ParamSpec& spec : specs) block += bytes_of(spec.shape, DType::kFloat32);
  const size_t start = plan.reserve(block);
  for (size_t packed : layer.packed_offsets()) offsets.push_back(start + packed);
  return offsets;
}

size_t parameter_bytes(const std::vector<Node>& nodes, const std::vector<int>& layers) {
  ArenaPlan plan(kParameterAlignment);
  for (int i : layers) reserve_parameters(plan, *nodes[static_cast<size_t>(i)].layer);
  return plan.total();
}

size_t input_bytes(const std::vector<Node>& nodes) {
  ArenaPlan plan;
  for (const Node& node : nodes) {
    if (node.is_input()) plan.reserve(bytes_of(node.shape, node.dtype));
  }
  return plan.total();
}

}  // namespace

Graph::Graph(std::vector<Node> nodes, int loss) : nodes_(std::move(nodes)), loss_(loss) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].is_input()) layers_.push_back(static_cast<int>(i));
  }
}
Graph::Graph(Graph&&) noexcept = default;
// A self-move leaves the graph as it was: the members' own move assignments
// would empty its nodes under a graph still marked compiled. Otherwise the
// members' moves, as a defaulted assignment makes them (Graph holds no const
// or reference member, and is final: nothing else lives in its storage).
Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    this->~Graph();
    new (this) Graph(std::move(other));
  }
  return *this;
}
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
  check_not_moved("batch");
  for (const Node& n : nodes_) {
    if (!n.is_input()) continue;
    const int64_t batch = n.name == "tokens" && n.shape.rank() == 2 ? n.shape[1] : n.shape[0];
    if (batch > INT_MAX) {
      throw SizeError(cat("input '", n.name, "' ", n.shape.str(), ": a batch of ", batch, " is past ", INT_MAX,
                          ", the most a graph's batch may be"));
    }
    return static_cast<int>(batch);
  }
  return 0;
}

void Graph::reset_carried_state(Context& ctx) {
  require_compiled("reset_carried_state");
  for (int i : layers_) nodes_[static_cast<size_t>(i)].layer->reset_carried_state(ctx);
}

// Note [Mixed precision] (graph/mixed_precision.h): which values are 16-bit.
void Graph::set_stored_types(Precision precision) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    const bool sixteen = is_mixed(precision) && !node.is_input() && static_cast<int>(i) != loss_ &&
                         node.dtype == DType::kFloat32;
    node.stored = sixteen ? value_dtype(precision) : node.dtype;
  }
}

void Graph::check_not_moved(std::string_view what) const {
  if (moved_.yes) {
    throw Error(cat(what, ": this graph was moved from; its nodes and buffers are the Graph it was moved into's"));
  }
}

void Graph::compile(Context& ctx, const CompileOptions& options) {
  check_not_moved("compile");
  if (compiled_) {
    throw ConfigError("compile: the graph is compiled already; a second compile would make new parameter, gradient "
                      "and input buffers and leave every tensor and optimizer taken from the first behind: build the "
                      "graph again to compile it with other options");
  }
  check_enums(options);
  last_forward_.reset();
  forward_stopped_ = false;
  input_gradient_nodes_ = input_gradient_nodes(nodes_, options.input_gradients, options.phase);  // checked first
  options_ = options;
  options_.layers.phase = options.phase;
  replay_generation_ = next_serial();
  device_ = ctx.device();
  compiled_allocator_ = &ctx.allocator();
  ctx.set_precision(options.precision);
  set_stored_types(options.precision);
  loss_scale_ = LossScale{};
  for (Node& node : nodes_) node.fused_into = node.backward_fused_into = node.residual = -1;
  plan_ = std::make_unique<MemoryPlan>(
      plan_activations(nodes_, layers_, loss_, options.phase, options.memory_reuse, input_gradient_nodes_));
  const bool training = options.phase == Phase::kTraining;
  const bool mixed = is_mixed(options.precision);
  // What a layer can fuse may depend on its layouts and value type: set them
  // first (NCHW until the layout plan below).
  for (int i : layers_) {
    Layer& layer = *nodes_[static_cast<size_t>(i)].layer;
    layer.set_channels_last(std::vector<bool>(layer.input_shapes().size(), false), false);
    // Note [16-bit values in a layer] (layers/layer.h)
    const bool sixteen = mixed && !layer.is_loss() && layer.computes_16_bit(ctx);
    layer.set_value_storage(sixteen ? value_dtype(options.precision) : DType::kFloat32);
  }
  // Note [A ReLU fused into its producer]: decided from the plan, before the
  // producers prepare (a fused oneDNN forward is its own primitive).
  plan_fusion(ctx, nullptr);
  const size_t parameters = parameter_bytes(nodes_, layers_);
  // Mixed precision adds a 16-bit copy of the parameters, and on a GPU a
  // 16-bit layer's weight-gradient scratch (Note [16-bit parameter
  // gradients], layers/conv2d/conv2d_cuda.cpp): at most half as much again.
  const size_t gradients = mixed && ctx.is_cuda() ? parameters + parameters / 2 : parameters;
  check_plan_fits(ctx, {{MemoryCategory::kParameters, mixed ? parameters + parameters / 2 : parameters},
                        {MemoryCategory::kGradients, training ? gradients : 0},
                        {MemoryCategory::kData, input_bytes(nodes_)},
                        {MemoryCategory::kActivations, plan_->values.total},
                        {MemoryCategory::kActivationGrads, plan_->grads.total}});

  // Layers first: a measured cuDNN search allocates scratch tensors and frees
  // them before the plan's arenas exist, so the search's scratch and the
  // network's memory are never held at once.
  // Where the layout plan prepares the layers again, a first prepare that
  // only answers what each layer can read and write need not time cuDNN's
  // algorithms: the measured search runs once, in the layout it is for.
  const bool layouts = plans_channels_last(options.layout, ctx.device(), options.precision);
  PrepareOptions first = options_.layers;
  const bool probe_first = layouts && ctx.is_cuda() && first.algo_search == AlgoSearch::kMeasured;
  if (probe_first) first.algo_search = AlgoSearch::kHeuristic;
  for (int i : layers_) nodes_[static_cast<size_t>(i)].layer->prepare(ctx, first);
  plan_layouts(ctx, /*prepare_all=*/probe_first);
  // A layer whose fusion depends on its layout (a batch norm on CUDA) answers
  // again in the layout it now has.
  plan_fusion(ctx, &options_.layers);
  size_t workspace = 0;
  for (int i : layers_) workspace = std::max(workspace, nodes_[static_cast<size_t>(i)].layer->workspace_bytes());
  ctx.reserve_workspace(workspace);
  allocate_parameters(ctx);
  allocate_activations(ctx);
  staging_.reset();
  if (mixed) {
    size_t staging = 0;
    for (int i : layers_) {
      staging = std::max(staging, PrecisionStaging::staging_bytes(nodes_[static_cast<size_t>(i)], options.phase));
    }
    staging_ = std::make_unique<PrecisionStaging>(ctx, staging);
  }

  // Up to three spans per layer (forward, backward-data, backward-weights),
  // and a few for the caller's own (the optimizer).
  const int span_capacity = 3 * static_cast<int>(layers_.size()) + 8;
  spans_ = std::make_unique<StepSpans>(ctx, span_capacity, SpanOptions{.timing = options.layer_timing, .nvtx = options.nvtx});
  ctx.synchronize();
  compiled_ = true;
}

// Note [Channels-last values]: the layers were prepared in NCHW; those that
// now read or write a channels-last value are prepared again (all of them
// where `prepare_all`: the first prepare skipped the measured search).
void Graph::plan_layouts(Context& ctx, bool prepare_all) {
  for (Node& node : nodes_) node.channels_last = false;
  if (!plans_channels_last(options_.layout, ctx.device(), options_.precision)) return;
  const std::vector<bool> channels_last = plan_channels_last(nodes_, layers_, loss_);
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i].channels_last = channels_last[i];
  for (int i : layers_) {
    Node& node = nodes_[static_cast<size_t>(i)];
    std::vector<bool> inputs;
    for (int producer : node.inputs) inputs.push_back(channels_last[static_cast<size_t>(producer)]);
    const bool any = node.channels_last || std::find(inputs.begin(), inputs.end(), true) != inputs.end();
    if (!any && !prepare_all) continue;
    node.layer->set_channels_last(std::move(inputs), node.channels_last);
    node.layer->prepare(ctx, options_.layers);
  }
}

// Decided from the plan without fusion (which ReLUs run in place); the plan
// is then made again with it: a fused add's value is its batch norm's, and
// lifetimes and gradient blocks change.
void Graph::plan_fusion(Context& ctx, const PrepareOptions* prepare) {
  const bool fused_plan = std::any_of(nodes_.begin(), nodes_.end(), [](const Node& n) {
    return n.backward_fused_into >= 0 || n.residual >= 0;
  });
  const MemoryPlan unfused = fused_plan ? plan_activations(nodes_, layers_, loss_, options_.phase,
                                                           options_.memory_reuse, input_gradient_nodes_)
                                        : *plan_;
  const ReluFusion fusion = options_.fusion ? plan_relu_fusion(ctx, options_.phase, nodes_, layers_, unfused)
                                            : no_relu_fusion(nodes_.size());
  std::vector<bool> applies_relu(nodes_.size(), false);
  bool plan_changed = false;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    plan_changed = plan_changed || nodes_[i].backward_fused_into != fusion.backward_fused_into[i] ||
                   nodes_[i].residual != fusion.residual[i];
    nodes_[i].fused_into = fusion.fused_into[i];
    nodes_[i].backward_fused_into = fusion.backward_fused_into[i];
    nodes_[i].residual = fusion.residual[i];
    if (fusion.fused_into[i] >= 0) applies_relu[static_cast<size_t>(fusion.fused_into[i])] = true;
  }
  for (int i : layers_) {
    Layer& layer = *nodes_[static_cast<size_t>(i)].layer;
    const bool applies = applies_relu[static_cast<size_t>(i)];
    const bool residual = fusion.residual[static_cast<size_t>(i)] >= 0;
    if (prepare != nullptr && layer.fused_relu() == applies && layer.fused_residual() == residual) continue;
    layer.set_fused_relu(ctx, options_.phase, applies, residual);
    if (prepare != nullptr) layer.prepare(ctx, *prepare);
  }
  if (plan_changed) {
    plan_ = std::make_unique<MemoryPlan>(plan_activations(nodes_, layers_, loss_, options_.phase,
                                                          options_.memory_reuse, input_gradient_nodes_,
                                                          fusion.backward_fused_into, fusion.add_fused_into));
  }
}

const MemoryPlan& Graph::memory_plan() const {
  check_not_moved("memory_plan");
  if (!plan_) throw Error("memory_plan: the graph is not compiled; call compile(ctx) first");
  return *plan_;
}

// Parameters and their gradients: one flat buffer each, same layout (no
// gradients in an inference plan).
void Graph::allocate_parameters(Context& ctx) {
  const bool training = options_.phase == Phase::kTraining;
  ArenaPlan plan(kParameterAlignment);
  std::vector<std::vector<size_t>> offsets(nodes_.size());
  for (int i : layers_) offsets[static_cast<size_t>(i)] = reserve_parameters(plan, *nodes_[static_cast<size_t>(i)].layer);
  parameters_ = allocate_arena(ctx, plan.total(), MemoryCategory::kParameters);
  fill_zero(ctx, parameters_);  // the alignment gaps too, so the optimizer sees only zeros there
  working_parameters_ = Tensor();
  const DType working = value_dtype(options_.precision);
  if (is_mixed(options_.precision)) {
    working_parameters_ = ctx.allocate(parameters_.shape(), working, MemoryCategory::kParameters);
  }
  gradients_ = Tensor();
  if (training) {
    gradients_ = allocate_arena(ctx, plan.total(), MemoryCategory::kGradients);
    fill_zero(ctx, gradients_);
  }
  int parameter_index = 0;
  parameter_slots_.clear();
  for (int i : layers_) {
    Node& node = nodes_[static_cast<size_t>(i)];
    const std::vector<ParamSpec> specs = node.layer->param_specs();
    node.params.clear();
    node.param_grads.clear();
    for (size_t j = 0; j < specs.size(); ++j) {
      const size_t offset = offsets[static_cast<size_t>(i)][j];
      const std::string name = cat(node.name, ".", specs[j].name);
      const Layout layout = specs[j].layout;
      parameter_slots_.push_back({name, specs[j].shape, offset, layout});
      node.params.push_back(parameters_.view(offset, specs[j].shape, DType::kFloat32).with_layout(layout).named(name));
      node.param_grads.push_back(
          training ? gradients_.view(offset, specs[j].shape, DType::kFloat32).with_layout(layout).named(name + " gradient")
                   : Tensor().named(cat(name, " gradient (none: compiled for inference)")));
      // On the CPU straight into the parameter: a host copy first would add the
      // largest parameter to the peak RSS (392 MiB for VGG16's fc6). The
      // initial values are drawn in KCRS order whatever the layout, so a KRSC
      // filter starts as its KCRS twin does.
      Tensor& param = node.params.back();
      const auto count = static_cast<size_t>(specs[j].shape.numel());
      if (param.device().is_cuda() || layout != Layout::kNCHW) {
        std::vector<float> values(count);
        fill_initial_values(specs[j], options_.seed, parameter_index++, values);
        write_in_nchw_order(ctx, values, param);
      } else {
        fill_initial_values(specs[j], options_.seed, parameter_index++, {param.data<float>(), count});
      }
    }
  }
  if (!working_parameters_.defined()) return;
  // The layers that use the 16-bit copy get views into it, at the same
  // element offsets (Note [Mixed precision]).
  refresh_working_parameters(ctx);
  for (int i : layers_) {
    Node& node = nodes_[static_cast<size_t>(i)];
    if (node.layer->keeps_fp32_parameters()) continue;
    // Staging converts one tensor at a time, so a packed block would lose its
    // layout: a packing layer keeps fp32 parameters or computes in 16 bits.
    if (node.layer->packs_parameters() && node.layer->weight_storage() != working) {
      throw Error(cat(node.name, ": a ", node.layer->type(), " packs its parameters, so in a ",
                      flag_name_of(options_.precision), " graph it must take its fp32 master weights or compute in ",
                      name_of(working), " itself"));
    }
    for (Tensor& param : node.params) {
      const auto bytes = static_cast<size_t>(static_cast<const char*>(param.raw()) -
                                             static_cast<const char*>(parameters_.raw()));
      param = working_parameters_.view(bytes / sizeof(float) * size_of(working), param.shape(), working)
                  .with_layout(param.layout())
                  .named(std::string(param.name()));
    }
  }
}

void Graph::refresh_working_parameters(Context& ctx) {
  if (working_parameters_.defined()) convert(ctx, parameters_, working_parameters_);
}

void Graph::set_loss_scale(float scale) {
  require_compiled("set_loss_scale");
  if (!(scale > 0.0f && scale <= FLT_MAX)) {
    throw ConfigError(cat("set_loss_scale: the loss scale must be positive and finite, got ", scale));
  }
  if (scale != loss_scale_.value || loss_scale_.device != nullptr) replay_generation_ = next_serial();
  loss_scale_ = LossScale{.value = scale, .device = nullptr};
}

void Graph::set_loss_scale_on_device(const float* scale) {
  require_compiled("set_loss_scale_on_device");
  if (scale != nullptr && !device_.is_cuda()) {
    throw Error(cat("set_loss_scale_on_device: the graph is on ", device_.str(), "; use set_loss_scale"));
  }
  if (scale != loss_scale_.device) replay_generation_ = next_serial();
  loss_scale_.device = scale;
}

// Inputs in their own arena; activations and their gradients where the
// memory plan puts them.
void Graph::allocate_activations(Context& ctx) {
  const MemoryPlan& plan = *plan_;
  ArenaPlan input_plan;
  std::vector<size_t> input_offset(nodes_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].is_input()) input_offset[i] = input_plan.reserve(bytes_of(nodes_[i].shape, nodes_[i].dtype));
  }
  const Tensor inputs = allocate_arena(ctx, input_plan.total(), MemoryCategory::kData);
  fill_zero(ctx, inputs);  // a forward before the caller writes them reads zeros, not the heap's old bytes
  const Tensor values = allocate_arena(ctx, plan.values.total, MemoryCategory::kActivations);
  const Tensor grads =
      plan.grads.total > 0 ? allocate_arena(ctx, plan.grads.total, MemoryCategory::kActivationGrads) : Tensor();
  arenas_ = {inputs, values, grads};
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    if (node.is_input()) {
      node.value = inputs.view(input_offset[i], node.shape, node.dtype).named(node.name);
    } else {
      const size_t offset = plan.values.offsets[static_cast<size_t>(plan.value_block[i])];
      node.value = values.view(offset, node.shape, node.stored).named(node.name);
      if (node.channels_last) node.value = node.value.with_layout(Layout::kNHWC);
    }
    if (plan.grad_block[i] >= 0) {
      const size_t offset = plan.grads.offsets[static_cast<size_t>(plan.grad_block[i])];
      node.grad = grads.view(offset, node.shape, node.stored).named(node.name + " gradient");
      if (node.channels_last) node.grad = node.grad.with_layout(Layout::kNHWC);
    } else {
      const char* why = node.is_input()                                ? "not in CompileOptions::input_gradients"
                        : static_cast<int>(i) == loss_                  ? "the loss starts backward with 1"
                        : options_.phase == Phase::kInference           ? "compiled for inference"
                                                                        : "no layer before it trains";
      node.grad = Tensor().named(cat("gradient of '", node.name, "' (none: ", why, ")"));
    }
  }

  // Wiring: each layer's inputs and input gradients. Walking backward order,
  // the first gradient to reach a value writes it, later ones add to it.
  // A layer whose backward another does (a fused ReLU or add) writes no
  // gradient; a batch norm that does a residual add writes z's after its own
  // input's (Note [A residual add fused into its batch norm]).
  std::vector<bool> reached(nodes_.size(), false);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    Node& node = nodes_[static_cast<size_t>(*it)];
    node.input_values.clear();
    node.input_grads.clear();
    node.input_grad_modes.clear();
    std::vector<int> inputs = node.inputs;
    if (node.residual >= 0) inputs.push_back(node.residual);
    for (int producer : inputs) {
      const auto p = static_cast<size_t>(producer);
      node.input_values.push_back(nodes_[p].value);
      if (plan.grad_shared_with[p] == *it) {
        // Note [Gradients shared through an add]: the add's gradient is this
        // input's, already; the add writes nothing for it.
        node.input_grads.push_back(Tensor().named(cat("gradient of '", nodes_[p].name, "' (none to write: it is the "
                                                      "gradient of '", node.name, "', shared)")));
      } else {
        node.input_grads.push_back(nodes_[p].grad);  // undefined for graph inputs not asked for
      }
      node.input_grad_modes.push_back(reached[p] ? GradMode::kAdd : GradMode::kWrite);
      if (nodes_[p].grad.defined() && node.backward_fused_into < 0) reached[p] = true;
    }
    // Note [Only what trains gets a gradient]: a layer whose output wants no
    // gradient has no backward to run; the loss runs one where its input wants one.
    const bool an_input_wants_one = std::any_of(inputs.begin(), inputs.end(),
                                                [&](int p) { return plan.wants_grad[static_cast<size_t>(p)]; });
    node.runs_backward = plan.wants_grad[static_cast<size_t>(*it)] || (*it == loss_ && an_input_wants_one);
  }
}

const Tensor& Graph::input(std::string_view name) const {
  check_not_moved("input");
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

void Graph::require_compiled(std::string_view what) const {
  check_not_moved(what);
  if (!compiled_) throw Error(cat(what, ": the graph is not compiled; call compile(ctx) first"));
}

void Graph::check_context(const Context& ctx, std::string_view what) const {
  require_compiled(what);
  if (ctx.device() != device_) {
    throw Error(cat(what, ": the graph was compiled for ", device_.str(), ", called with a ",
                    ctx.device().str(), " context"));
  }
  // The plan's buffers, workspace and (on a GPU) stream are the compiling
  // context's: another context on the same device has none of them.
  if (&ctx.allocator() != compiled_allocator_) {
    throw Error(cat(what, ": called with another ", ctx.device().str(), " Context than the one the graph was "
                    "compiled with, whose memory, workspace and stream the plan uses; pass that one"));
  }
}

void Graph::after_layer(Context& ctx, const Node& node, std::string_view pass) const {
  try {
    ctx.synchronize();
  } catch (const Error&) {  // a kernel's fault, found at the wait: the same kind of error, naming the layer
    rethrow_with_context(std::current_exception(), cat("after the ", pass, " of ", node.name, " (",
                                                       node.layer->type(), "): "));
  }
}

void Graph::check_training(std::string_view what) const {
  if (options_.phase == Phase::kInference) {
    throw Error(cat(what, ": the graph was compiled for inference (forward only, in Phase::kInference); "
                          "compile it with CompileOptions::phase = Phase::kTraining to train"));
  }
}

void Graph::forward(Context& ctx, Phase phase, const std::function<void(const Node&)>& after_each_layer) {
  check_context(ctx, "forward");
  if (phase == Phase::kTraining) check_training("a training-phase forward");
  last_forward_.reset();
  forward_stopped_ = true;  // until its last layer has run
  const bool spans = spans_->active();
  if (spans) spans_->start_step();
  for (size_t k = 0; k < layers_.size(); ++k) {
    Node& node = nodes_[static_cast<size_t>(layers_[k])];
    if (spans) spans_->begin(layers_[k], node.name, Pass::kForward);
    if (node.fused_into >= 0) {
      // Note [A ReLU fused into its producer]: its output is written already.
    } else if (staging_) {
      staging_->forward(ctx, node, phase);
    } else {
      node.layer->forward(ctx,
                          {.inputs = node.input_values, .output = node.value, .params = node.params, .phase = phase});
    }
    if (spans) spans_->end();
    if (options_.sync_each_layer) after_layer(ctx, node, "forward");
    if (after_each_layer) after_each_layer(node);
  }
  forward_stopped_ = false;
  last_forward_ = phase;
}

std::string Graph::no_forward(std::string_view what, std::string_view so) const {
  if (forward_stopped_) {
    return cat(what, ": the last forward stopped with an error before its end, so the values are not one forward's; "
               "run forward again");
  }
  return cat(what, ": no forward has run since compile, so ", so, "; run forward first");
}

void Graph::zero_grad(Context& ctx) {
  check_context(ctx, "zero_grad");
  check_training("zero_grad");
  fill_zero(ctx, gradients_);
}

void Graph::backward(Context& ctx, ParamGrads param_grads,
                     const std::function<void(const Node&, int position)>& after_each_layer) {
  check_context(ctx, "backward");
  check_training("backward");
  // After an inference-phase forward too: the gradient of the inference
  // loss (dropout off), which the gradient checks take; a layer whose
  // backward needs a training forward (batch norm's batch statistics) says so.
  if (!last_forward_) throw Error(no_forward("backward", "there is nothing to differentiate"));
  // Note [A step's backward writes the parameter gradients]
  const bool replace = param_grads == ParamGrads::kReplace;
  if (replace && ctx.is_cuda()) zero_grad(ctx);  // all at once: cuDNN and cuBLAS add
  const bool layers_write = replace && !ctx.is_cuda();
  const bool spans = spans_->active();
  // A split backward tells the spans when it moves on to its parameter
  // gradients (Context::switch_pass); the context forgets them on the way out.
  struct ObserverScope {
    Context& ctx;
    ~ObserverScope() { ctx.set_pass_observer(nullptr); }
  } observer_scope{ctx};
  if (spans) ctx.set_pass_observer(spans_.get());
  for (size_t j = 0; j < layers_.size(); ++j) {
    const int index = layers_[layers_.size() - 1 - j];
    Node& node = nodes_[static_cast<size_t>(index)];
    GradMode param_grad_mode = GradMode::kAdd;
    if (layers_write && !node.param_grads.empty()) {
      if (node.layer->writes_param_grads()) {
        param_grad_mode = GradMode::kWrite;
      } else {
        for (const Tensor& g : node.param_grads) fill_zero(ctx, g);
      }
    }
    if (spans && node.runs_backward) spans_->begin(index, node.name, backward_pass(node));
    if (!node.runs_backward) {
      // Note [Only what trains gets a gradient] (graph/memory_plan.h): nothing before it trains.
    } else if (node.backward_fused_into >= 0) {
      // Note [A ReLU's backward fused into its producer]: its producer's backward does it.
    } else if (staging_) {
      staging_->backward(ctx, node, param_grad_mode, loss_scale_);
    } else {
      node.layer->backward(ctx, {.inputs = node.input_values,
                                 .output = node.value,
                                 .output_grad = node.grad,
                                 .input_grads = node.input_grads,
                                 .input_grad_modes = node.input_grad_modes,
                                 .params = node.params,
                                 .param_grads = node.param_grads,
                                 .param_grad_mode = param_grad_mode});
      if (node.layer->is_loss()) {
        for (const Tensor& g : node.input_grads) {
          if (g.defined() && g.dtype() == DType::kFloat32) apply_loss_scale(ctx, g, loss_scale_);
        }
      }
    }
    if (spans && node.runs_backward) spans_->end();
    if (options_.sync_each_layer) after_layer(ctx, node, "backward");
    if (after_each_layer) after_each_layer(node, static_cast<int>(j));
  }
}

float Graph::loss(Context& ctx) const {
  check_context(ctx, "loss");
  if (!last_forward_) throw Error(no_forward("loss", "there is no loss yet"));
  return to_vector<float>(ctx, nodes_[static_cast<size_t>(loss_)].value)[0];
}

}  // namespace glassbox
