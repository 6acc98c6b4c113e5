// layers/conv2d/conv2d_cuda.cpp: Conv2d on cuDNN.
//
// prepare_cuda fixes everything: the descriptors, made here, and one choice
// per pass (forward, backward-data, backward-filter) with the workspace it
// needs, made by layers/conv2d/conv2d_algorithms_cuda.cpp: a legacy algorithm
// (cudnnConvolutionForward and its backward calls) or a graph-API execution
// plan (layers/conv2d/conv_graph_cuda.h). Forward and backward then only call
// cuDNN with those choices.
//
// The data (x, y, their gradients, the weights and bias in use) are float32,
// or bfloat16 or float16 in a mixed-precision graph (value_storage(), Note
// [16-bit values in a layer] in layers/layer.h): the descriptors take that
// type, and the convolution's compute type is float either way, so 16-bit
// data accumulate in fp32. The parameter gradients stay float32 (Note [16-bit
// parameter gradients]).
//
// Values stored channels-last (Note [Channels-last values], graph/layouts.h):
// the layer computes in its output's layout, x and y described so and the
// filter KRSC (Note [KRSC filters], conv2d.h); an input stored in the other
// layout (the network's NCHW images) is converted in the workspace, and its
// gradient converted back (Note [Layout bridges], layers/layer_cuda.h). The
// bias descriptor of the fused call (1, K, 1, 1) has channel stride 1, which
// broadcasts the same over either order of y; a bias added after the
// convolution is Glassbox's kernel, planned for y's layout (Note [A bias add
// by Glassbox's kernel], layers/bias_add_plan.h).
//
// Note [16-bit parameter gradients]: the optimizer reads fp32 parameter
// gradients, but cuDNN's backward-filter writes dW in the type of the filter
// descriptor, which must be the data's type (x, dy and dW share one type in
// every configuration cuDNN documents). So with 16-bit data the layer holds a
// 16-bit scratch the size of its weights (allocated at a training prepare,
// MemoryCategory::kGradients), has cuDNN write dW there (beta = 0: rounded
// once from cuDNN's fp32 sums), and adds it, widened, into the fp32 gradient
// (accumulate_widened). This is what PyTorch's autocast does: the 16-bit
// working copy's gradient, cast back and accumulated into the fp32
// parameter's .grad. Linear does the same with cuBLAS
// (layers/linear/linear_cuda.cpp). db needs no scratch: cuBLAS sums it in
// fp32 straight into its gradient (Note [A bias gradient on cuBLAS],
// layers/bias_gradient_plan.h).
#include <algorithm>

#include "layers/bias_gradient_cuda.h"
#include "layers/conv2d/conv2d.h"
#include "layers/conv2d/conv2d_algorithms_cuda.h"
#include "layers/layer_cuda.h"
#include "layers/relu_kernels_cuda.h"
#include "tensor/convert.h"

namespace glassbox {
namespace {

using conv2d_cuda::Pass;
using conv2d_cuda::index_of;

struct ConvState final : BackendState {
  TensorDescriptor x, y, bias;  // x and y in the computed layout; bias: (1, K, 1, 1), broadcast over N, H, W
  FilterDescriptor w;
  // x stored in the other layout than y (Note [Layout bridges]): converted
  // into the workspace after cuDNN's share, at bridge_offset.
  LayoutBridge bridge;
  size_t bridge_offset = 0;
  // Note [A ReLU fused into its producer]: y = max(0, conv(x) + b) in one
  // call (cudnnConvolutionBiasActivationForward); unset where not fused.
  ActivationDescriptor relu;
  // Note [When cuDNN refuses the fused call] (conv2d_algorithms_cuda.h): the
  // forward runs the plain call, then the bias add with the ReLU.
  bool relu_apart = false;
  // Where the bias is added after the convolution: y as the kernel reads it
  // (Note [A bias add by Glassbox's kernel], layers/bias_add_plan.h).
  BiasAddPlan bias_add;
  std::array<conv2d_cuda::PassChoice, 3> passes;  // per pass, see Note [Math type per pass]
  std::string summary;
  // 16-bit data in training: dW (K, C/G, R, S) in the data's type, before it
  // is added into the fp32 gradient (Note [16-bit parameter gradients]).
  // Undefined otherwise.
  Tensor weight_grad;
  // In training with a bias: db, summed from dy into the fp32 gradient (Note
  // [A bias gradient on cuBLAS], layers/bias_gradient_plan.h).
  BiasGradient bias_gradient;
  std::string algorithms() const override { return summary; }

