// layers/pool2d/pool2d.cpp: the CPU path (window checks and shapes: layers/pool2d/pool2d_window.cpp).
//
// The CPU path works plane by plane, (n, c) planes in parallel. Forward
// treats each output row as its own accumulator: for every input row r and
// kernel column j of the window,
//   y[p, q] = max(y[p, q], x[r, q * stride + j - pad])     (or +=, for average)
// over the output columns q whose input column lies inside the plane. The
// border clipping is worked out once per (r, j), so the loop over q is a
// branch-free strided loop that the compiler vectorises (contiguous for
// stride 1). Max windows of column stride 1 or 2 run by blocks instead
// (layers/pool2d/pool2d_max.cpp), whose forward keeps each window's argmax; for the
// other strides, backward recomputes it from x. Ceil mode needs nothing more: the overhang of a
// last window is clipped as padding is, and since every window starts inside
// the input or the left padding (pooled_length) and the padding is at most
// half the kernel, every window holds at least one input element.
//
// Note [Max pooling propagates NaN]: a window holding a NaN pools to NaN, and
// its gradient goes to its last NaN in scan order, as PyTorch's max pooling
// does (a NaN replaces the running maximum, whatever it holds). Every max
// path here (these loops, the blocks, the 2x2 windows by lanes, NHWC) and
// cuDNN (CUDNN_PROPAGATE_NAN, asked for but not checked on a GPU) follows it.
// A forward where a NaN never wins (`y < v ? v : y`) would let a NaN in a
// layer's output vanish behind a pool without the finite checks
// (graph/finite_check.h) ever seeing it, and a backward that lets the first
// input stand could route the gradient to a NaN that y had not taken.
#include "layers/pool2d/pool2d.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "layers/pool2d/pool2d_global_nhwc.h"
#include "layers/pool2d/pool2d_max_2x2.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

constexpr int64_t kMaxAverageTaps = 64 * 64;

// The sizes of one (n, c) plane and its window; every plane is the same.
struct Geometry {
  int64_t h, w;  // input plane
  int64_t p, q;  // output plane
  int64_t kh, kw, sh, sw, ph, pw;
  bool whole_plane() const { return p == 1 && q == 1 && kh == h && kw == w && ph == 0 && pw == 0; }
};

// The output indices [begin, end) (of `count`) whose input index
// i * stride + offset lies in [0, size). Rounds the right way for negative
// offsets (integer division truncates toward zero).
std::pair<int64_t, int64_t> valid_range(int64_t offset, int64_t stride, int64_t size, int64_t count) {
  const int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = size - 1 - offset;  // largest i * stride allowed
  const int64_t end = last < 0 ? 0 : std::min(count, last / stride + 1);
  return {begin, std::max(begin, end)};
}

// kStride > 0 fixes the column stride at compile time (the common 1 and 2),
// so the inner loop is contiguous or a fixed-stride gather; 0 reads g.sw.
template <bool kMax, int kStride>
void forward_plane(const float* x, float* y, const Geometry& g, float inv_area) {
  const int64_t sw = kStride > 0 ? kStride : g.sw;
  for (int64_t p = 0; p < g.p; ++p) {
    float* y_row = y + p * g.q;
    std::fill(y_row, y_row + g.q, kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t r = p * g.sh - g.ph + i;
      if (r < 0 || r >= g.h) continue;  // padding rows: never win, add nothing
      const float* x_row = x + r * g.w;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t offset = j - g.pw;
        const auto [begin, end] = valid_range(offset, sw, g.w, g.q);
        for (int64_t q = begin; q < end; ++q) {
          const float v = x_row[q * sw + offset];
          if constexpr (kMax) {
            y_row[q] = y_row[q] < v || v != v ? v : y_row[q];  // Note [Max pooling propagates NaN]
          } else {
            y_row[q] += v;
          }
        }
      }
    }
    if constexpr (!kMax) {
      for (int64_t q = 0; q < g.q; ++q) y_row[q] *= inv_area;
    }
  }
}

template <bool kMax>
void forward_plane_any_stride(const float* x, float* y, const Geometry& g, float inv_area) {
  if (g.sw == 1) {
    forward_plane<kMax, 1>(x, y, g, inv_area);
  } else if (g.sw == 2) {
    forward_plane<kMax, 2>(x, y, g, inv_area);
  } else {
    forward_plane<kMax, 0>(x, y, g, inv_area);
  }
}

