// layers/relu_cuda.cpp: ReLU with cuDNN's activation forward, and a kernel
// of its own for backward (layers/relu.cu; Note [ReLU backward from y]).
//
// Note [16-bit activation]: the values are float32, or bfloat16 or float16 in
// a mixed-precision graph (value_storage(), Note [16-bit values in a layer]).
// cudnnActivationForward takes every type up to CUDNN_DATA_INT8 and
// CUDNN_DATA_BFLOAT16, all descriptors of one type (cuDNN 9's argument
// checks; oneDNN's cuDNN backend runs bf16 ReLU forward so). alpha and beta
// stay float. The backward kernel (relu.cu) has float, half and bfloat16
// instances. max(x, 0) and its mask are exact in any type.
#include "layers/relu.h"

#include "layers/layer_cuda.h"
#include "layers/relu_kernels_cuda.h"
#include "tensor/context_cuda.h"

namespace glassbox {
namespace {

struct ReLUState final : BackendState {
  TensorDescriptor desc;  // x, y, dx and dy share one shape
  ActivationDescriptor activation;
};

}  // namespace

void ReLU::prepare_cuda(Context&, const PrepareOptions&) {
  auto state = std::make_unique<ReLUState>();
  state->desc = make_tensor_descriptor(output_shape(), value_storage());  // Note [16-bit activation]
  state->activation = make_relu_descriptor();
  backend_ = std::move(state);
}

void ReLU::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<ReLUState>(backend_);
  CUDNN_CHECK(cudnnActivationForward(cudnn_of(ctx), s.activation.get(), &kOne, s.desc.get(),
                                     args.inputs[0].raw(), &kZero, s.desc.get(), args.output.raw()));
}

void ReLU::backward_cuda(Context& ctx, const BackwardArgs& args) {
  if (!args.input_grads[0].defined()) return;
  // Note [ReLU backward from y]: the mask is read from y, since x may be gone:
  // the memory plan lets y overwrite x (in place), or hands x's memory to a
  // later tensor (ReLU says backward does not read its input). y > 0 exactly
  // where x > 0. cudnnActivationBackward takes x as well as y, and given y
  // for both reads the same tensor twice; the kernel of layers/relu.cu reads
  // y and dy once each, a quarter less traffic.
  launch_relu_backward(args.output.raw(), args.output_grad.raw(), args.input_grads[0].raw(), args.output.numel(),
                       value_storage(), args.input_grad_modes[0] == GradMode::kAdd, stream_of(ctx));
}

}  // namespace glassbox
