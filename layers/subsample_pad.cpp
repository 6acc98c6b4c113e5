// layers/subsample_pad.cpp: shapes and the CPU path. Work is split over
// planes (one channel of one image): forward over y's planes, each either
// zeros or x's plane read on the stride grid; backward over dx's planes, each
// dy's plane scattered back onto the grid. Eigen maps with strides do the
// gathering and scattering. Channels-last values (Note [Channels-last values
// on the CPU]) move a pixel's channels at a time instead.
#include "layers/subsample_pad.h"

#include <algorithm>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

// The stride-grid pixels of one H x W plane, as a P x Q matrix: rows stride*W
// floats apart, columns stride floats apart.
using GridMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
using ConstGridMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;

// Planes per work item: about kElementwiseGrain elements each.
int64_t planes_per_item(int64_t plane_size) { return std::max<int64_t>(1, kElementwiseGrain / plane_size); }

}  // namespace

SubsamplePad::SubsamplePad(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  if (options_.stride < 1) fail_option(cat("stride must be positive, got ", options_.stride));
  if (options_.out_channels < 1) fail_option(cat("out_channels must be positive, got ", options_.out_channels));
  if (options_.first_channel < 0) {
    fail_option(cat("first_channel must not be negative, got ", options_.first_channel));
  }
}

std::string SubsamplePad::describe() const {
  std::string text = cat("s", options_.stride, ", ", input_shapes()[0][1], " -> ", options_.out_channels, " channels");
  if (options_.first_channel != 0) text += cat(" (x at ", options_.first_channel, ")");
  return text;
}

Shape SubsamplePad::infer(std::span<const Shape> inputs) const {
  expect_rank(inputs, 0, 4, "(N, C, H, W)");
  const Shape& x = inputs[0];
  const int64_t needed = x[1] + options_.first_channel;
  if (needed > options_.out_channels) {
    fail(cat("out_channels is ", options_.out_channels, ", fewer than the ", needed, " needed for the input's ", x[1],
             " channels from channel ", options_.first_channel, " (input ", x.str(), ")"));
  }
  const int64_t s = options_.stride;  // x[::s] keeps ceil(H / s) pixels
  return Shape{x[0], options_.out_channels, (x[2] + s - 1) / s, (x[3] + s - 1) / s};
}

void SubsamplePad::forward_cpu(Context&, const ForwardArgs& args) {
  if (input_channels_last(0)) return forward_cpu_nhwc(args);
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  const int64_t c = xs[1], hw = xs[2] * xs[3], w = xs[3];
  const int64_t k = ys[1], p = ys[2], q = ys[3], s = options_.stride, first = options_.first_channel;
  const float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  parallel_for(ys[0] * k, planes_per_item(p * q), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / k, channel = plane % k - first;
      MatrixMap out(y + plane * p * q, p, q);
      if (channel < 0 || channel >= c) {
        out.setZero();
      } else {
        out = ConstGridMap(x + (n * c + channel) * hw, p, q, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(s * w, s));
      }
    }
  });
}

void SubsamplePad::backward_cpu(Context&, const BackwardArgs& args) {
  const Tensor& dx_tensor = args.input_grads[0];
  if (!dx_tensor.defined()) return;
  if (input_channels_last(0)) return backward_cpu_nhwc(args);
  const bool add = args.input_grad_modes[0] == GradMode::kAdd;
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  const int64_t c = xs[1], hw = xs[2] * xs[3], w = xs[3];
  const int64_t k = ys[1], p = ys[2], q = ys[3], s = options_.stride, first = options_.first_channel;
  // The grid is the whole plane when it keeps every pixel: nothing to zero around it.
  const bool zero_off_grid = !add && p * q != hw;
  const float* dy = args.output_grad.data<float>();
  float* dx = dx_tensor.data<float>();
  parallel_for(xs[0] * c, planes_per_item(hw), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / c, channel = plane % c;
      float* dx_plane = dx + plane * hw;
      if (zero_off_grid) std::fill(dx_plane, dx_plane + hw, 0.0f);
      GridMap grid(dx_plane, p, q, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(s * w, s));
      const ConstMatrixMap from(dy + (n * k + first + channel) * p * q, p, q);
      if (add) {
        grid += from;
      } else {
        grid = from;
      }
    }
  });
}

// NHWC: a pixel's channels are one run, so y's pixel is zeros, x's pixel on
// the grid, zeros; and dx's pixel on the grid is dy's run of x's channels,
// off it zero (or left as it is when adding).
void SubsamplePad::forward_cpu_nhwc(const ForwardArgs& args) {
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  const int64_t c = xs[1], h = xs[2], w = xs[3];
  const int64_t k = ys[1], p = ys[2], q = ys[3], s = options_.stride, first = options_.first_channel;
  const float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  parallel_for(ys[0] * p, planes_per_item(q * k), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {  // one row of y's pixels
      const int64_t n = row / p, i = row % p;
      for (int64_t j = 0; j < q; ++j) {
        float* out = y + (row * q + j) * k;
        const float* in = x + ((n * h + i * s) * w + j * s) * c;
        std::fill(out, out + first, 0.0f);
        std::copy(in, in + c, out + first);
        std::fill(out + first + c, out + k, 0.0f);
      }
    }
  });
}

void SubsamplePad::backward_cpu_nhwc(const BackwardArgs& args) {
  const Tensor& dx_tensor = args.input_grads[0];
  if (!dx_tensor.defined()) return;
  const bool add = args.input_grad_modes[0] == GradMode::kAdd;
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  const int64_t c = xs[1], h = xs[2], w = xs[3];
  const int64_t k = ys[1], p = ys[2], q = ys[3], s = options_.stride, first = options_.first_channel;
  const float* dy = args.output_grad.data<float>();
  float* dx = dx_tensor.data<float>();
  parallel_for(xs[0] * h, planes_per_item(w * c), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {  // one row of dx's pixels
      const int64_t n = row / h, i = row % h;
      for (int64_t j = 0; j < w; ++j) {
        float* d = dx + (row * w + j) * c;
        if (i % s != 0 || j % s != 0) {
          if (!add) std::fill(d, d + c, 0.0f);
          continue;
        }
        const float* g = dy + ((n * p + i / s) * q + j / s) * k + first;
        write_or_add(args.input_grad_modes[0], as_array(d, c), Eigen::Map<const Eigen::ArrayXf>(g, c));
      }
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(SubsamplePad)
}  // namespace glassbox
#endif