// dx (already zeroed or holding what kAdd adds onto) += dy routed to each
// window's first maximum in scan order (row by row, left to right), or its
// last NaN (Note [Max pooling propagates NaN]). The
// argmax is recomputed from x like forward's max, over spans of an output
// row at once: for each window position in scan order, a strict > keeps the
// first maximum, written as selects so the loop over q vectorises. Column
// strides 1 and 2 run by blocks instead (layers/pool2d/pool2d_max.cpp).
void max_backward_plane(const float* x, const float* dy, float* dx, const Geometry& g) {
  const int64_t sw = g.sw;
  constexpr int64_t kSpan = 256;
  float best[kSpan];
  int32_t arg[kSpan];  // index into the plane; infer() keeps planes below 2^31 elements
  for (int64_t p = 0; p < g.p; ++p) {
    for (int64_t q0 = 0; q0 < g.q; q0 += kSpan) {
      const int64_t span = std::min(kSpan, g.q - q0);
      std::fill(best, best + span, -std::numeric_limits<float>::infinity());
      std::fill(arg, arg + span, -1);
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t r = p * g.sh - g.ph + i;
        if (r < 0 || r >= g.h) continue;
        const float* x_row = x + r * g.w;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t offset = j - g.pw;
          const auto [begin, end] = valid_range(offset, sw, g.w, g.q);
          const int64_t b = std::max(begin, q0), e = std::min(end, q0 + span);
          const auto at = static_cast<int32_t>(r * g.w + offset);
          for (int64_t q = b; q < e; ++q) {
            const float v = x_row[q * sw + offset];
            const int64_t k = q - q0;
            // arg < 0: the first element seen wins even if it is -inf; a NaN always wins.
            const bool better = v > best[k] || v != v || arg[k] < 0;
            best[k] = better ? v : best[k];
            arg[k] = better ? at + static_cast<int32_t>(q * sw) : arg[k];
          }
        }
      }
      const float* dy_row = dy + p * g.q + q0;
      for (int64_t k = 0; k < span; ++k) dx[arg[k]] += dy_row[k];
    }
  }
}

// dx += dy / area over every window (padding positions receive nothing).
// kStride as in forward_plane.
template <int kStride>
void average_backward_plane(const float* dy, float* dx, const Geometry& g, float inv_area) {
  const int64_t sw = kStride > 0 ? kStride : g.sw;
  for (int64_t p = 0; p < g.p; ++p) {
    const float* dy_row = dy + p * g.q;
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t r = p * g.sh - g.ph + i;
      if (r < 0 || r >= g.h) continue;
      float* dx_row = dx + r * g.w;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t offset = j - g.pw;
        const auto [begin, end] = valid_range(offset, sw, g.w, g.q);
        for (int64_t q = begin; q < end; ++q) dx_row[q * sw + offset] += dy_row[q] * inv_area;
      }
    }
  }
}

void average_backward_plane_any_stride(const float* dy, float* dx, const Geometry& g, float inv_area) {
  if (g.sw == 1) {
    average_backward_plane<1>(dy, dx, g, inv_area);
  } else if (g.sw == 2) {
    average_backward_plane<2>(dy, dx, g, inv_area);
  } else {
    average_backward_plane<0>(dy, dx, g, inv_area);
  }
}

}  // namespace

namespace {

Geometry geometry_of(const Shape& input, const Shape& output, const Pool2d::Window& w) {
  return {.h = input[2], .w = input[3], .p = output[2], .q = output[3], .kh = w.kernel.h, .kw = w.kernel.w,
          .sh = w.stride.h, .sw = w.stride.w, .ph = w.pad.h, .pw = w.pad.w};
}

// Planes per work item: enough elements to amortise a thread hand-off.
int64_t plane_grain(const Geometry& g) { return std::max<int64_t>(1, kElementwiseGrain / (g.h * g.w)); }

}  // namespace

