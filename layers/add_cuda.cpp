// layers/add_cuda.cpp: Add on CUDA. Forward: y = x0 + x1 in one pass of
// layers/relu.cu's add (with the ReLU where it is fused), then y += x_i
// (cudnnAddTensor) for the rest. Backward: per input, in slot order, a
// device copy of dy (kWrite) or dx += dy (kAdd).
//
// Note [16-bit tensor ops]: the values are float32, or bfloat16 or float16 in
// a mixed-precision graph (value_storage(), Note [16-bit values in a layer]).
// The first add is Glassbox's kernel rather than cudnnOpTensor, which has no
// bfloat16 path (layers/relu.cu); it sums in float and rounds once.
// cudnnAddTensor takes float, double, half, int8 and bfloat16, A and C of one
// type; alpha and beta stay float. With three or more inputs y is rounded to
// 16 bits after each addition, as a chain of 16-bit adds in PyTorch is.
#include "layers/add.h"

#include "layers/layer_cuda.h"
#include "layers/relu_kernels_cuda.h"
#include "tensor/context_cuda.h"

namespace glassbox {
namespace {

struct AddState final : BackendState {
  TensorDescriptor desc;  // every input, y, dy and every dx share one shape
};

}  // namespace

void Add::prepare_cuda(Context&, const PrepareOptions&) {
  auto state = std::make_unique<AddState>();
  state->desc = make_tensor_descriptor(output_shape(), value_storage());
  backend_ = std::move(state);
}

void Add::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<AddState>(backend_);
  if (fused_relu()) {
    // Note [A ReLU fused into its producer]: y = max(0, x0 + x1) in one pass,
    // rounded once as the plain add rounds x0 + x1 (the ReLU is exact).
    launch_add_relu(args.inputs[0].raw(), args.inputs[1].raw(), args.output.raw(), args.output.numel(),
                    value_storage(), stream_of(ctx));
    return;
  }
  // y is written, not read: whatever it held (NaN included) cannot leak in.
  launch_add(args.inputs[0].raw(), args.inputs[1].raw(), args.output.raw(), args.output.numel(), value_storage(),
             stream_of(ctx));
  for (size_t i = 2; i < args.inputs.size(); ++i) {
    CUDNN_CHECK(cudnnAddTensor(cudnn_of(ctx), &kOne, s.desc.get(), args.inputs[i].raw(), &kOne,
                               s.desc.get(), args.output.raw()));
  }
}

void Add::backward_cuda(Context& ctx, const BackwardArgs& args) {
  auto& s = state_as<AddState>(backend_);
  // In slot order, all on the context's stream (the cuDNN handle is bound to
  // it), so Add(x, x)'s kWrite-then-kAdd on one tensor is applied in order.
  for (size_t i = 0; i < args.input_grads.size(); ++i) {
    if (!args.input_grads[i].defined()) continue;
    write_or_add_tensor(ctx, args.input_grad_modes[i], s.desc.get(), args.output_grad, args.input_grads[i]);
  }
}

}  // namespace glassbox
