// layers/layer.cpp: the checks every layer call goes through, and dispatch.
#include "layers/layer.h"

#include <algorithm>

#include "tensor/convert.h"

namespace glassbox {

CpuConvPath parse_cpu_conv_path(std::string_view text) {
  if (text == "auto") return CpuConvPath::kAuto;
  if (text == "glassbox") return CpuConvPath::kGlassbox;
  if (text == "onednn") return CpuConvPath::kOneDnn;
  throw ConfigError(cat("unknown CPU convolution path '", text, "'; valid: auto, glassbox, onednn"));
}

std::string_view name_of(CpuConvPath path) {
  switch (path) {
    case CpuConvPath::kAuto: return "auto";
    case CpuConvPath::kGlassbox: return "glassbox";
    case CpuConvPath::kOneDnn: return "onednn";
  }
  return "?";
}

CudnnApi parse_cudnn_api(std::string_view text) {
  if (text == "auto") return CudnnApi::kAuto;
  if (text == "legacy") return CudnnApi::kLegacy;
  if (text == "graph") return CudnnApi::kGraph;
  throw ConfigError(cat("unknown cuDNN API '", text, "'; valid: auto, legacy, graph"));
}

std::string_view name_of(CudnnApi api) {
  switch (api) {
    case CudnnApi::kAuto: return "auto";
    case CudnnApi::kLegacy: return "legacy";
    case CudnnApi::kGraph: return "graph";
  }
  return "?";
}

void throw_not_built(std::string_view layer_type) {
  throw NotBuiltError(cat(layer_type, ": Glassbox was built without CUDA (configure with -DGLASSBOX_CUDA=ON)"));
}

Layer::Layer(std::string name) : name_(std::move(name)) {}
Layer::~Layer() = default;

void Layer::fail(const std::string& message) const {
  throw ShapeError(cat(name_, " (", type(), "): ", message));
}

void Layer::fail_unbound() const {
  fail("its shapes are asked for before they are known (bind first; a graph binds each layer it is built with)");
}

void Layer::fail_option(const std::string& message) const {
  throw ConfigError(cat(name_, " (", type(), "): ", message));
}

void* Layer::checked_workspace(const Context& ctx) const {
  if (ctx.workspace_bytes() < workspace_bytes_) {
    throw Error(cat(name_, " (", type(), "): needs ", format_bytes(static_cast<int64_t>(workspace_bytes_)),
                    " of workspace, the context has ", format_bytes(static_cast<int64_t>(ctx.workspace_bytes())),
                    " (reserve workspace_bytes() after prepare)"));
  }
  return ctx.workspace();
}

void Layer::expect_rank(std::span<const Shape> inputs, int index, int rank,
                        std::string_view layout) const {
  const Shape& shape = inputs[static_cast<size_t>(index)];
  if (shape.rank() != rank) {
    fail(cat("input ", index, " must be ", layout, ", got shape ", shape.str()));
  }
}

const Shape& Layer::bind(std::span<const Shape> inputs) {
  const int count = static_cast<int>(inputs.size());
  if (count < min_inputs() || count > max_inputs()) {
    const std::string expected =
        min_inputs() == max_inputs() ? cat(min_inputs()) : cat(min_inputs(), " to ", max_inputs());
    fail(cat("takes ", expected, " input(s), got ", count));
  }
  try {
    output_shape_ = infer(inputs);
    input_shapes_.assign(inputs.begin(), inputs.end());
    input_channels_last_.assign(inputs.size(), false);
    output_channels_last_ = false;
    value_storage_ = DType::kFloat32;
    fused_relu_ = false;
    fused_relu_backward_ = false;
    fused_residual_ = false;
    bound_ = true;
    param_shapes_.clear();
    for (const ParamSpec& spec : param_specs()) param_shapes_.push_back(spec.shape);
    // Costs are computed here once, so that one too large to count fails now,
    // naming this layer, and never later as a wrapped number in a report.
    (void)macs();
  } catch (const SizeError& e) {
    bound_ = false;
    throw SizeError(cat(name_, " (", type(), "): ", e.what()));
  }
  prepared_ = false;
  return output_shape_;
}

namespace {
int64_t bytes_of(const Shape& shape, DType dtype) { return shape.numel() * static_cast<int64_t>(size_of(dtype)); }
}  // namespace

int64_t Layer::flops(Pass pass) const {
  const int64_t forward = 2 * macs();
  switch (pass) {
    case Pass::kForward: return forward;
    case Pass::kBackwardData:
    case Pass::kBackwardWeights: return splits_backward() ? forward : 0;
    case Pass::kBackward: return splits_backward() ? 2 * forward : 0;
    case Pass::kOptimizer: return 0;
  }
  return 0;
}

int64_t Layer::bytes_moved(Pass pass) const {
  int64_t inputs = 0, float_inputs = 0, read_inputs = 0, params = 0;
  for (size_t i = 0; i < input_shapes_.size(); ++i) {
    const DType dtype = stored_input_dtype(i);
    const int64_t bytes = bytes_of(input_shapes_[i], dtype);
    inputs += bytes;
    if (input_dtype(static_cast<int>(i)) == DType::kFloat32) float_inputs += bytes;  // those with a gradient
    if (backward_reads_input(static_cast<int>(i))) read_inputs += bytes;
  }
  int64_t param_grad_bytes = 0;  // float32 whatever the values (Note [Mixed precision])
  for (const Shape& shape : param_shapes_) {
    params += bytes_of(shape, weight_storage());
    param_grad_bytes += bytes_of(shape, DType::kFloat32);
  }
  const int64_t weight = param_shapes_.empty() ? 0 : bytes_of(param_shapes_[0], weight_storage());
  const int64_t output = bytes_of(output_shape_, value_storage_);
  const int64_t output_grad = is_loss() ? 0 : output;
  const int64_t param_grads = (writes_param_grads() ? 1 : 2) * param_grad_bytes;  // written, or read and written
  // Note [A residual add fused into its batch norm]: z is read in forward,
  // its gradient written in backward.
  const int64_t residual = fused_residual_ ? output : 0;
  switch (pass) {
    case Pass::kForward: return inputs + residual + params + output;
    case Pass::kBackwardData: return output_grad + weight + float_inputs;
    case Pass::kBackwardWeights: return output_grad + inputs + param_grads;
    case Pass::kBackward:
      return output_grad + read_inputs + (backward_reads_output() || fused_relu_backward() ? output : 0) + params +
             float_inputs + residual + param_grads;
    case Pass::kOptimizer: return 0;
  }
  return 0;
}

void Layer::set_channels_last(std::vector<bool> inputs, bool output) {
  if (!bound_) fail("set_channels_last before its input shapes are known (bind first)");
  if (inputs.size() != input_shapes_.size()) {
    fail(cat("set_channels_last with ", inputs.size(), " input layout(s), the layer has ", input_shapes_.size(), " input(s)"));
  }
  if (keeps_layout()) {
    if (std::find(inputs.begin(), inputs.end(), !output) != inputs.end()) {
      fail("this layer's inputs and output share one layout");
    }
  } else {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] && !can_read_channels_last(static_cast<int>(i))) fail(cat("input ", i, " cannot be channels-last"));
    }
    if (output && !can_write_channels_last(inputs)) fail("its output cannot be channels-last with these inputs");
  }
  input_channels_last_ = std::move(inputs);
  output_channels_last_ = output;
  prepared_ = false;
}

