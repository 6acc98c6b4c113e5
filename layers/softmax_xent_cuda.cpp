// layers/softmax_xent_cuda.cpp: log-probabilities with cudnnSoftmaxForward
// (CUDNN_SOFTMAX_LOG over each sample's K values, CUDNN_SOFTMAX_MODE_INSTANCE
// on an (N, K, 1, 1) descriptor), then the kernels of softmax_xent.cu for the
// loss and the gradient.
#include "layers/softmax_xent.h"

#include "layers/layer_cuda.h"
#include "layers/softmax_xent_kernels_cuda.h"

namespace glassbox {
namespace {

struct SoftmaxCrossEntropyState final : BackendState {
  TensorDescriptor logits;  // (N, K, 1, 1), also log_probs_; N = rows(), whatever the logits' rank
};

}  // namespace

void SoftmaxCrossEntropy::prepare_cuda(Context& ctx, const PrepareOptions&) {
  auto state = std::make_unique<SoftmaxCrossEntropyState>();
  // As rows, not input_shapes()[0]: (T, B, K) would read as (T, B, K, 1),
  // and the instance softmax would then run over B*K values per t.
  state->logits = make_tensor_descriptor(Shape{rows(), classes()});
  log_probs_ = ctx.allocate(input_shapes()[0], DType::kFloat32, MemoryCategory::kLayerState);
  backend_ = std::move(state);
}

void SoftmaxCrossEntropy::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<SoftmaxCrossEntropyState>(backend_);
  const int64_t n = rows(), k = classes();
  CUDNN_CHECK(cudnnSoftmaxForward(cudnn_of(ctx), CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne,
                                  s.logits.get(), args.inputs[0].raw(), &kZero, s.logits.get(), log_probs_.raw()));
  launch_softmax_xent_loss(log_probs_.data<float>(), args.inputs[1].data<int>(), n, k, args.output.data<float>(),
                           stream_of(ctx));
}

void SoftmaxCrossEntropy::backward_cuda(Context& ctx, const BackwardArgs& args) {
  const Tensor& dx = args.input_grads[0];
  if (!dx.defined()) return;
  const int64_t n = rows(), k = classes();
  launch_softmax_xent_grad(log_probs_.data<float>(), args.inputs[1].data<int>(), n, k,
                           args.input_grad_modes[0] == GradMode::kAdd, dx.data<float>(), stream_of(ctx));
}

}  // namespace glassbox
