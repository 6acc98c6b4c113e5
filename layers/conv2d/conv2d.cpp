// layers/conv2d/conv2d.cpp: shapes, options, and the CPU path's choice and dispatch.
// The paths themselves: layers/conv2d/conv2d_im2col.cpp (Glassbox's tiled im2col +
// GEMM), layers/conv2d/conv2d_depthwise.cpp (stride-1 depthwise, Note [Depthwise
// convolution by taps]) and layers/conv2d/conv2d_onednn.cpp (oneDNN's primitives).
#include "layers/conv2d/conv2d.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "layers/conv2d/conv2d_depthwise.h"
#include "layers/conv2d/filter_gradient_nhwc.h"
#include "layers/conv2d/winograd_nhwc.h"
#include "layers/relu.h"
#include "tensor/eigen_maps.h"
#include "tensor/float_lanes.h"
#include "tensor/parallel_for.h"

#if GLASSBOX_WITH_ONEDNN
#include "layers/conv2d/conv2d_onednn.h"
#endif

namespace glassbox {
// ---- Options and shapes ------------------------------------------------------------------

Conv2d::Conv2d(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  check_options();
}

void Conv2d::check_options() const {
  const Options& o = options_;
  auto dims = [](Size2 v) { return cat(v.h, "x", v.w); };
  if (o.out_channels <= 0) fail_option(cat("out_channels must be positive, got ", o.out_channels));
  if (o.groups <= 0) fail_option(cat("groups must be positive, got ", o.groups));
  if (o.kernel.h <= 0 || o.kernel.w <= 0) fail_option(cat("kernel must be positive, got ", dims(o.kernel)));
  if (o.stride.h <= 0 || o.stride.w <= 0) fail_option(cat("stride must be positive, got ", dims(o.stride)));
  if (o.dilation.h <= 0 || o.dilation.w <= 0) {
    fail_option(cat("dilation must be positive, got ", dims(o.dilation)));
  }
  if (o.pad.h < 0 || o.pad.w < 0) fail_option(cat("pad must not be negative, got ", dims(o.pad)));
  if (o.out_channels % o.groups != 0) {
    fail_option(cat("out_channels ", o.out_channels, " is not divisible by groups ", o.groups));
  }
}

std::string Conv2d::describe() const {
  const Options& o = options_;
  std::string text = cat(o.kernel.h, "x", o.kernel.w, " s", o.stride.str(), " p", o.pad.str());
  if (o.dilation != Size2(1)) text += cat(" d", o.dilation.str());
  if (o.groups != 1) text += cat(" g", o.groups);
  const std::string in = bound() ? cat(input_shapes()[0][1]) : "?";
  text += cat(", ", in, " -> ", o.out_channels);
  if (!o.bias) text += ", no bias";
  return text;
}

Shape Conv2d::infer(std::span<const Shape> inputs) const {
  check_options();
  expect_rank(inputs, 0, 4, "(N, C, H, W)");
  const Shape& x = inputs[0];
  const Options& o = options_;
  if (x[1] % o.groups != 0) {
    fail(cat("input has ", x[1], " channels, not divisible by groups ", o.groups));
  }
  const int64_t extent_h = int64_t{o.dilation.h} * (o.kernel.h - 1) + 1;
  const int64_t extent_w = int64_t{o.dilation.w} * (o.kernel.w - 1) + 1;
  const int64_t padded_h = x[2] + 2 * int64_t{o.pad.h}, padded_w = x[3] + 2 * int64_t{o.pad.w};
  if (extent_h > padded_h || extent_w > padded_w) {
    const std::string dilated =
        o.dilation == Size2(1) ? "" : cat(" (dilated to ", extent_h, "x", extent_w, ")");
    fail(cat("kernel ", o.kernel.h, "x", o.kernel.w, dilated, " does not fit the padded input ",
             padded_h, "x", padded_w, " (input ", x[2], "x", x[3], ", pad ", o.pad.str(), ")"));
  }
  return Shape{x[0], o.out_channels, (padded_h - extent_h) / o.stride.h + 1,
               (padded_w - extent_w) / o.stride.w + 1};
}

std::vector<ParamSpec> Conv2d::param_specs() const {
  const Options& o = options_;
  const int64_t cg = input_shapes().at(0)[1] / o.groups;
  const int64_t fan_in = cg * o.kernel.h * o.kernel.w;
  std::vector<ParamSpec> specs = {
      {"weight", Shape{o.out_channels, cg, o.kernel.h, o.kernel.w}, Init::kHeNormal, fan_in, 0.0f, filter_layout_}};
  if (o.bias) specs.push_back({"bias", Shape{o.out_channels}, Init::kZeros, fan_in});
  return specs;
}

int64_t Conv2d::macs() const {
  const Shape& x = input_shapes().at(0);
  const Shape& y = output_shape();
  // The output and the weight are shapes, checked to fit; the product of their
  // sizes need not (padding can make a huge output from a small input).
  const char* what = "multiply-accumulates";
  const int64_t window = checked_multiply(options_.kernel.h, options_.kernel.w, what);
  return checked_multiply(y.numel(), checked_multiply(x[1] / options_.groups, window, what), what);
}

// ---- CPU ---------------------------------------------------------------------------------

void Conv2d::prepare_cpu(Context&, const PrepareOptions& prepare_options) {
  for (auto& list : candidates_) list.clear();
  filter_layout_ = Layout::kNCHW;
  const Shape& x = input_shapes()[0];
  const Shape& y = output_shape();
  const Options& o = options_;
  CpuPlan& pl = plan_;
  pl = CpuPlan{};
  pl.n = x[0], pl.c = x[1], pl.h = x[2], pl.w = x[3];
  pl.k = y[1], pl.p = y[2], pl.q = y[3];
  pl.groups = o.groups, pl.cg = pl.c / o.groups, pl.kg = pl.k / o.groups;
  pl.r = o.kernel.h, pl.s = o.kernel.w;
  pl.crs = pl.cg * pl.r * pl.s;
  pl.pointwise = o.kernel == Size2(1) && o.stride == Size2(1) && o.pad == Size2(0);
  pl.threads = std::max(1, omp_get_max_threads());
  // Depthwise at stride 1 goes direct; one input channel (groups 1) is a real
  // GEMM, and strided depthwise layers measured faster as GEMMs (conv2d_depthwise.cpp).
  const bool direct_depthwise = pl.groups > 1 && pl.cg == 1 && o.stride == Size2(1);
  const CpuPath asked = cpu_pin_ != CpuPath::kAuto ? cpu_pin_ : prepare_options.cpu_conv;
  if (asked == CpuPath::kOneDnn && !GLASSBOX_WITH_ONEDNN) {
    fail_option("asked for oneDNN's CPU path, but Glassbox was built without oneDNN (-DGLASSBOX_CPU_CONV=im2col); "
                "configure with -DGLASSBOX_CPU_CONV=oneDNN (apt-get install libdnnl-dev)");
  }
  const bool kernel_above_1x1 = o.kernel != Size2(1);
  const bool auto_onednn = GLASSBOX_WITH_ONEDNN && asked == CpuPath::kAuto && !direct_depthwise;
  pl.strided_1x1_nhwc_offered = auto_onednn && strided_1x1_nhwc_shape();
  const bool channels_last = input_channels_last(0) || output_channels_last();
  if (pl.strided_1x1_nhwc_offered && input_channels_last(0) && output_channels_last()) {
    plan_strided_1x1_nhwc();  // Note [1x1 convolutions on NHWC values]
    return;
  }
  // Other 1x1 layers with an NHWC value: all of their passes on oneDNN.
  const bool want_onednn = GLASSBOX_WITH_ONEDNN && (asked == CpuPath::kOneDnn ||
                                                    (auto_onednn && (kernel_above_1x1 || channels_last)));
  if (want_onednn && prepare_onednn(prepare_options, asked, /*pointwise_forward=*/false)) return;
  if (channels_last) {  // the graph asks only after an NCHW prepare said this layer could
    fail_option("channels-last values need oneDNN's convolution, which this layer no longer takes");
  }
  pl.path = pl.backward_path = CpuPath::kGlassbox;
  pl.depthwise = direct_depthwise;
  if (pl.depthwise) {
    set_workspace_bytes(static_cast<size_t>(depthwise_workspace_floats(depthwise_plan())) * sizeof(float));
    backend_ = std::make_unique<NamedCpuPath>("Glassbox depthwise taps");
    return;
  }
  plan_im2col();
  std::string name = pl.pointwise ? "Glassbox 1x1 GEMM" : "Glassbox im2col + GEMM";
  if (want_onednn) name += " (oneDNN offered only its reference code)";
  // Note [Pointwise forward on oneDNN's GEMM]
  if (auto_onednn && pl.pointwise) {
    const size_t glassbox_bytes = workspace_bytes();
    if (prepare_onednn(prepare_options, asked, /*pointwise_forward=*/true)) {
      set_workspace_bytes(std::max(glassbox_bytes, workspace_bytes()));  // the backward's tiles too
      return;
    }
  }
  backend_ = std::make_unique<NamedCpuPath>(std::move(name));
}

// Note [Pointwise forward on oneDNN's GEMM]: a pointwise layer's forward is
// one product per image, y_n (K x H*W) = W (K x C) x_n (C x H*W), on NCHW as it
// is. oneDNN, given Glassbox's own layouts, runs it on its GEMM (x64:gemm:jit)
// with no reorders, and is faster than Glassbox's tiles on OpenBLAS for the
// forward (about a tenth off ResNet-50's 1x1 forward passes), but not for the
// backward (weights slower, data even). So the forward runs there and the
// backward stays on Glassbox's 1x1 GEMM: the passes share nothing but the
// tensors, and each is tested against the reference alone.

#if GLASSBOX_WITH_ONEDNN
bool Conv2d::prepare_onednn(const PrepareOptions& options, CpuPath asked, bool pointwise_forward) {
  OneDnnConv::Plan plan{.phase = options.phase,
                        .plain_layouts = pointwise_forward,
                        .winograd = options.cpu_winograd,
                        .relu = fused_relu()};
  if (pointwise_forward) plan.backward_elsewhere = "Glassbox 1x1 GEMM";
  plan.x_channels_last = input_channels_last(0);
  plan.y_channels_last = output_channels_last();
  auto onednn = std::make_unique<OneDnnConv>(name(), options_, input_shapes()[0], output_shape(), plan);
  // Asked for by name, oneDNN's reference code is taken too (tests); kAuto does
  // not take it (Note [oneDNN's reference code]).
  if (asked == CpuPath::kAuto && onednn->uses_reference_code()) return false;
  plan_.path = CpuPath::kOneDnn;
  plan_.backward_path = pointwise_forward ? CpuPath::kGlassbox : CpuPath::kOneDnn;
  plan_.onednn_layouts = !pointwise_forward;
  size_t workspace = onednn->workspace_bytes();
  if (onednn->filter_on_nhwc_gemm()) {  // Note [Weight gradients on NHWC values by GEMM]
    workspace = std::max(workspace, nhwc_filter_workspace_floats(nhwc_filter_shape()) * sizeof(float));
  }
  if (onednn->forward_on_nhwc_winograd()) {  // Note [Winograd F(4x4, 3x3) on NHWC values]
    workspace = std::max(workspace, winograd_workspace_floats(winograd_shape()) * sizeof(float));
  }
  if (output_channels_last() && options_.bias) {  // Note [Bias gradient of NHWC outputs]
    workspace = std::max(workspace, static_cast<size_t>(plan_.threads * plan_.k) * sizeof(float));
  }
  set_workspace_bytes(workspace);
  backend_ = std::move(onednn);
  return true;
}
#else
bool Conv2d::prepare_onednn(const PrepareOptions&, CpuPath, bool) { return false; }
#endif

// Note [oneDNN's reference code]: for shapes its optimised kernels do not
// cover, oneDNN falls back to plain loops ("ref:any"), which the probe
// (bench/probes/onednn_conv.cpp) measured hundreds of times slower than its
// jit kernels. Where that is all it offers, kAuto takes Glassbox's own path
// and says so in algorithms().

NhwcFilterShape Conv2d::nhwc_filter_shape() const {
  const CpuPlan& pl = plan_;
  const Options& o = options_;
  return {.n = pl.n, .c = pl.c, .k = pl.k, .p = pl.p,
          .u = {pl.h, pl.w, pl.q, pl.r, pl.s, o.stride.h, o.stride.w, o.pad.h, o.pad.w, o.dilation.h, o.dilation.w}};
}

WinogradShape Conv2d::winograd_shape() const {
  const CpuPlan& pl = plan_;
  return {.n = pl.n, .h = pl.h, .w = pl.w, .c = pl.c, .k = pl.k, .p = pl.p, .q = pl.q,
          .pad_h = options_.pad.h, .pad_w = options_.pad.w};
}

float* Conv2d::cpu_workspace(const Context& ctx) const { return static_cast<float*>(checked_workspace(ctx)); }

void Conv2d::forward_cpu(Context& ctx, const ForwardArgs& args) {
  float* workspace = cpu_workspace(ctx);
  const float* x = args.inputs[0].data<float>();
  const float* w = args.params[0].data<float>();
  const float* b = options_.bias ? args.params[1].data<float>() : nullptr;
  float* y = args.output.data<float>();
#if GLASSBOX_WITH_ONEDNN
  if (plan_.path == CpuPath::kOneDnn) {
    auto& onednn = static_cast<OneDnnConv&>(*backend_);
    if (!onednn.forward_on_nhwc_winograd()) {
      onednn.forward(x, w, b, y, workspace);  // applies a fused ReLU itself
      return;
    }
    winograd_forward_nhwc(winograd_shape(), x, w, b, y, workspace);
    if (fused_relu()) relu_in_place_cpu(y, args.output.numel());
    return;
  }
#endif
  if (plan_.depthwise) {
    depthwise_forward(depthwise_plan(), x, w, b, y, workspace);
  } else if (plan_.strided_1x1_nhwc) {
    forward_strided_1x1_nhwc(args, workspace);
  } else {
    forward_im2col(args, workspace);
  }
  // Note [A ReLU fused into its producer]: Glassbox's own paths apply it in
  // one pass after them.
  if (fused_relu()) relu_in_place_cpu(y, args.output.numel());
}

void Conv2d::backward_cpu(Context& ctx, const BackwardArgs& args) {
  float* workspace = cpu_workspace(ctx);
  const float* x = args.inputs[0].data<float>();
  const float* w = args.params[0].data<float>();
  const float* dy = args.output_grad.data<float>();
  const bool wants_dx = args.input_grads[0].defined();
  // ctx.switch_pass names the step's passes (tensor/pass.h), not Conv2d::Pass.
  const GradMode dw_mode = args.param_grad_mode;
  float* dw = args.param_grads[0].data<float>();
  // Glassbox's own passes add into dW: to write it, they start from zeros.
  auto zero_dw_to_write = [&] {
    if (dw_mode == GradMode::kWrite) std::fill_n(dw, args.param_grads[0].numel(), 0.0f);
  };
  if (plan_.backward_path == CpuPath::kOneDnn) {
#if GLASSBOX_WITH_ONEDNN
    auto& onednn = static_cast<OneDnnConv&>(*backend_);
    if (wants_dx && onednn.data_on_nhwc_winograd()) {  // Note [Winograd F(4x4, 3x3) on NHWC values]
      winograd_backward_data_nhwc(winograd_shape(), w, dy, args.input_grads[0].data<float>(),
                                  args.input_grad_modes[0] == GradMode::kAdd, workspace);
    } else if (wants_dx) {
      onednn.backward_data(w, dy, args.input_grads[0].data<float>(), args.input_grad_modes[0], workspace);
    }
    ctx.switch_pass(glassbox::Pass::kBackwardWeights);
    if (onednn.filter_on_nhwc_winograd()) {  // Note [Winograd F(4x4, 3x3) on NHWC values]
      winograd_filter_gradient_nhwc(winograd_shape(), x, dy, dw, dw_mode == GradMode::kAdd, workspace);
    } else if (onednn.filter_on_nhwc_gemm()) {
      nhwc_filter_gradient(nhwc_filter_shape(), x, dy, dw, dw_mode, workspace);
    } else {
      onednn.backward_filter(x, dy, dw, dw_mode, workspace);
    }
#endif
  } else if (plan_.depthwise) {
    if (wants_dx) {
      depthwise_backward_data(depthwise_plan(), w, dy, args.input_grad_modes[0], args.input_grads[0].data<float>(),
                              workspace);
    }
    ctx.switch_pass(glassbox::Pass::kBackwardWeights);
    zero_dw_to_write();
    depthwise_backward_filter(depthwise_plan(), x, dy, dw, workspace);
  } else if (plan_.strided_1x1_nhwc) {  // writes or adds dW itself
    if (wants_dx) backward_data_strided_1x1_nhwc(args, workspace);
    ctx.switch_pass(glassbox::Pass::kBackwardWeights);
    backward_filter_strided_1x1_nhwc(args, workspace);
  } else {
    if (wants_dx) backward_data_im2col(args, workspace);
    ctx.switch_pass(glassbox::Pass::kBackwardWeights);
    zero_dw_to_write();
    backward_filter_im2col(args, workspace);
  }
  if (options_.bias) bias_gradient(dy, args.param_grads[1].data<float>(), dw_mode, workspace);
}

namespace {

// sums[k] = the sum over `rows` rows of m[row * k_count + k]: kFloatLanes channels
// a vector, up to 8 vectors of sums held in registers while the rows stream by.
void sum_rows(const float* m, int64_t rows, int64_t k_count, float* sums) {
  constexpr int64_t kVectors = 8;
  int64_t c0 = 0;
  while (k_count - c0 >= kFloatLanes) {
    const int64_t vectors = std::min(kVectors, (k_count - c0) / kFloatLanes);
    FloatLanes acc[kVectors] = {};
    for (int64_t row = 0; row < rows; ++row) {
      const float* from = m + row * k_count + c0;
      for (int64_t v = 0; v < kVectors; ++v) {
        if (v < vectors) acc[v] += load_lanes(from + v * kFloatLanes);
      }
    }
    for (int64_t v = 0; v < vectors; ++v) std::memcpy(sums + c0 + v * kFloatLanes, &acc[v], sizeof acc[v]);
    c0 += vectors * kFloatLanes;
  }
  for (int64_t k = c0; k < k_count; ++k) {  // channels past the last whole vector
    float sum = 0.0f;
    for (int64_t row = 0; row < rows; ++row) sum += m[row * k_count + k];
    sums[k] = sum;
  }
}

}  // namespace

// db += the sum of dy over the images and pixels, per output channel.
// Note [Bias gradient of NHWC outputs]: dy is (N*P*Q) x K there. Reduced
// channel by channel it is read once per channel, which triples VGG16's
// conv1_1 backward-weights. Row by row into sums in memory, each row waits on
// the last, and Eigen's colwise().sum() (as Linear's bias takes it) is slower
// still; sums held in registers run as fast as the NCHW planes'
// (bench/probes/nhwc_bias_sum.cpp). So each thread sums a share of the rows in
// registers, and the shares are added in their order: the same bits for a
// given thread count.
void Conv2d::bias_gradient(const float* dy, float* db, GradMode mode, float* workspace) const {
  if (mode == GradMode::kWrite) std::fill_n(db, plan_.k, 0.0f);  // K floats: the sums below add
  const CpuPlan& pl = plan_;
  const int64_t pq = pl.p * pl.q;
  if (output_channels_last()) {
    const int64_t pixels = pl.n * pq, block = (pixels + pl.threads - 1) / pl.threads;
    for_each_block(pixels, block, [&](int64_t begin, int64_t end) {
      sum_rows(dy + begin * pl.k, end - begin, pl.k, workspace + begin / block * pl.k);
    });
    for (int64_t share = 0; share * block < pixels; ++share) as_array(db, pl.k) += as_array(workspace + share * pl.k, pl.k);
    return;
  }
  parallel_for(pl.k, std::max<int64_t>(1, kElementwiseGrain / (pl.n * pq)), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      float sum = 0.0f;
      for (int64_t n = 0; n < pl.n; ++n) {
        sum += Eigen::Map<const Eigen::ArrayXf>(dy + (n * pl.k + k) * pq, pq).sum();
      }
      db[k] += sum;
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Conv2d)
}  // namespace glassbox
#endif
