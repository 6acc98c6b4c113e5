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
// GradMode::kAdd it writes into the shared workspace, and Glassbox's add
// (layers/relu.cu) adds that onto dx in place.
//
// Note [Changing p keeps the generator]: the descriptor holds p, and
// set_probability (no context at hand) only records the new value; the next
// training forward brings the descriptor up to date before drawing. It must
// not call cudnnSetDropoutDescriptor with the states again: given states,
// that call launches a kernel that initialises them from the seed, so the
// masks would start over (the same masks again if the seed were the same).
// cudnnRestoreDropoutDescriptor (cuDNN 9
// cudnn_ops_v9.h: "Restores the dropout descriptor to a previously saved-off
// state") takes states that cudnnSetDropoutDescriptor initialised and only
// records p, the states' address and the seed in the host-side descriptor:
// no kernel, no allocation, and the generator goes on where it was. PyTorch's
// DropoutDescriptor::set (ATen cudnn/Descriptors.h) changes p the same way.
// At p = 0 no cuDNN call is made: forward copies x, backward passes dy.
//
// Note [Dropout in 16 bits]: the values are float32, or float16 in an fp16
// graph (value_storage(), Note [16-bit values in a layer]). cuDNN 9's dropout
// takes float, double and half only: cudnnDropoutForward and
// cudnnDropoutBackward refuse any type past CUDNN_DATA_HALF (their argument
// checks), and its kernels come in float, double and __half/float instances,
// none for bfloat16. So the layer computes in 16 bits in an fp16 graph only
// (Dropout::computes_16_bit), and a bf16 graph stages it in fp32. Caffe2's
// cuDNN dropout ran on float16 so. The reserve space is sized from x's
// descriptor, the kAdd scratch in bytes of the value type.
#include "layers/dropout.h"

#include <algorithm>

#include "layers/layer_cuda.h"
#include "layers/relu_kernels_cuda.h"

namespace glassbox {
namespace {

struct DropoutState final : BackendState {
  // The buffers first, so that the descriptor that points at them goes before they do.
  Tensor states;   // cuDNN's generator states, opaque bytes
  Tensor reserve;  // the mask of the last training forward, opaque bytes
  size_t reserve_bytes = 0;
  size_t state_bytes = 0;
  unsigned long long seed = 0;
  float descriptor_p = 0.0f;  // the p the descriptor holds (Note [Changing p keeps the generator])
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
  state->desc = make_tensor_descriptor(output_shape(), value_storage());  // Note [Dropout in 16 bits]
  last_forward_masked_ = false;
  if (options.phase == Phase::kInference) {  // an inference graph only copies: no RNG states, no mask
    backend_ = std::move(state);
    return;
  }
  state->dropout = make_descriptor<DropoutDescriptor>(cudnnCreateDropoutDescriptor);
  CUDNN_CHECK(cudnnDropoutGetStatesSize(cudnn_of(ctx), &state->state_bytes));
  state->states = allocate_bytes(ctx, state->state_bytes);
  // Each data-parallel replica its own masks (Context::replica): cuDNN's
  // generator cannot draw one process's masks by global element, so on a
  // GPU the replicas' masks are independent rather than one process's.
  state->seed = ctx.rng()() + static_cast<unsigned long long>(ctx.replica().index) * 0x9E3779B97F4A7C15ull;
  // Note [Dropout's states are filled at prepare]: at p = 0,
  // cudnnSetDropoutDescriptor may leave the states unfilled (PyTorch gives
  // it none then), and a later p > 0 only restores them (Note [Changing p
  // keeps the generator]): masks from memory no seed wrote. So they are
  // filled at a p above 0 whatever the layer's; its first masked forward
  // restores its own p.
  state->descriptor_p = options_.p > 0.0f ? options_.p : 0.5f;
  CUDNN_CHECK(cudnnSetDropoutDescriptor(state->dropout.get(), cudnn_of(ctx), state->descriptor_p,
                                        state->states.raw(), state->state_bytes, state->seed));
  CUDNN_CHECK(cudnnDropoutGetReserveSpaceSize(state->desc.get(), &state->reserve_bytes));
  state->reserve = allocate_bytes(ctx, state->reserve_bytes);
  set_workspace_bytes(output_shape().numel() * size_of(value_storage()));  // dx scratch for GradMode::kAdd
  backend_ = std::move(state);
}

void Dropout::forward_cuda(Context& ctx, const ForwardArgs& args) {
  last_forward_masked_ = args.phase == Phase::kTraining && options_.p > 0.0f;
  if (!last_forward_masked_) {
    CUDA_CHECK(cudaMemcpyAsync(args.output.raw(), args.inputs[0].raw(), args.output.bytes(),
                               cudaMemcpyDeviceToDevice, stream_of(ctx)));
    return;
  }
  auto& s = state_as<DropoutState>(backend_);
  if (s.descriptor_p != options_.p) {  // Note [Changing p keeps the generator]
    CUDNN_CHECK(cudnnRestoreDropoutDescriptor(s.dropout.get(), cudnn_of(ctx), options_.p, s.states.raw(),
                                              s.state_bytes, s.seed));
    s.descriptor_p = options_.p;
  }
  CUDNN_CHECK(cudnnDropoutForward(cudnn_of(ctx), s.dropout.get(), s.desc.get(), args.inputs[0].raw(),
                                  s.desc.get(), args.output.raw(), s.reserve.raw(), s.reserve_bytes));
}

void Dropout::backward_cuda(Context& ctx, const BackwardArgs& args) {
  const Tensor& dx = args.input_grads[0];
  if (!dx.defined()) return;
  auto& s = state_as<DropoutState>(backend_);
  if (!last_forward_masked_) {  // y = x: the gradient passes straight through
    write_or_add_tensor(ctx, args.input_grad_modes[0], args.output_grad, dx);
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
  launch_add(dx.raw(), scratch, dx.raw(), dx.numel(), dx.dtype(), stream_of(ctx));  // dx += the scratch
}

}  // namespace glassbox