void Layer::set_value_storage(DType values) {
  if (!bound_) fail("set_value_storage before its input shapes are known (bind first)");
  if (values != DType::kFloat32 && !is_16_bit_float(values)) {
    fail_option(cat("values are stored as float32, float16 or bfloat16, not ", name_of(values)));
  }
  value_storage_ = values;
  prepared_ = false;
}

void Layer::set_fused_relu(const Context& ctx, Phase phase, bool fused, bool residual) {
  if (!bound_) fail("set_fused_relu before its input shapes are known (bind first)");
  const char* in = phase == Phase::kTraining ? "training" : "inference";
  if (fused && !can_fuse_relu(ctx, phase)) {
    fail_option(cat("cannot apply a ReLU to its output on ", ctx.device().str(), " in ", in));
  }
  if (residual && !fused) fail("a fused residual add comes with its ReLU (set_fused_relu with fused = true)");
  if (residual && !can_fuse_residual_relu(ctx, phase)) {
    fail_option(cat("cannot add a residual and apply a ReLU to its output on ", ctx.device().str(), " in ", in));
  }
  fused_relu_ = fused;
  fused_relu_backward_ = fused && phase == Phase::kTraining && fuses_relu_backward();
  fused_residual_ = residual;
  prepared_ = false;
}

void Layer::prepare(Context& ctx, const PrepareOptions& options) {
  if (!bound_) fail("prepare before its input shapes are known (bind first)");
  if (value_storage_ != DType::kFloat32 && (is_loss() || !computes_16_bit(ctx))) {
    fail_option(cat("cannot store its values as ", name_of(value_storage_), " on ", ctx.device().str(),
                    " (Layer::computes_16_bit is false there: the graph widens them to float32 for it)"));
  }
  workspace_bytes_ = 0;
  backend_.reset();
  try {
    if (ctx.is_cuda()) {
      prepare_cuda(ctx, options);
    } else {
      prepare_cpu(ctx, options);
    }
  } catch (const OutOfMemoryError& e) {  // what the layer keeps (masks, statistics) did not fit: say whose
    throw OutOfMemoryError(cat(name_, " (", type(), "): ", e.what()));
  } catch (const LibraryError& e) {
    throw LibraryError(library_error_context("prepare"), e);
  }
  prepared_ = true;
  prepared_phase_ = options.phase;
  prepared_on_cpu_ = !ctx.is_cuda();
  param_layouts_.clear();
  for (const ParamSpec& spec : param_specs()) param_layouts_.push_back(spec.layout);
}

