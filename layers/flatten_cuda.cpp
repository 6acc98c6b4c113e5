// layers/flatten_cuda.cpp: Flatten as a device copy (forward, written
// gradient) or a cuDNN add (accumulated gradient). The values are float32, or
// bfloat16 or float16 in a mixed-precision graph (value_storage()): the copies
// move bytes, and cudnnAddTensor takes either 16-bit type (Note [16-bit tensor
// ops], layers/add_cuda.cpp).
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
  state->desc = make_tensor_descriptor(output_shape(), value_storage());
  backend_ = std::move(state);
}

void Flatten::forward_cuda(Context& ctx, const ForwardArgs& args) {
  CUDA_CHECK(cudaMemcpyAsync(args.output.raw(), args.inputs[0].raw(), args.output.bytes(),
                             cudaMemcpyDeviceToDevice, stream_of(ctx)));
}

void Flatten::backward_cuda(Context& ctx, const BackwardArgs& args) {
  if (!args.input_grads[0].defined()) return;
  auto& s = state_as<FlattenState>(backend_);
  write_or_add_tensor(ctx, args.input_grad_modes[0], s.desc.get(), args.output_grad, args.input_grads[0]);
}

}  // namespace glassbox