// Note [Average pooling by taps]: a stride-1 average pool is a depthwise
// convolution whose channels all have the same R*S weights, 1/(R*S) (padding
// counts in the divisor, as here), so its forward runs on the depthwise taps
// (Note [Depthwise convolution by taps]): planes padded once, every tap of a
// block of outputs summed in registers. The loops below spend most of their
// time starting short rows on small planes (InceptionV3's 17x17 and 8x8
// pools), at a small fraction of the memory bandwidth.
// Each output sums inv_area * x over the window where the loops sum x and
// then scale: the same value but for rounding. Backward is the depthwise
// backward-data with the same weights (Note [Depthwise backward-data as a
// forward]): each dx sums inv_area * dy over the windows that hold it.
void Pool2d::prepare_cpu(Context& ctx, const PrepareOptions& options) {
  tap_weights_.clear();
  set_workspace_bytes(0);
  max_blocks_ = false;
  argmax_ = Tensor();
  const Window w = window();
  const Shape& x = input_shapes()[0];
  const Shape& y = output_shape();
  const int threads = std::max(1, omp_get_max_threads());
  nhwc_ = input_channels_last(0);
  if (nhwc_) {
    nhwc_plan_ = {.n = x[0], .c = x[1], .h = x[2], .w = x[3], .p = y[2], .q = y[3], .kh = w.kernel.h, .kw = w.kernel.w,
                  .sh = w.stride.h, .sw = w.stride.w, .ph = w.pad.h, .pw = w.pad.w,
                  .y_channels_last = output_channels_last()};
    if (options.phase == Phase::kTraining && mode_ == Mode::kMax) {
      argmax_ = ctx.allocate(y, DType::kInt32, MemoryCategory::kLayerState);
    }
    return;
  }
  if (mode_ == Mode::kMax) {
    max_plan_ = {.planes = x[0] * x[1], .h = x[2], .w = x[3], .p = y[2], .q = y[3], .kh = w.kernel.h,
                 .kw = w.kernel.w, .sh = w.stride.h, .sw = w.stride.w, .ph = w.pad.h, .pw = w.pad.w,
                 .threads = threads};
    max_blocks_ = !w.global && max_pool_by_blocks(max_plan_) && !max_pool_2x2_inside(max_plan_);
    if (!max_blocks_) return;
    set_workspace_bytes(static_cast<size_t>(max_pool_workspace_floats(max_plan_)) * sizeof(float));
    if (options.phase == Phase::kTraining) argmax_ = ctx.allocate(y, DType::kInt32, MemoryCategory::kLayerState);
    return;
  }
  // Windows of up to 64x64 taps run as a depthwise convolution; a larger
  // one (a window near the plane's size) by the loops below, whose work
  // follows the plane, not a weight per tap.
  const int64_t area = int64_t{w.kernel.h} * w.kernel.w;
  if (w.global || w.stride != Size2(1) || area > kMaxAverageTaps) return;
  taps_ = DepthwisePlan{.n = x[0], .c = x[1], .multiplier = 1, .p = y[2],
                        .u = Unfold{x[2], x[3], y[3], w.kernel.h, w.kernel.w, 1, 1, w.pad.h, w.pad.w, 1, 1},
                        .threads = threads, .shared_weights = true};
  tap_weights_.assign(static_cast<size_t>(area), 1.0f / static_cast<float>(area));
  set_workspace_bytes(static_cast<size_t>(depthwise_workspace_floats(taps_)) * sizeof(float));
}

bool Pool2d::can_read_channels_last(int index) const {
  if (prepared_for_cuda()) return index == 0;  // any window: Note [Channels-last pooling on cuDNN]
  if (mode_ == Mode::kAverage) return index == 0 && window_.global;  // layers/pool2d/pool2d_global_nhwc.h
  return index == 0 && !window_.global && max_pool_nhwc_fits(input_shapes()[0][1]);
}