  const conv2d_cuda::PassChoice& pass(Pass p) const { return passes[index_of(p)]; }
  void* workspace_for(void* workspace, Pass p) const { return pass(p).workspace > 0 ? workspace : nullptr; }
  void* bridged_x(void* workspace) const { return static_cast<char*>(workspace) + bridge_offset; }
};

}  // namespace

void Conv2d::prepare_cuda(Context& ctx, const PrepareOptions& options) {
  for (auto& list : candidates_) list.clear();
  const Options& o = options_;
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  const int cg = static_cast<int>(xs[1] / o.groups);
  const Shape ws{o.out_channels, cg, o.kernel.h, o.kernel.w};
  const DType data = value_storage();
  const bool narrow = data != DType::kFloat32;
  // The convolution computes in its output's layout, its filter in the same
  // order (Note [KRSC filters]); an input stored otherwise is converted.
  const Layout computed = output_layout();
  filter_layout_ = computed;
  auto state = std::make_unique<ConvState>();
  state->x = make_tensor_descriptor(xs, data, computed);
  state->y = make_tensor_descriptor(ys, data, computed);
  state->bias = make_tensor_descriptor(Shape{1, o.out_channels}, data);
  if (o.bias) {
    state->bias_add =
        plan_bias_add(ys[0], ys[1], ys[2] * ys[3], computed, static_cast<int64_t>(size_of(data)));
  }
  state->bridge = LayoutBridge(xs, data, input_layout(0), computed);
  state->w = make_descriptor<FilterDescriptor>(cudnnCreateFilterDescriptor);
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(state->w.get(), cudnn_data_type(data),
                                         computed == Layout::kNHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                         o.out_channels, cg, o.kernel.h, o.kernel.w));
  // kFp32 is the reference: FMA kernels only. kTf32: cuDNN's default math,
  // which lets float convolutions use TF32 tensor cores (Ampere and later).
  // 16-bit data: tensor-op math, so tensor-core kernels may run (Note [Math type per pass]).
  const bool tf32 = ctx.precision() == Precision::kTf32;
  const cudnnMathType_t base_math = narrow ? CUDNN_TENSOR_OP_MATH : tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  auto make_conv = [o](cudnnMathType_t math) {  // compute type float: fp32 accumulation for 16-bit data too
    auto conv = make_descriptor<ConvolutionDescriptor>(cudnnCreateConvolutionDescriptor);
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv.get(), o.pad.h, o.pad.w, o.stride.h, o.stride.w,
                                                o.dilation.h, o.dilation.w, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv.get(), o.groups));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv.get(), math));
    return conv;
  };
  const conv2d_cuda::ConvDescriptors d{cudnn_of(ctx), state->x.get(), state->y.get(), state->w.get()};

  // cuDNN sizes the output itself; it must agree with infer(), or forward
  // would write past the tensor the graph planned.
  int dims[4] = {};
  const ConvolutionDescriptor conv = make_conv(base_math);
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv.get(), d.x, d.w, &dims[0], &dims[1], &dims[2], &dims[3]));
  if (Shape{dims[0], dims[1], dims[2], dims[3]} != ys) {
    fail(cat("cuDNN computes output shape (", dims[0], ", ", dims[1], ", ", dims[2], ", ", dims[3],
             "), shape inference ", ys.str()));
  }

  // Before the search, which fits the workspace into the memory left.
  if (narrow && options.phase == Phase::kTraining) {
    state->weight_grad = allocate_narrow_param_grads(ctx, ws, 0, data).weight;
  }
  if (o.bias && options.phase == Phase::kTraining) {
    state->bias_gradient = BiasGradient(ctx, ys[0], ys[1], ys[2] * ys[3], computed, data);
  }

  if (fused_relu()) state->relu = make_relu_descriptor();
  const conv2d_cuda::SearchInput search{
      .layer = name(),
      .descriptors = d,
      .x = xs,
      .w = ws,
      .y = ys,
      .data = data,
      .pins = {pins_.forward, pins_.backward_data, pins_.backward_filter},
      .make_convolution = make_conv,
      .tf32 = tf32,
      .base_math = base_math,
      .problem = {.data = std::string(name_of(data)),
                  .layout = computed == Layout::kNHWC ? "NHWC" : "NCHW",
                  .x = xs.dims(),
                  .w = ws.dims(),
                  .y = ys.dims(),
                  .pad_h = o.pad.h,
                  .pad_w = o.pad.w,
                  .stride_h = o.stride.h,
                  .stride_w = o.stride.w,
                  .dilation_h = o.dilation.h,
                  .dilation_w = o.dilation.w,
                  .groups = o.groups},
      .filter_beta = narrow ? 0.0f : 1.0f,
      .data_adds = !state->bridge.needed(),
      .fused_bias = fused_relu() ? state->bias.get() : nullptr,
      .fused_relu = state->relu.get(),
  };
  conv2d_cuda::AlgorithmChoice choice = conv2d_cuda::choose_algorithms(ctx, options, search, candidates_);
  state->passes = std::move(choice.passes);
  state->summary = std::move(choice.summary);
  // The bias gradient's partial sums follow the filter gradient: they share
  // cuDNN's part of the workspace.
  size_t workspace = state->bias_gradient.workspace_bytes();
  for (const conv2d_cuda::PassChoice& p : state->passes) workspace = std::max(workspace, p.workspace);
  if (state->bias_gradient.planned()) state->summary += cat("; bias gradient: ", state->bias_gradient.describe());
  if (fused_relu() && choice.fused_call_refused.empty()) {
    state->summary += "; ReLU fused (cudnnConvolutionBiasActivationForward)";
  } else if (fused_relu()) {
    state->relu_apart = true;
    state->summary += cat("; ReLU fused into the layer, but cudnnConvolutionBiasActivationForward runs no candidate "
                          "(", choice.fused_call_refused, "): the bias add and the ReLU run as one more pass");
  }
  state->bridge_offset = aligned_share(workspace);
  set_workspace_bytes(state->bridge_offset + state->bridge.bytes());
  backend_ = std::move(state);
}