void Layer::check_tensor(const Context& ctx, const Tensor& t, const Shape& shape, DType dtype,
                         std::string_view role, Layout layout) const {
  if (!t.defined()) fail(cat(role, " is missing"));
  if (t.shape() != shape) fail(cat(role, " has shape ", t.shape().str(), ", expected ", shape.str()));
  if (t.dtype() != dtype) {
    fail(cat(role, " is ", name_of(t.dtype()), ", expected ", name_of(dtype)));
  }
  if (t.device() != ctx.device()) {
    fail(cat(role, " is on ", t.device().str(), ", the context is ", ctx.device().str()));
  }
  if (t.layout() != layout) fail(cat(role, " is ", name_of(t.layout()), ", the layer was prepared for ", name_of(layout)));
}

DType Layer::stored_input_dtype(size_t index) const {
  const DType declared = input_dtype(static_cast<int>(index));
  return declared == DType::kFloat32 ? value_storage_ : declared;
}

Layout Layer::input_layout(size_t index) const {
  return input_channels_last_[index] ? Layout::kNHWC : Layout::kNCHW;
}
Layout Layer::output_layout() const { return output_channels_last_ ? Layout::kNHWC : Layout::kNCHW; }

void Layer::forward(Context& ctx, const ForwardArgs& args) {
  if (!prepared_) fail("forward before prepare (compile the graph first)");
  if (args.phase == Phase::kTraining && prepared_phase_ == Phase::kInference) {
    fail("a training-phase forward, but the layer was prepared for inference only");
  }
  const size_t inputs = input_shapes_.size() + (fused_residual_ ? 1 : 0);
  if (args.inputs.size() != inputs) {
    fail(cat("forward with ", args.inputs.size(), " input(s), prepared for ", input_shapes_.size(),
             fused_residual_ ? " and a residual" : ""));
  }
  for (size_t i = 0; i < input_shapes_.size(); ++i) {
    check_tensor(ctx, args.inputs[i], input_shapes_[i], stored_input_dtype(i), cat("input ", i), input_layout(i));
  }
  if (fused_residual_) {
    check_tensor(ctx, args.inputs.back(), output_shape_, value_storage_, "the residual", output_layout());
  }
  check_tensor(ctx, args.output, output_shape_, value_storage_, "output", output_layout());
  if (args.params.size() != param_shapes_.size()) {
    fail(cat("forward with ", args.params.size(), " parameter(s), expected ", param_shapes_.size()));
  }
  for (size_t i = 0; i < args.params.size(); ++i) {
    check_tensor(ctx, args.params[i], param_shapes_[i], weight_storage(), cat("parameter ", i), param_layouts_[i]);
  }
  try {
    if (ctx.is_cuda()) {
      forward_cuda(ctx, args);
    } else {
      forward_cpu(ctx, args);
    }
  } catch (const LibraryError& e) {
    throw LibraryError(library_error_context("forward"), e);
  }
}