void Pool2d::forward_cpu(Context& ctx, const ForwardArgs& args) {
  const MaxPoolNhwcPlan& nhwc = nhwc_plan_;
  if (nhwc_ && mode_ == Mode::kAverage) {
    return global_average_nhwc_forward(nhwc.n, nhwc.h * nhwc.w, nhwc.c, args.inputs[0].data<float>(), args.output.data<float>());
  }
  if (nhwc_) {
    max_pool_nhwc_forward(nhwc_plan_, args.inputs[0].data<float>(), args.output.data<float>(),
                          argmax_.defined() ? argmax_.data<int32_t>() : nullptr);
    return;
  }
  if (max_blocks_) {
    max_pool_forward(max_plan_, args.inputs[0].data<float>(), args.output.data<float>(),
                     argmax_.defined() ? argmax_.data<int32_t>() : nullptr, static_cast<float*>(checked_workspace(ctx)));
    return;
  }
  if (mode_ == Mode::kMax && !window().global && max_pool_2x2_inside(max_plan_)) {
    max_pool_forward_2x2(max_plan_, args.inputs[0].data<float>(), args.output.data<float>());
    return;
  }
  if (!tap_weights_.empty()) {
    depthwise_forward(taps_, args.inputs[0].data<float>(), tap_weights_.data(), nullptr, args.output.data<float>(),
                      static_cast<float*>(checked_workspace(ctx)));
    return;
  }
  const Geometry g = geometry_of(input_shapes()[0], output_shape(), window());
  const int64_t planes = output_shape()[0] * output_shape()[1];
  const float inv_area = 1.0f / static_cast<float>(g.kh * g.kw);
  const bool max = mode_ == Mode::kMax;
  const float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  parallel_for(planes, plane_grain(g), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * g.h * g.w;
      float* yp = y + plane * g.p * g.q;
      if (g.whole_plane()) {
        const auto values = Eigen::Map<const Eigen::ArrayXf>(xp, g.h * g.w);
        *yp = max ? values.maxCoeff<Eigen::PropagateNaN>() : values.sum() * inv_area;
      } else if (max) {
        forward_plane_any_stride<true>(xp, yp, g, inv_area);
      } else {
        forward_plane_any_stride<false>(xp, yp, g, inv_area);
      }
    }
  });
}

void Pool2d::backward_cpu(Context& ctx, const BackwardArgs& args) {
  const Tensor& dx_tensor = args.input_grads[0];
  if (!dx_tensor.defined()) return;
  const MaxPoolNhwcPlan& nhwc = nhwc_plan_;
  if (nhwc_ && mode_ == Mode::kAverage) {
    return global_average_nhwc_backward(nhwc.n, nhwc.h * nhwc.w, nhwc.c, args.output_grad.data<float>(),
                                        args.input_grad_modes[0], dx_tensor.data<float>());
  }
  if (nhwc_) {
    max_pool_nhwc_backward(nhwc_plan_, argmax_.data<int32_t>(), args.output_grad.data<float>(), args.input_grad_modes[0],
                           dx_tensor.data<float>());
    return;
  }
  if (max_blocks_) {
    max_pool_backward(max_plan_, argmax_.data<int32_t>(), args.output_grad.data<float>(), args.input_grad_modes[0],
                      dx_tensor.data<float>());
    return;
  }
  if (mode_ == Mode::kMax && !window().global && max_pool_2x2_inside(max_plan_)) {
    max_pool_backward_2x2(max_plan_, args.inputs[0].data<float>(), args.output_grad.data<float>(),
                          args.input_grad_modes[0], dx_tensor.data<float>());
    return;
  }
  if (!tap_weights_.empty()) {
    depthwise_backward_data(taps_, tap_weights_.data(), args.output_grad.data<float>(), args.input_grad_modes[0],
                            dx_tensor.data<float>(), static_cast<float*>(checked_workspace(ctx)));
    return;
  }
  const Geometry g = geometry_of(input_shapes()[0], output_shape(), window());
  const int64_t planes = output_shape()[0] * output_shape()[1];
  const float inv_area = 1.0f / static_cast<float>(g.kh * g.kw);
  const bool max = mode_ == Mode::kMax;
  const GradMode mode = args.input_grad_modes[0];
  const float* x = args.inputs[0].data<float>();
  const float* dy = args.output_grad.data<float>();
  float* dx = dx_tensor.data<float>();
  parallel_for(planes, plane_grain(g), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t size = g.h * g.w;
      const float* xp = x + plane * size;
      const float* dyp = dy + plane * g.p * g.q;
      float* dxp = dx + plane * size;
      if (g.whole_plane() && !max) {
        const float share = *dyp * inv_area;
        write_or_add(mode, as_array(dxp, size), share);
        continue;
      }
      if (mode == GradMode::kWrite) std::fill(dxp, dxp + size, 0.0f);
      if (max) {
        max_backward_plane(xp, dyp, dxp, g);
      } else {
        average_backward_plane_any_stride(dyp, dxp, g, inv_area);
      }
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Pool2d)
}  // namespace glassbox
#endif
