// layers/dropout_cuda.cpp: Dropout with cuDNN's generator.
//
// At prepare: the generator states (cudnnDropoutGetStatesSize bytes, layer
// state), initialised by cudnnSetDropoutDescriptor from a seed drawn from the
// context's RNG; and the reserve space (cudnnDropoutGetReserveSpaceSize bytes
// for x's descriptor), where cudnnDropoutForward leaves the mask that
// cudnnDropoutBackward reads. Each training forward advances the states, so
// every forward draws a fresh mask.
//
// cudnnDropoutBackward has no alpha/beta: it only writes dx. For
// GradMode::kAdd it writes into the shared workspace, and cudnnAddTensor
// (beta = 1) adds that onto dx.
#include "layers/dropout.h"

#include <algorithm>

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct DropoutState final : BackendState {
  // The buffers first, so that the descriptor that points at them goes before they do.
  Tensor states;   // cuDNN's generator states, opaque bytes
  Tensor reserve;  // the mask of the last training forward, opaque bytes
  size_t reserve_bytes = 0;
  TensorDescriptor desc;  // x, y, dx, dy and the kAdd scratch share one shape
  DropoutDescriptor dropout;
};

// An opaque device buffer of at least `bytes` bytes, held as float32 words.
Tensor allocate_bytes(Context& ctx, size_t bytes) {
  const auto words = static_cast<int64_t>(std::max<size_t>((bytes + 3) / 4, 1));
  return ctx.allocate(Shape{words}, DType::kFloat32, MemoryCategory::kLayerState);
}

}  // namespace

void Dropout::prepare_cuda(Context& ctx, const PrepareOptions& options) {
  auto state = std::make_unique<DropoutState>();
  state->desc = make_tensor_descriptor(output_shape());
  last_phase_ = Phase::kInference;
  if (options.phase == Phase::kInference) {  // an inference graph only copies: no RNG states, no mask
    backend_ = std::move(state);
    return;
  }
  state->dropout = make_descriptor<DropoutDescriptor>(cudnnCreateDropoutDescriptor);
  size_t state_bytes = 0;
  CUDNN_CHECK(cudnnDropoutGetStatesSize(cudnn_of(ctx), &state_bytes));
  state->states = allocate_bytes(ctx, state_bytes);
  const unsigned long long seed = ctx.rng()();
  CUDNN_CHECK(cudnnSetDropoutDescriptor(state->dropout.get(), cudnn_of(ctx), options_.p, state->states.raw(),
                                        state_bytes, seed));
  CUDNN_CHECK(cudnnDropoutGetReserveSpaceSize(state->desc.get(), &state->reserve_bytes));
  state->reserve = allocate_bytes(ctx, state->reserve_bytes);
  set_workspace_bytes(output_shape().numel() * sizeof(float));  // dx scratch for GradMode::kAdd
  backend_ = std::move(state);
}

void Dropout::forward_cuda(Context& ctx, const ForwardArgs& args) {
  last_phase_ = args.phase;
  if (args.phase == Phase::kInference) {
    CUDA_CHECK(cudaMemcpyAsync(args.output.raw(), args.inputs[0].raw(), args.output.bytes(),
                               cudaMemcpyDeviceToDevice, stream_of(ctx)));
    return;
  }
  auto& s = state_as<DropoutState>(backend_);
  CUDNN_CHECK(cudnnDropoutForward(cudnn_of(ctx), s.dropout.get(), s.desc.get(), args.inputs[0].raw(),
                                  s.desc.get(), args.output.raw(), s.reserve.raw(), s.reserve_bytes));
}

void Dropout::backward_cuda(Context& ctx, const BackwardArgs& args) {
  const Tensor& dx = args.input_grads[0];
  if (!dx.defined()) return;
  auto& s = state_as<DropoutState>(backend_);
  if (last_phase_ == Phase::kInference) {  // y = x: the gradient passes straight through
    write_or_add_tensor(ctx, args.input_grad_modes[0], s.desc.get(), args.output_grad, dx);
    return;
  }
  if (args.input_grad_modes[0] == GradMode::kWrite) {
    CUDNN_CHECK(cudnnDropoutBackward(cudnn_of(ctx), s.dropout.get(), s.desc.get(), args.output_grad.raw(),
                                     s.desc.get(), dx.raw(), s.reserve.raw(), s.reserve_bytes));
    return;
  }
  void* scratch = checked_workspace(ctx);  // dx's size, for GradMode::kAdd
  CUDNN_CHECK(cudnnDropoutBackward(cudnn_of(ctx), s.dropout.get(), s.desc.get(), args.output_grad.raw(),
                                   s.desc.get(), scratch, s.reserve.raw(), s.reserve_bytes));
  CUDNN_CHECK(cudnnAddTensor(cudnn_of(ctx), &kOne, s.desc.get(), scratch, &kOne, s.desc.get(), dx.raw()));
}

}  // namespace glassbox
