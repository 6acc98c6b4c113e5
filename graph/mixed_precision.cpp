// graph/mixed_precision.cpp: Note [Mixed precision] on the CPU.
#include "graph/mixed_precision.h"

#include <algorithm>

#include "graph/memory_plan.h"
#include "tensor/convert.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

size_t wide_bytes(const Tensor& t) {
  return t.defined() && is_16_bit_float(t.dtype()) ? plan_aligned(static_cast<size_t>(t.numel()) * sizeof(float)) : 0;
}

size_t wide_bytes(std::span<const Tensor> tensors) {
  size_t total = 0;
  for (const Tensor& t : tensors) total += wide_bytes(t);
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
  Tensor wide;
  bool read;
};

}  // namespace

size_t CpuWidening::staging_bytes(const Node& node, Phase phase) {
  const size_t forward = wide_bytes(node.input_values) + wide_bytes(node.params) + wide_bytes(node.value);
  if (phase == Phase::kInference) return forward;
  return forward + wide_bytes(node.grad) + wide_bytes(node.input_grads);
}

CpuWidening::CpuWidening(Context& ctx, size_t bytes) {
  if (bytes > 0) {
    staging_ = ctx.allocate(Shape{static_cast<int64_t>(bytes / sizeof(float))}, DType::kFloat32,
                            MemoryCategory::kWorkspace);
  }
}

void scale_cpu(const Tensor& t, float factor) {
  float* data = t.data<float>();
  parallel_for(t.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    as_array(data + begin, end - begin) *= factor;
  });
}

namespace {

class Stager {
 public:
  Stager(Context& ctx, const Tensor& staging) : ctx_(ctx), staging_(staging) {}

  Tensor stage(const Tensor& t, bool read) {
    if (!t.defined() || !is_16_bit_float(t.dtype())) return t;
    for (Staged& s : staged_) {
      if (s.memory == t.raw() && s.bytes == t.bytes()) {
        if (read && !s.read) {
          convert(ctx_, t, s.wide);
          s.read = true;
        }
        return s.wide.reshaped(t.shape()).with_layout(t.layout()).named(std::string(t.name()));
      }
    }
    const size_t bytes = static_cast<size_t>(t.numel()) * sizeof(float);
    if (used_ + bytes > staging_.bytes()) {
      throw Error(cat("mixed precision: the fp32 staging of ", staging_.bytes(), " bytes cannot hold ", t.str(),
                      " after ", used_, " bytes (the compile-time size is wrong)"));
    }
    Tensor wide = staging_.view(used_, t.shape(), DType::kFloat32).with_layout(t.layout()).named(std::string(t.name()));
    used_ += plan_aligned(bytes);
    if (read) convert(ctx_, t, wide);
    staged_.push_back({t.raw(), t.bytes(), wide, read});
    return wide;
  }

  std::vector<Tensor> stage_all(std::span<const Tensor> tensors, bool read) {
    std::vector<Tensor> out;
    out.reserve(tensors.size());
    for (const Tensor& t : tensors) out.push_back(stage(t, read));
    return out;
  }

  // Rounds what the layer wrote in `wide` back into `t` (nothing where t was not staged).
  void narrow(const Tensor& t, const Tensor& wide) {
    if (!t.defined() || !is_16_bit_float(t.dtype())) return;
    for (Staged& s : staged_) {
      if (s.memory == t.raw() && s.bytes == t.bytes()) {
        if (s.memory == nullptr) return;  // rounded back already
        convert(ctx_, wide, t);
        s.memory = nullptr;
        return;
      }
    }
  }

 private:
  Context& ctx_;
  const Tensor& staging_;
  size_t used_ = 0;
  std::vector<Staged> staged_;
};

}  // namespace

void CpuWidening::forward(Context& ctx, Node& node, Phase phase) {
  Stager stager(ctx, staging_);
  const std::vector<Tensor> inputs = stager.stage_all(node.input_values, true);
  const std::vector<Tensor> params = stager.stage_all(node.params, true);
  const Tensor output = stager.stage(node.value, false);
  node.layer->forward(ctx, {.inputs = inputs, .output = output, .params = params, .phase = phase});
  stager.narrow(node.value, output);
}

void CpuWidening::backward(Context& ctx, Node& node, GradMode param_grad_mode, float loss_scale) {
  Stager stager(ctx, staging_);
  const Layer& layer = *node.layer;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < node.input_values.size(); ++i) {
    inputs.push_back(stager.stage(node.input_values[i], layer.backward_reads_input(static_cast<int>(i))));
  }
  const Tensor output = stager.stage(node.value, layer.backward_reads_output());
  const Tensor output_grad = stager.stage(node.grad, true);
  const std::vector<Tensor> params = stager.stage_all(node.params, true);
  std::vector<Tensor> input_grads;
  for (size_t i = 0; i < node.input_grads.size(); ++i) {
    input_grads.push_back(stager.stage(node.input_grads[i], node.input_grad_modes[i] == GradMode::kAdd));
  }
  node.layer->backward(ctx, {.inputs = inputs,
                             .output = output,
                             .output_grad = output_grad,
                             .input_grads = input_grads,
                             .input_grad_modes = node.input_grad_modes,
                             .params = params,
                             .param_grads = node.param_grads,
                             .param_grad_mode = param_grad_mode});
  for (size_t i = 0; i < input_grads.size(); ++i) {
    if (!input_grads[i].defined()) continue;
    // In fp32, before rounding: what fp16's loss scale is for.
    if (layer.is_loss() && loss_scale != 1.0f) scale_cpu(input_grads[i], loss_scale);
    stager.narrow(node.input_grads[i], input_grads[i]);
  }
}

}  // namespace glassbox
