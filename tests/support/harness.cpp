// tests/support/harness.cpp
#include "tests/support/harness.h"

#include <limits>
#include <random>

#include "tensor/copy.h"

namespace glassbox::testing {

std::vector<float> random_values(int64_t count, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(lo, hi);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = uniform(rng);
  return values;
}

LayerHarness::LayerHarness(Context& ctx_, Layer& layer_, std::vector<Shape> input_shapes)
    : ctx(ctx_), layer(layer_) {
  layer.bind(input_shapes);
  layer.prepare(ctx);
  ctx.reserve_workspace(layer.workspace_bytes());
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    const DType dtype = layer.input_dtype(static_cast<int>(i));
    inputs.push_back(ctx.allocate(input_shapes[i], dtype, MemoryCategory::kData));
    input_grads.push_back(dtype == DType::kFloat32
                              ? ctx.allocate(input_shapes[i], dtype, MemoryCategory::kActivationGrads)
                              : Tensor());
  }
  const std::vector<ParamSpec> specs = layer.param_specs();
  if (layer.packs_parameters() && !specs.empty()) {
    // As the graph lays them out (Layer::packs_parameters): one block each for
    // the parameters and their gradients, each tensor at its packed offset.
    int64_t total = 0;
    for (const ParamSpec& spec : specs) total += spec.shape.numel();
    const Tensor packed = ctx.allocate(Shape{total}, DType::kFloat32, MemoryCategory::kParameters);
    const Tensor packed_grads = ctx.allocate(Shape{total}, DType::kFloat32, MemoryCategory::kGradients);
    const std::vector<size_t> offsets = layer.packed_offsets();
    for (size_t k = 0; k < specs.size(); ++k) {
      params.push_back(packed.view(offsets[k], specs[k].shape, DType::kFloat32));
      param_grads.push_back(packed_grads.view(offsets[k], specs[k].shape, DType::kFloat32));
      fill_zero(ctx, param_grads.back());
    }
  } else {
    for (const ParamSpec& spec : specs) {
      params.push_back(ctx.allocate(spec.shape, DType::kFloat32, MemoryCategory::kParameters));
      param_grads.push_back(ctx.allocate(spec.shape, DType::kFloat32, MemoryCategory::kGradients));
      fill_zero(ctx, param_grads.back());
    }
  }
  output = ctx.allocate(layer.output_shape(), DType::kFloat32, MemoryCategory::kActivations);
  if (!layer.is_loss()) {
    output_grad = ctx.allocate(layer.output_shape(), DType::kFloat32, MemoryCategory::kActivationGrads);
  }
}

void LayerHarness::randomize(uint64_t seed) {
  uint64_t stream = seed * 1000;
  for (const Tensor& t : inputs) {
    if (t.dtype() == DType::kFloat32) write(t, random_values(t.numel(), ++stream));
  }
  for (const Tensor& t : params) write(t, random_values(t.numel(), ++stream));
  if (output_grad.defined()) write(output_grad, random_values(output_grad.numel(), ++stream));
}

void LayerHarness::forward(Phase phase) {
  layer.forward(ctx, {.inputs = inputs, .output = output, .params = params, .phase = phase});
  ctx.synchronize();
}

void LayerHarness::backward(std::vector<GradMode> modes, GradMode param_mode) {
  if (modes.empty()) modes.assign(inputs.size(), GradMode::kWrite);
  layer.backward(ctx, {.inputs = inputs,
                       .output = output,
                       .output_grad = output_grad,
                       .input_grads = input_grads,
                       .input_grad_modes = modes,
                       .params = params,
                       .param_grads = param_grads,
                       .param_grad_mode = param_mode});
  ctx.synchronize();
}

void LayerHarness::zero_param_grads() {
  for (const Tensor& t : param_grads) fill_zero(ctx, t);
}

void LayerHarness::copy_values_from(const LayerHarness& other) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() == DType::kInt32) {
      from_vector<int>(ctx, to_vector<int>(other.ctx, other.inputs[i]), inputs[i]);
    } else {
      write(inputs[i], other.read(other.inputs[i]));
    }
  }
  for (size_t i = 0; i < params.size(); ++i) write(params[i], other.read(other.params[i]));
  if (output_grad.defined()) write(output_grad, other.read(other.output_grad));
}

void LayerHarness::poison(const Tensor& t) const {
  write(t, std::vector<float>(static_cast<size_t>(t.numel()), std::numeric_limits<float>::quiet_NaN()));
}

std::vector<float> LayerHarness::read(const Tensor& t) const { return to_vector<float>(ctx, t); }

void LayerHarness::write(const Tensor& t, const std::vector<float>& values) const {
  from_vector<float>(ctx, values, t);
}

}  // namespace glassbox::testing
