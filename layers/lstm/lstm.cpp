// layers/lstm/lstm.cpp: the LSTM's options, shapes and costs, and the state it
// carries between forwards, for both backends. The CPU path is in
// layers/lstm/lstm_cpu.cpp, the CUDA path in layers/lstm/lstm_cuda.cpp.
#include "layers/lstm/lstm.h"

#include <utility>

#include "tensor/copy.h"

namespace glassbox {

Lstm::Lstm(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  if (options_.hidden <= 0) fail_option(cat("hidden must be positive, got ", options_.hidden));
  // Each layer makes four parameters, their names and a slice of state before
  // any size is checked, so the count itself is bounded first.
  if (options_.layers <= 0 || options_.layers > kMaxLayers) {
    fail_option(cat("layers must be from 1 to ", kMaxLayers, ", got ", options_.layers));
  }
  if (!(options_.dropout >= 0.0f && options_.dropout < 1.0f)) {  // also rejects NaN
    fail_option(cat("dropout must be in [0, 1), got ", options_.dropout));
  }
}

std::string Lstm::describe() const {
  const Options& o = options_;
  return cat(input_shapes().at(0)[2], " -> ", o.hidden, o.layers > 1 ? cat(", ", o.layers, " layers") : "",
             o.dropout > 0.0f ? cat(", dropout ", o.dropout) : "", o.bias ? "" : ", no bias",
             o.carry_state ? ", carried state" : "");
}

Shape Lstm::infer(std::span<const Shape> inputs) const {
  expect_rank(inputs, 0, 3, "(T, B, features), time-major");
  return Shape{inputs[0][0], inputs[0][1], options_.hidden};
}

int64_t Lstm::input_size(int layer) const { return layer == 0 ? input_shapes().at(0)[2] : options_.hidden; }

std::vector<ParamSpec> Lstm::param_specs() const {
  const int64_t H = options_.hidden;
  std::vector<ParamSpec> specs;
  for (int l = 0; l < options_.layers; ++l) {
    // U(-1/sqrt(H), 1/sqrt(H)) for all four, as nn.LSTM initialises them.
    specs.push_back({cat("weight_ih_l", l), Shape{4 * H, input_size(l)}, Init::kFanInUniform, H});
    specs.push_back({cat("weight_hh_l", l), Shape{4 * H, H}, Init::kFanInUniform, H});
    if (!options_.bias) continue;
    specs.push_back({cat("bias_ih_l", l), Shape{4 * H}, Init::kFanInUniform, H});
    specs.push_back({cat("bias_hh_l", l), Shape{4 * H}, Init::kFanInUniform, H});
  }
  return specs;
}

int64_t Lstm::macs() const {
  const Shape& x = input_shapes().at(0);
  const int64_t H = options_.hidden;
  int64_t per_step = 0;  // per step and sequence
  for (int l = 0; l < options_.layers; ++l) {
    per_step = checked_add(per_step, checked_multiply(4 * H, input_size(l) + H, "multiply-accumulates"),
                           "multiply-accumulates");
  }
  return checked_multiply(checked_multiply(x[0], x[1], "multiply-accumulates"), per_step, "multiply-accumulates");
}

int64_t Lstm::bytes_moved(Pass pass) const {
  if (pass == Pass::kOptimizer) return 0;
  const Shape& x = input_shapes().at(0);
  const int64_t H = options_.hidden, L = options_.layers, float_bytes = sizeof(float);
  const int64_t sequence = x[0] * x[1] * H * float_bytes;  // one (T, B, H) value of one layer
  const int64_t per_value = sequence * L;
  // Kept for the backward in a training plan only; an inference plan keeps
  // no cells. The dropout masks between layers likewise.
  const bool training = !prepared_for_inference();
  const int64_t saved = training ? 6 * per_value : 0, gate_grads = 4 * per_value;
  const int64_t masks = training && options_.dropout > 0.0f ? (L - 1) * sequence : 0;
  // Layer's default counts parameter 0 (weight_ih_l0) as the weight that
  // backward-data reads; it reads every layer's two weight matrices.
  int64_t other_weights = 0;
  for (const ParamSpec& spec : param_specs()) {
    if (spec.name.starts_with("weight_") && spec.name != "weight_ih_l0") {
      other_weights += spec.shape.numel() * static_cast<int64_t>(size_of(weight_storage()));
    }
  }
  const int64_t output_grad = output_shape().numel() * static_cast<int64_t>(size_of(value_storage()));
  const int64_t base = Layer::bytes_moved(pass);
  switch (pass) {
    case Pass::kForward: return base + saved + masks;
    case Pass::kBackwardData: return base + other_weights + saved + masks + gate_grads;
    // The weights' half reads x, every layer's outputs (among the saved
    // values) and the gate gradients, not dy.
    case Pass::kBackwardWeights: return base - output_grad + per_value + gate_grads;
    case Pass::kBackward: return base + saved + masks + 2 * gate_grads;
    case Pass::kOptimizer: return 0;
  }
  return 0;
}

// ---- the carried state (both backends)

void Lstm::allocate_state(Context& ctx) {
  const Shape shape{options_.layers, input_shapes().at(0)[1], options_.hidden};
  for (Tensor* t : {&h0_, &c0_, &hT_, &cT_}) {
    *t = ctx.allocate(shape, DType::kFloat32, MemoryCategory::kLayerState);
    fill_zero(ctx, *t);
  }
}

// Note [The carried state is copied]: with carry_state, each forward first
// copies the final state into the initial one, in stream order, rather than
// swapping the host's pointers: a step replayed as a CUDA graph
// (tensor/cuda_graph.h) runs only what was captured, the copy but not host
// code, and keeps the buffers it was captured with. reset_state and
// set_initial_state write the final state as well as the initial one, so
// the next forward's copy starts from what they gave. The copy is (L,B,H)
// twice, small beside the forward's products.
void Lstm::begin_forward(Context& ctx) {
  if (!options_.carry_state) return;
  copy(ctx, hT_, h0_);
  copy(ctx, cT_, c0_);
}

void Lstm::reset_state(Context& ctx) {
  require_prepared("reset_state");
  for (const Tensor* t : {&h0_, &c0_, &hT_, &cT_}) fill_zero(ctx, *t);
}

void Lstm::set_initial_state(Context& ctx, const Tensor& h, const Tensor& c) {
  require_prepared("set_initial_state");
  check_state_shape(h, "h");
  check_state_shape(c, "c");
  for (const Tensor* t : {&h0_, &hT_}) copy(ctx, h, *t);
  for (const Tensor* t : {&c0_, &cT_}) copy(ctx, c, *t);
}

void Lstm::require_prepared(const char* call) const {
  if (!h0_.defined()) throw Error(cat(name(), " (LSTM): ", call, " before prepare: the state does not exist yet"));
}

void Lstm::check_state_shape(const Tensor& t, const char* what) const {
  if (t.shape() != h0_.shape()) {
    fail(cat("initial state ", what, " must be (layers, batch, hidden) ", h0_.shape().str(), ", got ",
             t.shape().str()));
  }
}

std::vector<size_t> Lstm::packed_offsets() const {
  return packed_offsets_.empty() ? Layer::packed_offsets() : packed_offsets_;
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Lstm)
}  // namespace glassbox
#endif