void Layer::backward(Context& ctx, const BackwardArgs& args) {
  if (!prepared_) fail("backward before prepare (compile the graph first)");
  if (prepared_phase_ == Phase::kInference) fail("backward, but the layer was prepared for inference only");
  const size_t inputs = input_shapes_.size() + (fused_residual_ ? 1 : 0);
  if (args.inputs.size() != inputs || args.input_grads.size() != inputs || args.input_grad_modes.size() != inputs) {
    fail(cat("backward needs ", input_shapes_.size(), " input(s), input gradient(s) and grad mode(s)",
             fused_residual_ ? ", and the fused residual's" : "", "; got ", args.inputs.size(), ", ",
             args.input_grads.size(), " and ", args.input_grad_modes.size()));
  }
  for (size_t i = 0; i < input_shapes_.size(); ++i) {
    check_tensor(ctx, args.inputs[i], input_shapes_[i], stored_input_dtype(i), cat("input ", i), input_layout(i));
    if (args.input_grads[i].defined()) {
      check_tensor(ctx, args.input_grads[i], input_shapes_[i], stored_input_dtype(i), cat("gradient of input ", i),
                   input_layout(i));
    }
  }
  if (fused_residual_) {
    check_tensor(ctx, args.inputs.back(), output_shape_, value_storage_, "the residual", output_layout());
    if (args.input_grads.back().defined()) {
      check_tensor(ctx, args.input_grads.back(), output_shape_, value_storage_, "the residual's gradient",
                   output_layout());
    }
  }
  check_tensor(ctx, args.output, output_shape_, value_storage_, "output", output_layout());
  if (args.output_grad.defined()) {
    check_tensor(ctx, args.output_grad, output_shape_, value_storage_, "output gradient", output_layout());
  } else if (!is_loss()) {
    fail("backward without an output gradient: only a loss starts backward without one");
  }
  if (args.params.size() != param_shapes_.size() || args.param_grads.size() != param_shapes_.size()) {
    fail(cat("backward with ", args.params.size(), " parameter(s) and ", args.param_grads.size(),
             " parameter gradients, expected ", param_shapes_.size()));
  }
  for (size_t i = 0; i < args.params.size(); ++i) {
    check_tensor(ctx, args.params[i], param_shapes_[i], weight_storage(), cat("parameter ", i), param_layouts_[i]);
    check_tensor(ctx, args.param_grads[i], param_shapes_[i], DType::kFloat32, cat("gradient of parameter ", i),
                 param_layouts_[i]);
  }
  if (args.param_grad_mode == GradMode::kWrite && !writes_param_grads()) {
    fail(cat("backward asked to write the parameter gradients, but this layer only adds to them on ",
             ctx.device().str(), " (Layer::writes_param_grads): zero them and pass GradMode::kAdd"));
  }
  try {
    if (ctx.is_cuda()) {
      backward_cuda(ctx, args);
    } else {
      backward_cpu(ctx, args);
    }
  } catch (const LibraryError& e) {
    throw LibraryError(library_error_context("backward"), e);
  }
}

// A library's status names the call but not whose it was, among the dozens
// of layers of a network that make the same call.
std::string Layer::library_error_context(std::string_view pass) const {
  std::string inputs;
  for (size_t i = 0; i < input_shapes_.size(); ++i) {
    inputs += cat(i == 0 ? "" : ", ", input_shapes_[i].str(), " ", name_of(stored_input_dtype(i)),
                  input_layout(i) == Layout::kNHWC ? " NHWC" : "");
  }
  return cat(name_, " (", type(), ") ", pass, ", input ", inputs, ": ");
}

std::vector<size_t> Layer::packed_offsets() const {
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (const ParamSpec& spec : param_specs()) {
    offsets.push_back(offset);
    offset += static_cast<size_t>(spec.shape.numel()) * sizeof(float);
  }
  return offsets;
}

}  // namespace glassbox