void Conv2d::forward_cuda(Context& ctx, const ForwardArgs& args) {
  void* workspace = checked_workspace(ctx);
  const auto& s = state_as<ConvState>(backend_);
  const cudnnHandle_t handle = cudnn_of(ctx);
  const conv2d_cuda::PassChoice& f = s.pass(Pass::kForward);
  const void* x = args.inputs[0].raw();
  if (s.bridge.needed()) {
    s.bridge.to_computed(ctx, x, s.bridged_x(workspace));
    x = s.bridged_x(workspace);
  }
  if (s.relu && !s.relu_apart) {
    // Note [Fused convolution, bias and ReLU on cuDNN]: y = relu(1 * conv(x)
    // + 0 * z + b), z being y itself (alpha2 = 0 ignores it); the bias in the
    // data's type, as cuDNN's configurations of this call have it.
    CUDNN_CHECK(cudnnConvolutionBiasActivationForward(
        handle, &kOne, s.x.get(), x, s.w.get(), args.params[0].raw(), f.convolution.get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(f.algo), s.workspace_for(workspace, Pass::kForward), f.workspace,
        &kZero, s.y.get(), args.output.raw(), s.bias.get(), args.params[1].raw(), s.relu.get(), s.y.get(),
        args.output.raw()));
    return;
  }
  if (f.plan) {
    CUDNN_CHECK(f.plan->execute(handle, name(), x, args.params[0].raw(), args.output.raw(),
                                s.workspace_for(workspace, Pass::kForward)));
  } else {
    CUDNN_CHECK(cudnnConvolutionForward(handle, &kOne, s.x.get(), x, s.w.get(), args.params[0].raw(),
                                        f.convolution.get(), static_cast<cudnnConvolutionFwdAlgo_t>(f.algo),
                                        s.workspace_for(workspace, Pass::kForward), f.workspace, &kZero,
                                        s.y.get(), args.output.raw()));
  }
  if (options_.bias) {
    // Note [A bias add by Glassbox's kernel]: with the ReLU in the same pass
    // where cuDNN refused the fused call.
    launch_bias_add(args.output.raw(), args.params[1].raw(), s.bias_add, value_storage(), static_cast<bool>(s.relu),
                    stream_of(ctx));
  } else if (s.relu) {  // in place: cuDNN's activation allows y to be x
    CUDNN_CHECK(cudnnActivationForward(handle, s.relu.get(), &kOne, s.y.get(), args.output.raw(), &kZero, s.y.get(),
                                       args.output.raw()));
  }
}

