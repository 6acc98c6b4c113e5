// layers/relu_cuda.cpp: ReLU with cuDNN activation forward/backward.
//
// Note [16-bit activation]: the values are float32, or bfloat16 or float16 in
// a mixed-precision graph (value_storage(), Note [16-bit values in a layer]).
// cudnnActivationForward takes every type up to CUDNN_DATA_INT8 and
// CUDNN_DATA_BFLOAT16, and cudnnActivationBackward float, double, half and
// bfloat16, all descriptors of one type (cuDNN 9's argument checks; oneDNN's
// cuDNN backend runs bf16 ReLU forward and backward so). alpha and beta stay
// float. max(x, 0) and its mask are exact in any type.
#include "layers/relu.h"

#include "layers/layer_cuda.h"

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
  state->activation = make_descriptor<ActivationDescriptor>(cudnnCreateActivationDescriptor);
  CUDNN_CHECK(cudnnSetActivationDescriptor(state->activation.get(), CUDNN_ACTIVATION_RELU,
                                           CUDNN_NOT_PROPAGATE_NAN, 0.0));
  backend_ = std::move(state);
}

void ReLU::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<ReLUState>(backend_);
  CUDNN_CHECK(cudnnActivationForward(cudnn_of(ctx), s.activation.get(), &kOne, s.desc.get(),
                                     args.inputs[0].raw(), &kZero, s.desc.get(), args.output.raw()));
}

void ReLU::backward_cuda(Context& ctx, const BackwardArgs& args) {
  if (!args.input_grads[0].defined()) return;
  auto& s = state_as<ReLUState>(backend_);
  // Note [ReLU backward from y]: cuDNN takes x as well as y, but x may be gone:
  // the memory plan lets y overwrite x (in place), or hands x's memory to a
  // later tensor (ReLU says backward does not read its input). y > 0 exactly
  // where x > 0, so y stands in for x.
  CUDNN_CHECK(cudnnActivationBackward(cudnn_of(ctx), s.activation.get(), &kOne, s.desc.get(),
                                      args.output.raw(), s.desc.get(), args.output_grad.raw(),
                                      s.desc.get(), args.output.raw(),
                                      beta_for(args.input_grad_modes[0]), s.desc.get(),
                                      args.input_grads[0].raw()));
}

}  // namespace glassbox
