// layers/lrn_cuda.cpp: LocalResponseNorm with cuDNN's cross-channel LRN.
// What cuDNN computes, and why it equals the header's formula for odd sizes:
// Note [What cuDNN's LRN computes] in lrn.cpp. Backward reads y, dy and x
// (y as forward left it), so nothing is saved on the device.
//
// Note [LRN in 16 bits]: the values are float32, or float16 in an fp16 graph
// (value_storage(), Note [16-bit values in a layer]). cuDNN 9's cross-channel
// LRN takes float, double and half (and int8 forward), not bfloat16:
// cudnnLRNCrossChannelForward refuses any type past CUDNN_DATA_INT8 (its
// argument checks), and its forward and backward kernels come in __half/float
// instances and none for bfloat16. So the layer computes in 16 bits in an fp16
// graph only (LocalResponseNorm::computes_16_bit), and a bf16 graph stages it
// in fp32. The window sums are taken in float inside. cudnn_ops.h says the
// descriptor's double parameters are cast to the tensor type: for the usual
// ones (alpha 1e-4, beta 0.75, k 1 or 2) that moves y by less than half an
// fp16 rounding step (only alpha is inexact in half, by 1.7e-4 relative).
// Caffe2's cuDNN LRN ran forward and backward on float16 so.
#include "layers/lrn.h"

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct LrnState final : BackendState {
  TensorDescriptor desc;  // x, y, dx and dy share one shape
  LrnDescriptor lrn;
};

}  // namespace

void LocalResponseNorm::prepare_cuda(Context&, const PrepareOptions&) {
  static_assert(kMinSize == CUDNN_LRN_MIN_N && kMaxSize == CUDNN_LRN_MAX_N,
                "LocalResponseNorm's size limits must be cuDNN's");
  static_assert(kMinK == CUDNN_LRN_MIN_K && kMinBeta == CUDNN_LRN_MIN_BETA,
                "LocalResponseNorm's k and beta limits must be cuDNN's");
  auto state = std::make_unique<LrnState>();
  state->desc = make_tensor_descriptor(input_shapes()[0], value_storage());  // Note [LRN in 16 bits]
  state->lrn = make_descriptor<LrnDescriptor>(cudnnCreateLRNDescriptor);
  // cuDNN divides alpha by size itself: pass alpha as given.
  CUDNN_CHECK(cudnnSetLRNDescriptor(state->lrn.get(), static_cast<unsigned>(options_.size), options_.alpha,
                                    options_.beta, options_.k));
  backend_ = std::move(state);
}

void LocalResponseNorm::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<LrnState>(backend_);
  CUDNN_CHECK(cudnnLRNCrossChannelForward(cudnn_of(ctx), s.lrn.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne,
                                          s.desc.get(), args.inputs[0].raw(), &kZero, s.desc.get(),
                                          args.output.raw()));
}

void LocalResponseNorm::backward_cuda(Context& ctx, const BackwardArgs& args) {
  if (!args.input_grads[0].defined()) return;
  auto& s = state_as<LrnState>(backend_);
  CUDNN_CHECK(cudnnLRNCrossChannelBackward(cudnn_of(ctx), s.lrn.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne,
                                           s.desc.get(), args.output.raw(), s.desc.get(),
                                           args.output_grad.raw(), s.desc.get(), args.inputs[0].raw(),
                                           beta_for(args.input_grad_modes[0]), s.desc.get(),
                                           args.input_grads[0].raw()));
}

}  // namespace glassbox