void Conv2d::backward_cuda(Context& ctx, const BackwardArgs& args) {
  void* workspace = checked_workspace(ctx);
  const auto& s = state_as<ConvState>(backend_);
  const cudnnHandle_t handle = cudnn_of(ctx);
  if (args.input_grads[0].defined()) {
    // With a bridge, dx is computed in the workspace and converted (written
    // or added) into the stored layout.
    const bool bridged = s.bridge.needed();
    const conv2d_cuda::PassChoice& data = s.pass(Pass::kBackwardData);
    const bool adds = !bridged && args.input_grad_modes[0] == GradMode::kAdd;
    void* dx = bridged ? s.bridged_x(workspace) : args.input_grads[0].raw();
    if (data.plan) {  // the plan that writes dx, or its twin that adds into it
      CUDNN_CHECK((adds ? data.plan_adding : data.plan)
                      ->execute(handle, name(), dx, args.params[0].raw(), args.output_grad.raw(),
                                s.workspace_for(workspace, Pass::kBackwardData)));
    } else {
      CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &kOne, s.w.get(), args.params[0].raw(), s.y.get(),
                                               args.output_grad.raw(), data.convolution.get(),
                                               static_cast<cudnnConvolutionBwdDataAlgo_t>(data.algo),
                                               s.workspace_for(workspace, Pass::kBackwardData), data.workspace,
                                               adds ? &kOne : &kZero, s.x.get(), dx));
    }
    if (bridged) {
      s.bridge.to_stored(ctx, s.bridged_x(workspace), args.input_grads[0].raw(), beta_for(args.input_grad_modes[0]));
    }
  }
  const void* x = args.inputs[0].raw();
  if (s.bridge.needed()) {  // after dx: the two share the workspace
    s.bridge.to_computed(ctx, x, s.bridged_x(workspace));
    x = s.bridged_x(workspace);
  }
  // glassbox::Pass: the step's passes (tensor/pass.h), not Conv2d::Pass, the cuDNN call.
  ctx.switch_pass(glassbox::Pass::kBackwardWeights);
  // fp32 data: dW and db add into the gradients. 16-bit data: they are written
  // into the 16-bit scratch, then added widened (Note [16-bit parameter gradients]).
  const bool narrow = value_storage() != DType::kFloat32;
  const float* beta = narrow ? &kZero : &kOne;
  const Tensor& dw = narrow ? s.weight_grad : args.param_grads[0];
  const conv2d_cuda::PassChoice& filter = s.pass(Pass::kBackwardFilter);
  if (filter.plan) {  // built with this beta (SearchInput::filter_beta)
    CUDNN_CHECK(filter.plan->execute(handle, name(), x, dw.raw(), args.output_grad.raw(),
                                     s.workspace_for(workspace, Pass::kBackwardFilter)));
  } else {
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &kOne, s.x.get(), x, s.y.get(), args.output_grad.raw(),
                                               filter.convolution.get(),
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(filter.algo),
                                               s.workspace_for(workspace, Pass::kBackwardFilter), filter.workspace,
                                               beta, s.w.get(), dw.raw()));
  }
  if (narrow) accumulate_widened(ctx, s.weight_grad, args.param_grads[0]);
  if (options_.bias) s.bias_gradient.run(ctx, args.output_grad.raw(), args.param_grads[1].data<float>(), workspace);
}

}  // namespace glassbox
