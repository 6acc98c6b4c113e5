// layers/pool2d/pool2d_cuda.cpp: Pool2d with cuDNN pooling forward/backward.
//
// Note [Ceil-mode pooling on cuDNN]
// cuDNN's pooling descriptor has no ceil flag: cudnnGetPooling2dForwardOutputDim
// always rounds down. Ceil mode is done as cudnn.torch's `:ceil()` does it: the
// output descriptor is given the ceil size (the graph's planned output, from
// infer()), and cuDNN computes every output position the descriptor asks for,
// treating the part of the last window past the input and padding as padding
// (for max pooling: never the maximum), which is PyTorch's ceil_mode. cuDNN
// documents no such use; cudnn.torch relied on it (GoogLeNet in
// convnet-benchmarks). Pool2d.CudaMatchesCpuInCeilMode (tests/test_pool2d.cpp)
// checks it against the CPU's ceil mode on the GPU. On channels-last values the
// descriptors are NHWC (Note [Channels-last pooling on cuDNN]) and ceil mode is
// done the same way: the output descriptor has the ceil size, in x's layout.
// cudnnGetPooling2dForwardOutputDim reads the dimensions of a descriptor, not
// its strides, so the check in prepare_cuda holds for either layout; the NHWC
// kernels' handling of the enlarged output is checked against the NCHW ones on
// the GPU (tests/test_channels_last_cuda_layers.cpp).
//
// Note [Channels-last pooling on cuDNN]: cuDNN pools NHWC tensors (fully
// packed, strides (H*W*C, 1, W*C, C)) with any window, in either mode, forward
// and backward, so a CUDA Pool2d reads x channels-last whatever its window
// (Pool2d::can_read_channels_last). It computes in x's layout: x, dx, and y
// and dy as cuDNN sees them. y is NHWC too, except before a layer that reads
// NCHW only (a Flatten, an LRN): then the forward pools into the workspace and
// converts y into its NCHW tensor, and the backward converts y and dy back
// into two workspace shares before cudnnPoolingBackward writes dx (Note
// [Layout bridges], layers/layer_cuda.h). Those conversions move bits
// (cudnnTransformTensor between two layouts of one type), so the y that
// cudnnPoolingBackward reads beside x is the y its forward wrote.
//
// Note [16-bit pooling]: the values are float32, or bfloat16 or float16 in a
// mixed-precision graph (value_storage(), Note [16-bit values in a layer]).
// cuDNN 9 pools half and bfloat16 tensors with float arithmetic inside: its
// forward and backward kernels, CUDNN_POOLING_MAX_DETERMINISTIC's backward
// included, come in __half/float and __nv_bfloat16/float instances, and its
// argument checks admit CUDNN_DATA_BFLOAT16 for x, y, dx and dy alike (all
// four of one type). alpha and beta stay float. A maximum is exact in any
// type; an average is rounded once, into y (and dx).
#include "layers/pool2d/pool2d.h"

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct Pool2dState final : BackendState {
  TensorDescriptor input;   // x and dx: (N, C, H, W), in x's layout
  TensorDescriptor output;  // y and dy as cuDNN computes them: (N, C, P, Q), in x's layout
  PoolingDescriptor pooling;
  // y (and dy) stored in the other layout than x: Note [Channels-last pooling on cuDNN].
  LayoutBridge bridge;
  size_t share = 0;  // workspace bytes of one bridged tensor, aligned

  void* bridged(void* workspace, int index) const { return static_cast<char*>(workspace) + index * share; }
};

}  // namespace

