// graph/mixed_precision.cpp: Note [Mixed precision]: the staging of the layers that do not compute in 16 bits.
#include "graph/mixed_precision.h"

#include <algorithm>

#include "graph/memory_plan.h"
#include "tensor/convert.h"
#include "tensor/cuda_entry.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

// The type the layer takes a value or a value's gradient in: its
// value_storage() for a float tensor; a label keeps its int32.
DType value_target(const Layer& layer, const Tensor& t) {
  return is_16_bit_float(t.dtype()) || t.dtype() == DType::kFloat32 ? layer.value_storage() : t.dtype();
}

size_t staged_bytes(const Tensor& t, DType target) {
  if (!t.defined() || t.dtype() == target) return 0;
  return plan_aligned(static_cast<size_t>(t.numel()) * size_of(target));
}

size_t staged_values(const Layer& layer, std::span<const Tensor> tensors) {
  size_t total = 0;
  for (const Tensor& t : tensors) total += staged_bytes(t, value_target(layer, t));
  return total;
}

// Note [Staging follows the plan's sharing]: a layer may get one memory
// twice (an in-place layer's input and output, a gradient written over its
// output gradient, add(x, x)'s two input gradients). Each memory is staged
// once, so the layer sees the same sharing in fp32 as the plan gives it in 16
// bits, and what it writes is rounded back once.
struct Staged {
  const void* memory;
  size_t bytes;
  Tensor staged;  // in the layer's type
  bool read;
};

}  // namespace

size_t PrecisionStaging::staging_bytes(const Node& node, Phase phase) {
  const Layer& layer = *node.layer;
  size_t params = 0;
  for (const Tensor& p : node.params) params += staged_bytes(p, layer.weight_storage());
  const size_t forward =
      staged_values(layer, node.input_values) + params + staged_bytes(node.value, value_target(layer, node.value));
  if (phase == Phase::kInference) return forward;
  return forward + staged_bytes(node.grad, value_target(layer, node.grad)) + staged_values(layer, node.input_grads);
}

PrecisionStaging::PrecisionStaging(Context& ctx, size_t bytes) {
  if (bytes > 0) {
    staging_ = ctx.allocate(Shape{static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float))},
                            DType::kFloat32, MemoryCategory::kWorkspace);
  }
}

namespace {

void scale_cpu(const Tensor& t, float factor) {
  float* data = t.data<float>();
  parallel_for(t.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    as_array(data + begin, end - begin) *= factor;
  });
}

}  // namespace

void apply_loss_scale(Context& ctx, const Tensor& t, const LossScale& loss_scale) {
  if (!t.defined() || !loss_scale.active()) return;
  if (t.dtype() != DType::kFloat32) throw Error(cat("apply_loss_scale: float32 expected, got ", t.str()));
  if (ctx.is_cuda()) {
    cuda_entry::scale(*ctx.cuda_state(), static_cast<float*>(t.raw()), t.numel(), loss_scale.value,
                      loss_scale.device);
  } else {
    scale_cpu(t, loss_scale.value);
  }
}

std::string precision_path(const Node& node) {
  if (node.layer == nullptr) return "";
  auto flag = [](DType half) { return half == DType::kBFloat16 ? "bf16" : "fp16"; };
  const DType computes = node.layer->value_storage();
  if (is_16_bit_float(computes)) return flag(computes);
  std::vector<Tensor> values = node.input_values;
  values.push_back(node.value);
  for (const Tensor& t : values) {
    if (t.defined() && is_16_bit_float(t.dtype())) return cat("fp32, staged from ", flag(t.dtype()));
  }
  return "fp32";
}

namespace {

class Stager {
 public:
  Stager(Context& ctx, const Layer& layer, const Tensor& staging) : ctx_(ctx), layer_(layer), staging_(staging) {}

  // `t` as the layer takes it: itself where it has the type `target`, else
  // staged in that type (converted from t where `read`).
  Tensor stage(const Tensor& t, DType target, bool read) {
    if (!t.defined() || t.dtype() == target) return t;
    for (Staged& s : staged_) {
      if (s.memory == t.raw() && s.bytes == t.bytes()) {
        if (read && !s.read) {
          convert(ctx_, t, s.staged);
          s.read = true;
        }
        return s.staged.reshaped(t.shape()).with_layout(t.layout()).named(std::string(t.name()));
      }
    }
    const size_t bytes = static_cast<size_t>(t.numel()) * size_of(target);
    if (used_ + bytes > staging_.bytes()) {
      throw Error(cat("mixed precision: the staging of ", staging_.bytes(), " bytes cannot hold ", t.str(), " as ",
                      name_of(target), " after ", used_, " bytes (the compile-time size is wrong)"));
    }
    Tensor staged = staging_.view(used_, t.shape(), target).with_layout(t.layout()).named(std::string(t.name()));
    used_ += plan_aligned(bytes);
    if (read) convert(ctx_, t, staged);
    staged_.push_back({t.raw(), t.bytes(), staged, read});
    return staged;
  }

