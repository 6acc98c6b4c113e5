// layers/flatten_cuda.cpp: Flatten as a device copy (forward, written
// gradient) or a cuDNN add (accumulated gradient).
#include "layers/flatten.h"

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct FlattenState final : BackendState {
  // (N, F, 1, 1): x and dx have the same elements in the same order, so one
  // descriptor serves both sides of the add.
  TensorDescriptor desc;
};

}  // namespace

void Flatten::prepare_cuda(Context&, const PrepareOptions&) {
  auto state = std::make_unique<FlattenState>();
  state->desc = make_tensor_descriptor(output_shape());
  backend_ = std::move(state);
}

void Flatten::forward_cuda(Context& ctx, const ForwardArgs& args) {
  CUDA_CHECK(cudaMemcpyAsync(args.output.raw(), args.inputs[0].raw(), args.output.bytes(),
                             cudaMemcpyDeviceToDevice, stream_of(ctx)));
}

void Flatten::backward_cuda(Context& ctx, const BackwardArgs& args) {
  const Tensor& dx = args.input_grads[0];
  if (!dx.defined()) return;
  if (args.input_grad_modes[0] == GradMode::kWrite) {
    CUDA_CHECK(cudaMemcpyAsync(dx.raw(), args.output_grad.raw(), dx.bytes(), cudaMemcpyDeviceToDevice,
                               stream_of(ctx)));
    return;
  }
  auto& s = state_as<FlattenState>(backend_);
  CUDNN_CHECK(cudnnAddTensor(cudnn_of(ctx), &kOne, s.desc.get(), args.output_grad.raw(), &kOne,
                             s.desc.get(), dx.raw()));
}

}  // namespace glassbox