void Pool2d::prepare_cuda(Context&, const PrepareOptions& options) {
  const Window w = window();
  auto state = std::make_unique<Pool2dState>();
  const Layout computed = input_layout(0);  // Note [Channels-last pooling on cuDNN]
  state->input = make_tensor_descriptor(input_shapes()[0], value_storage(), computed);  // Note [16-bit pooling]
  state->output = make_tensor_descriptor(output_shape(), value_storage(), computed);
  state->bridge = LayoutBridge(output_shape(), value_storage(), output_layout(), computed);
  state->share = aligned_share(state->bridge.bytes());
  // Forward: y as computed; backward: y and dy as computed (0 without a bridge).
  set_workspace_bytes(options.phase == Phase::kTraining ? 2 * state->share : state->share);
  state->pooling = make_descriptor<PoolingDescriptor>(cudnnCreatePoolingDescriptor);
  // Max pooling uses the deterministic variant: its backward gives the same
  // dx on every run (plain CUDNN_POOLING_MAX need not), so training is
  // reproducible. Average counts padding in the divisor, as the header says.
  // CUDNN_PROPAGATE_NAN asks that a NaN in a window pool to NaN, as on the
  // CPU (Note [Max pooling propagates NaN] in pool2d.cpp); no test checks it
  // on a GPU. Which NaN cuDNN's backward sends the gradient to, it does not
  // document.
  const cudnnPoolingMode_t mode =
      mode_ == Mode::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  CUDNN_CHECK(cudnnSetPooling2dDescriptor(state->pooling.get(), mode, CUDNN_PROPAGATE_NAN, w.kernel.h,
                                          w.kernel.w, w.pad.h, w.pad.w, w.stride.h, w.stride.w));
  // cuDNN sizes the output itself (rounding down); it must agree with infer()
  // rounding down, or forward would read and write past the tensors the graph
  // planned. In ceil mode the output descriptor is larger than cuDNN's own
  // size on purpose: Note [Ceil-mode pooling on cuDNN].
  int n = 0, c = 0, h = 0, width = 0;
  CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(state->pooling.get(), state->input.get(), &n, &c, &h, &width));
  const Shape& x = input_shapes()[0];
  const Shape expected{x[0], x[1], pooled_length(x[2], w.kernel.h, w.stride.h, w.pad.h, false),
                       pooled_length(x[3], w.kernel.w, w.stride.w, w.pad.w, false)};
  if (n != expected[0] || c != expected[1] || h != expected[2] || width != expected[3]) {
    fail(cat("cuDNN computes output (", n, ", ", c, ", ", h, ", ", width, "), shape inference rounding down ",
             expected.str()));
  }
  backend_ = std::move(state);
}

void Pool2d::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<Pool2dState>(backend_);
  void* y = s.bridge.needed() ? s.bridged(checked_workspace(ctx), 0) : args.output.raw();
  CUDNN_CHECK(cudnnPoolingForward(cudnn_of(ctx), s.pooling.get(), &kOne, s.input.get(), args.inputs[0].raw(),
                                  &kZero, s.output.get(), y));
  if (s.bridge.needed()) s.bridge.to_stored(ctx, y, args.output.raw());
}

void Pool2d::backward_cuda(Context& ctx, const BackwardArgs& args) {
  if (!args.input_grads[0].defined()) return;
  auto& s = state_as<Pool2dState>(backend_);
  const void* y = args.output.raw();
  const void* dy = args.output_grad.raw();
  if (s.bridge.needed()) {  // Note [Channels-last pooling on cuDNN]
    void* workspace = checked_workspace(ctx);
    s.bridge.to_computed(ctx, y, s.bridged(workspace, 0));
    s.bridge.to_computed(ctx, dy, s.bridged(workspace, 1));
    y = s.bridged(workspace, 0);
    dy = s.bridged(workspace, 1);
  }
  CUDNN_CHECK(cudnnPoolingBackward(cudnn_of(ctx), s.pooling.get(), &kOne, s.output.get(), y, s.output.get(), dy,
                                   s.input.get(), args.inputs[0].raw(), beta_for(args.input_grad_modes[0]),
                                   s.input.get(), args.input_grads[0].raw()));
}

}  // namespace glassbox