  Tensor stage_value(const Tensor& t, bool read) { return stage(t, value_target(layer_, t), read); }

  std::vector<Tensor> stage_params(std::span<const Tensor> params) {
    std::vector<Tensor> out;
    out.reserve(params.size());
    for (const Tensor& t : params) out.push_back(stage(t, layer_.weight_storage(), true));
    return out;
  }

  // Converts what the layer wrote in `staged` back into `t` (nothing where t was not staged).
  void write_back(const Tensor& t, const Tensor& staged) {
    if (!t.defined() || t.raw() == staged.raw()) return;
    for (Staged& s : staged_) {
      if (s.memory == t.raw() && s.bytes == t.bytes()) {
        if (s.memory == nullptr) return;  // rounded back already
        convert(ctx_, staged, t);
        s.memory = nullptr;
        return;
      }
    }
  }

 private:
  Context& ctx_;
  const Layer& layer_;
  const Tensor& staging_;
  size_t used_ = 0;
  std::vector<Staged> staged_;
};

}  // namespace

void PrecisionStaging::forward(Context& ctx, Node& node, Phase phase) {
  Stager stager(ctx, *node.layer, staging_);
  std::vector<Tensor> inputs;
  for (const Tensor& t : node.input_values) inputs.push_back(stager.stage_value(t, true));
  const std::vector<Tensor> params = stager.stage_params(node.params);
  const Tensor output = stager.stage_value(node.value, false);
  node.layer->forward(ctx, {.inputs = inputs, .output = output, .params = params, .phase = phase});
  stager.write_back(node.value, output);
}

void PrecisionStaging::backward(Context& ctx, Node& node, GradMode param_grad_mode, const LossScale& loss_scale) {
  const Layer& layer = *node.layer;
  Stager stager(ctx, layer, staging_);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < node.input_values.size(); ++i) {
    inputs.push_back(stager.stage_value(node.input_values[i], layer.backward_reads_input(static_cast<int>(i))));
  }
  // A fused ReLU's backward reads y for its mask (graph/fusion.h).
  const Tensor output = stager.stage_value(node.value, layer.backward_reads_output() || layer.fused_relu_backward());
  const Tensor output_grad = stager.stage_value(node.grad, true);
  const std::vector<Tensor> params = stager.stage_params(node.params);
  // An fp32 gradient that a 16-bit layer adds its share to (an fp32 graph
  // input's, read by several layers) is summed in fp32: the layer writes its
  // share into the 16-bit staging, which is then added widened. Staged and
  // added in 16 bits, the sum so far would be rounded at each reader. Not
  // where the layer gets the same gradient twice (Add(x, x)): its own modes
  // order the two writes.
  std::vector<GradMode> modes = node.input_grad_modes;
  std::vector<bool> added_widened(modes.size(), false);
  for (size_t i = 0; i < modes.size(); ++i) {
    const Tensor& g = node.input_grads[i];
    if (!g.defined() || modes[i] != GradMode::kAdd || g.dtype() != DType::kFloat32 ||
        !is_16_bit_float(value_target(layer, g))) {
      continue;
    }
    const auto same = [&](const Tensor& other) { return other.defined() && other.raw() == g.raw(); };
    if (std::count_if(node.input_grads.begin(), node.input_grads.end(), same) != 1) continue;
    modes[i] = GradMode::kWrite;
    added_widened[i] = true;
  }
  std::vector<Tensor> input_grads;
  for (size_t i = 0; i < node.input_grads.size(); ++i) {
    input_grads.push_back(stager.stage_value(node.input_grads[i], modes[i] == GradMode::kAdd));
  }
  node.layer->backward(ctx, {.inputs = inputs,
                             .output = output,
                             .output_grad = output_grad,
                             .input_grads = input_grads,
                             .input_grad_modes = modes,
                             .params = params,
                             .param_grads = node.param_grads,
                             .param_grad_mode = param_grad_mode});
  for (size_t i = 0; i < input_grads.size(); ++i) {
    if (!input_grads[i].defined()) continue;
    // In fp32, before rounding: what fp16's loss scale is for. A loss layer
    // never computes in 16 bits (Layer::prepare), so its gradients here are fp32.
    if (layer.is_loss()) apply_loss_scale(ctx, input_grads[i], loss_scale);
    if (added_widened[i]) {
      accumulate_widened(ctx, input_grads[i], node.input_grads[i]);
    } else {
      stager.write_back(node.input_grads[i], input_grads[i]);
    }
  }
}

}  // namespace glassbox
