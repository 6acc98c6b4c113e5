// layers/add_cuda.cpp: Add on CUDA. Forward: y = x0 + x1 in one pass of
// layers/relu.cu's add (with the ReLU where it is fused), then y += x_i in
// place, by the same kernel, for the rest. Backward: per input, in slot
// order, a device copy of dy (kWrite) or dx += dy (kAdd, the same kernel).
//
// Note [16-bit tensor ops]: the values are float32, or bfloat16 or float16 in
// a mixed-precision graph (value_storage(), Note [16-bit values in a layer]).
// Every same-shape add, here and in write_or_add_tensor, is Glassbox's kernel
// rather than cuDNN's, as a layer's bias add is (Note [A bias add by
// Glassbox's kernel]): cudnnOpTensor has no bfloat16 path (layers/relu.cu),
// and cuDNN's documentation does not say that cudnnAddTensor has one. The
// kernel sums in float and rounds once, which is exact for float32. With three
// or more inputs y is rounded to 16 bits after each addition, as a chain of
// 16-bit adds in PyTorch is.
#include "layers/add.h"

#include "layers/layer_cuda.h"
#include "layers/relu_kernels_cuda.h"
#include "tensor/context_cuda.h"

namespace glassbox {
namespace {

// No descriptors: every pass is Glassbox's kernel or a device copy.
struct AddState final : BackendState {};

}  // namespace

void Add::prepare_cuda(Context&, const PrepareOptions&) {
  backend_ = std::make_unique<AddState>();
}

void Add::forward_cuda(Context& ctx, const ForwardArgs& args) {
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
    launch_add(args.output.raw(), args.inputs[i].raw(), args.output.raw(), args.output.numel(), value_storage(),
               stream_of(ctx));
  }
}

void Add::backward_cuda(Context& ctx, const BackwardArgs& args) {
  // In slot order, all on the context's stream, so Add(x, x)'s kWrite-then-kAdd on one tensor is applied in order.
  for (size_t i = 0; i < args.input_grads.size(); ++i) {
    if (!args.input_grads[i].defined()) continue;
    write_or_add_tensor(ctx, args.input_grad_modes[i], args.output_grad, args.input_grads[i]);
  }
}

}  // namespace glassbox
