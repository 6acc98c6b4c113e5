// layers/subsample_pad_cuda.cpp: SubsamplePad with cuDNN alone.
//
// cudnnTransformTensor computes out = alpha * in + beta * out between two
// descriptors of the same sizes and any strides. Two such views make the layer:
//   grid: x's stride-grid pixels, (N, C, P, Q) with strides (C*H*W, H*W, s*W, s), at x;
//   kept: y's channels [f, f+C),  (N, C, P, Q) with y's strides (K*P*Q, P*Q, Q, 1), at y + f*P*Q.
// Forward transforms grid -> kept and sets the other channels of y to zero
// (cudnnSetTensor over one view before f and one after f+C, y's strides).
// Backward transforms kept (of dy) -> grid (of dx), beta = 0 | 1 per GradMode.
#include "layers/subsample_pad.h"

#include <climits>

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct SubsamplePadState final : BackendState {
  TensorDescriptor grid;    // x's and dx's stride-grid pixels
  TensorDescriptor kept;    // y's and dy's channels [f, f+C)
  TensorDescriptor before;  // y's channels [0, f); empty when f = 0
  TensorDescriptor after;   // y's channels [f+C, K); empty when f+C = K
  TensorDescriptor input;   // dx, packed (N, C, H, W)
  bool zero_off_grid = false;
};

// A float32 view of sizes (n, c, h, w) with the given strides, in elements.
// The caller has checked that every value fits in an int.
TensorDescriptor strided_view(const int64_t (&sizes)[4], const int64_t (&strides)[4]) {
  auto desc = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(desc.get(), CUDNN_DATA_FLOAT, static_cast<int>(sizes[0]),
                                           static_cast<int>(sizes[1]), static_cast<int>(sizes[2]),
                                           static_cast<int>(sizes[3]), static_cast<int>(strides[0]),
                                           static_cast<int>(strides[1]), static_cast<int>(strides[2]),
                                           static_cast<int>(strides[3])));
  return desc;
}

}  // namespace

void SubsamplePad::prepare_cuda(Context&, const PrepareOptions&) {
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  if (xs.numel_from(0) > INT_MAX || ys.numel_from(0) > INT_MAX || xs[0] > INT_MAX) {
    fail(cat("one sample of ", xs.str(), " or ", ys.str(), " has more than 2^31 - 1 elements, beyond cuDNN's strides"));
  }
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  const int64_t k = ys[1], p = ys[2], q = ys[3], s = options_.stride, first = options_.first_channel;
  // A dimension of size 1 takes the packed stride: s*W or s could pass INT_MAX
  // for a stride larger than the input, where only one row or column is kept.
  const int64_t row_stride = p > 1 ? s * w : w, column_stride = q > 1 ? s : 1;
  auto state = std::make_unique<SubsamplePadState>();
  state->grid = strided_view({n, c, p, q}, {c * h * w, h * w, row_stride, column_stride});
  const int64_t y_strides[4] = {k * p * q, p * q, q, 1};
  state->kept = strided_view({n, c, p, q}, y_strides);
  if (first > 0) state->before = strided_view({n, first, p, q}, y_strides);
  if (first + c < k) state->after = strided_view({n, k - first - c, p, q}, y_strides);
  state->input = make_tensor_descriptor(xs);
  state->zero_off_grid = p * q != h * w;
  backend_ = std::move(state);
}

void SubsamplePad::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<SubsamplePadState>(backend_);
  const int64_t plane = output_shape()[2] * output_shape()[3];
  const int64_t first = options_.first_channel, c = input_shapes()[0][1];
  float* y = args.output.data<float>();
  CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, s.grid.get(), args.inputs[0].raw(), &kZero, s.kept.get(),
                                   y + first * plane));
  if (s.before) CUDNN_CHECK(cudnnSetTensor(cudnn_of(ctx), s.before.get(), y, &kZero));
  if (s.after) CUDNN_CHECK(cudnnSetTensor(cudnn_of(ctx), s.after.get(), y + (first + c) * plane, &kZero));
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
  const int64_t plane = output_shape()[2] * output_shape()[3];
  const GradMode mode = args.input_grad_modes[0];
  if (mode == GradMode::kWrite && s.zero_off_grid) {
    CUDNN_CHECK(cudnnSetTensor(cudnn_of(ctx), s.input.get(), dx.raw(), &kZero));
  }
  const float* dy = args.output_grad.data<float>();
  CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, s.kept.get(), dy + options_.first_channel * plane,
                                   beta_for(mode), s.grid.get(), dx.raw()));
}

}  // namespace glassbox
