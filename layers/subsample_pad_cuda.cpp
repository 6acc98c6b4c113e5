// layers/subsample_pad_cuda.cpp: SubsamplePad with cuDNN alone.
//
// cudnnTransformTensor computes out = alpha * in + beta * out between two
// descriptors of the same sizes and any strides. Two such views make the layer:
//   grid: x's stride-grid pixels, (N, C, P, Q), at x;
//   kept: y's channels [f, f+C), (N, C, P, Q) with y's strides, at y + f * (y's channel stride).
// Forward transforms grid -> kept and sets the other channels of y to zero
// (cudnnSetTensor over one view before f and one after f+C, y's strides).
// Backward transforms kept (of dy) -> grid (of dx), beta = 0 | 1 per GradMode.
// The strides follow the layout x and y share (keeps_layout), in (N, C, H, W) order:
//   NCHW: grid (C*H*W, H*W, s*W, s),      y (K*P*Q, P*Q, Q, 1),  channel stride P*Q
//   NHWC: grid (H*W*C, 1, s*W*C, s*C),    y (P*Q*K, 1, Q*K, K),  channel stride 1
// The layer is float32 only: a mixed-precision graph stages it (computes_16_bit
// is false).
#include "layers/subsample_pad.h"

#include <array>
#include <climits>

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct SubsamplePadState final : BackendState {
  TensorDescriptor grid;    // x's and dx's stride-grid pixels
  TensorDescriptor kept;    // y's and dy's channels [f, f+C)
  TensorDescriptor before;  // y's channels [0, f); empty when f = 0
  TensorDescriptor after;   // y's channels [f+C, K); empty when f+C = K
  TensorDescriptor input;   // all of dx, to zero it
  int64_t channel_stride = 0;  // of y, in elements: where channel f starts
  bool zero_off_grid = false;
};

// The views' strides in elements, (N, C, H, W) order, for x:(N,C,H,W) and
// y:(N,K,P,Q) with stride s. A dimension of size 1 takes the packed stride:
// s*W (times C) or s (times C) could pass INT_MAX for a stride larger than the
// input, where only one row or column is kept.
struct ViewStrides {
  std::array<int64_t, 4> grid, y;
};
ViewStrides nchw_strides(const Shape& xs, const Shape& ys, int64_t s) {
  const int64_t c = xs[1], h = xs[2], w = xs[3], k = ys[1], p = ys[2], q = ys[3];
  return {.grid = {c * h * w, h * w, p > 1 ? s * w : w, q > 1 ? s : 1}, .y = {k * p * q, p * q, q, 1}};
}
ViewStrides nhwc_strides(const Shape& xs, const Shape& ys, int64_t s) {
  const int64_t c = xs[1], h = xs[2], w = xs[3], k = ys[1], p = ys[2], q = ys[3];
  return {.grid = {h * w * c, 1, p > 1 ? s * w * c : w * c, q > 1 ? s * c : c}, .y = {p * q * k, 1, q * k, k}};
}

}  // namespace

void SubsamplePad::prepare_cuda(Context&, const PrepareOptions&) {
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  if (xs.numel_from(0) > INT_MAX || ys.numel_from(0) > INT_MAX || xs[0] > INT_MAX) {
    fail(cat("one sample of ", xs.str(), " or ", ys.str(), " has more than 2^31 - 1 elements, beyond cuDNN's strides"));
  }
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  const int64_t k = ys[1], p = ys[2], q = ys[3], first = options_.first_channel;
  const Layout layout = input_layout(0);  // keeps_layout: y, dx and dy share it
  const ViewStrides strides = layout == Layout::kNHWC ? nhwc_strides(xs, ys, options_.stride)
                                                      : nchw_strides(xs, ys, options_.stride);
  auto state = std::make_unique<SubsamplePadState>();
  state->grid = make_strided_descriptor(Shape{n, c, p, q}, strides.grid, DType::kFloat32);
  state->kept = make_strided_descriptor(Shape{n, c, p, q}, strides.y, DType::kFloat32);
  if (first > 0) state->before = make_strided_descriptor(Shape{n, first, p, q}, strides.y, DType::kFloat32);
  if (first + c < k) state->after = make_strided_descriptor(Shape{n, k - first - c, p, q}, strides.y, DType::kFloat32);
  // All of dx is set to zero, whatever order its elements are in: a packed
  // NCHW descriptor of its shape covers the same bytes as an NHWC one.
  state->input = make_tensor_descriptor(xs);
  state->channel_stride = strides.y[1];
  state->zero_off_grid = p * q != h * w;
  backend_ = std::move(state);
}

void SubsamplePad::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<SubsamplePadState>(backend_);
  const int64_t first = options_.first_channel, c = input_shapes()[0][1];
  float* y = args.output.data<float>();
  CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, s.grid.get(), args.inputs[0].raw(), &kZero, s.kept.get(),
                                   y + first * s.channel_stride));
  if (s.before) CUDNN_CHECK(cudnnSetTensor(cudnn_of(ctx), s.before.get(), y, &kZero));
  if (s.after) CUDNN_CHECK(cudnnSetTensor(cudnn_of(ctx), s.after.get(), y + (first + c) * s.channel_stride, &kZero));
}

// Note [SubsamplePad written gradient]: with kWrite, dx must be zero off the
// stride grid. Those positions are the complement of a lattice, which no one
// strided descriptor describes, so all of dx is set to zero first (one
// cudnnSetTensor, a single pass of writes) and the grid is then written with
// beta = 0. beta = 1 would give the same values but read back the zeros just
// written. Where the grid is all of dx (stride 1, or a 1x1 input) the set is
// skipped. Both calls go to one cuDNN handle on one stream, so they run in order.
void SubsamplePad::backward_cuda(Context& ctx, const BackwardArgs& args) {
  const Tensor& dx = args.input_grads[0];
  if (!dx.defined()) return;
  auto& s = state_as<SubsamplePadState>(backend_);
  const GradMode mode = args.input_grad_modes[0];
  if (mode == GradMode::kWrite && s.zero_off_grid) {
    CUDNN_CHECK(cudnnSetTensor(cudnn_of(ctx), s.input.get(), dx.raw(), &kZero));
  }
  const float* dy = args.output_grad.data<float>();
  CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, s.kept.get(), dy + options_.first_channel * s.channel_stride,
                                   beta_for(mode), s.grid.get(), dx.raw()));
}

}  // namespace glassbox
