// layers/flatten_cuda.cpp: Flatten as a device copy (forward, written
// gradient) or Glassbox's add (accumulated gradient, write_or_add_tensor). The
// values are float32, or bfloat16 or float16 in a mixed-precision graph
// (value_storage()): the copies move bytes, and the add sums in float and
// rounds once (Note [16-bit tensor ops], layers/add_cuda.cpp).
//
// From an NHWC input (Note [Flatten of channels-last values], layers/flatten.h)
// every pass is one cudnnTransformTensor between x's shape (N, C, H, W)
// described NHWC and the same shape described packed NCHW, which is y's
// (N, C*H*W) byte for byte: forward NHWC -> NCHW with beta = 0, backward
// NCHW -> NHWC with beta = 0 | 1 per GradMode. A LayoutBridge holds the two
// descriptors, with y (and dy) as its computed side; no workspace is needed.
// Where C = 1 or H*W = 1 (a global pooling's (N, C, 1, 1) features) the two
// orders are the same bytes, and the NCHW copies serve.
// cudnnTransformTensor takes 16-bit source and destination of one type
// (Note [Concat of channels-last values], layers/concat_cuda.cpp).
#include "layers/flatten.h"

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct FlattenState final : BackendState {
  // x NHWC (stored) and y NCHW (computed); needed() is false where x's bytes
  // are already in y's order.
  LayoutBridge nhwc;
};

}  // namespace

void Flatten::prepare_cuda(Context&, const PrepareOptions&) {
  auto state = std::make_unique<FlattenState>();
  const Shape& x = input_shapes()[0];
  state->nhwc = LayoutBridge(x, value_storage(), input_layout(0), Layout::kNCHW);
  backend_ = std::move(state);
}

void Flatten::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<FlattenState>(backend_);
  if (s.nhwc.needed()) {
    s.nhwc.to_computed(ctx, args.inputs[0].raw(), args.output.raw(), &kZero);
    return;
  }
  CUDA_CHECK(cudaMemcpyAsync(args.output.raw(), args.inputs[0].raw(), args.output.bytes(),
                             cudaMemcpyDeviceToDevice, stream_of(ctx)));
}

void Flatten::backward_cuda(Context& ctx, const BackwardArgs& args) {
  if (!args.input_grads[0].defined()) return;
  auto& s = state_as<FlattenState>(backend_);
  const GradMode mode = args.input_grad_modes[0];
  if (s.nhwc.needed()) {
    s.nhwc.to_stored(ctx, args.output_grad.raw(), args.input_grads[0].raw(), beta_for(mode));
    return;
  }
  write_or_add_tensor(ctx, mode, args.output_grad, args.input_grads[0]);
}

}  // namespace glassbox
