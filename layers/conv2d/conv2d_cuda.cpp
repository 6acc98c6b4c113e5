// layers/conv2d/conv2d_cuda.cpp: Conv2d with cuDNN's (legacy) convolution API.
//
// prepare_cuda fixes everything: the descriptors, made here, and one algorithm
// per pass (forward, backward-data, backward-filter) with the workspace it
// needs, chosen by layers/conv2d/conv2d_algorithms_cuda.cpp. Forward and backward
// then only call cuDNN with those choices.
#include <algorithm>

#include "layers/conv2d/conv2d.h"
#include "layers/conv2d/conv2d_algorithms_cuda.h"
#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

using conv2d_cuda::Pass;
using conv2d_cuda::index_of;

struct ConvState final : BackendState {
  TensorDescriptor x, y, bias;  // bias: (1, K, 1, 1), broadcast over N, H, W
  FilterDescriptor w;
  std::array<conv2d_cuda::PassChoice, 3> passes;  // per pass, see Note [Math type per pass]
  std::string summary;
  std::string algorithms() const override { return summary; }

  const conv2d_cuda::PassChoice& pass(Pass p) const { return passes[index_of(p)]; }
  void* workspace_for(void* workspace, Pass p) const { return pass(p).workspace > 0 ? workspace : nullptr; }
};

}  // namespace

void Conv2d::prepare_cuda(Context& ctx, const PrepareOptions& options) {
  for (auto& list : candidates_) list.clear();
  const Options& o = options_;
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  const int cg = static_cast<int>(xs[1] / o.groups);
  auto state = std::make_unique<ConvState>();
  state->x = make_tensor_descriptor(xs);
  state->y = make_tensor_descriptor(ys);
  state->bias = make_tensor_descriptor(Shape{1, o.out_channels});
  state->w = make_descriptor<FilterDescriptor>(cudnnCreateFilterDescriptor);
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(state->w.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, o.out_channels, cg,
                                         o.kernel.h, o.kernel.w));
  // kFp32 is the reference: FMA kernels only. kTf32: cuDNN's default math,
  // which lets float convolutions use TF32 tensor cores (Ampere and later).
  const bool tf32 = ctx.precision() == Precision::kTf32;
  const cudnnMathType_t base_math = tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  auto make_conv = [o](cudnnMathType_t math) {
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

  const conv2d_cuda::SearchInput search{
      .layer = name(),
      .descriptors = d,
      .x = xs,
      .w = Shape{o.out_channels, cg, o.kernel.h, o.kernel.w},
      .y = ys,
      .pins = {pins_.forward, pins_.backward_data, pins_.backward_filter},
      .make_convolution = make_conv,
      .tf32 = tf32,
      .base_math = base_math,
  };
  conv2d_cuda::AlgorithmChoice choice = conv2d_cuda::choose_algorithms(ctx, options, search, candidates_);
  state->passes = std::move(choice.passes);
  state->summary = std::move(choice.summary);
  size_t workspace = 0;
  for (const conv2d_cuda::PassChoice& p : state->passes) workspace = std::max(workspace, p.workspace);
  set_workspace_bytes(workspace);
  backend_ = std::move(state);
}

void Conv2d::forward_cuda(Context& ctx, const ForwardArgs& args) {
  void* workspace = checked_workspace(ctx);
  const auto& s = state_as<ConvState>(backend_);
  const cudnnHandle_t handle = cudnn_of(ctx);
  const conv2d_cuda::PassChoice& f = s.pass(Pass::kForward);
  CUDNN_CHECK(cudnnConvolutionForward(handle, &kOne, s.x.get(), args.inputs[0].raw(), s.w.get(),
                                      args.params[0].raw(), f.convolution.get(),
                                      static_cast<cudnnConvolutionFwdAlgo_t>(f.algo),
                                      s.workspace_for(workspace, Pass::kForward), f.workspace, &kZero, s.y.get(),
                                      args.output.raw()));
  if (options_.bias) {
    CUDNN_CHECK(cudnnAddTensor(handle, &kOne, s.bias.get(), args.params[1].raw(), &kOne, s.y.get(),
                               args.output.raw()));
  }
}

void Conv2d::backward_cuda(Context& ctx, const BackwardArgs& args) {
  void* workspace = checked_workspace(ctx);
  const auto& s = state_as<ConvState>(backend_);
  const cudnnHandle_t handle = cudnn_of(ctx);
  if (args.input_grads[0].defined()) {
    const conv2d_cuda::PassChoice& data = s.pass(Pass::kBackwardData);
    CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &kOne, s.w.get(), args.params[0].raw(), s.y.get(),
                                             args.output_grad.raw(), data.convolution.get(),
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(data.algo),
                                             s.workspace_for(workspace, Pass::kBackwardData), data.workspace,
                                             beta_for(args.input_grad_modes[0]), s.x.get(),
                                             args.input_grads[0].raw()));
  }
  // glassbox::Pass: the step's passes (tensor/pass.h), not Conv2d::Pass, the cuDNN call.
  ctx.switch_pass(glassbox::Pass::kBackwardWeights);
  const conv2d_cuda::PassChoice& filter = s.pass(Pass::kBackwardFilter);
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &kOne, s.x.get(), args.inputs[0].raw(), s.y.get(),
                                             args.output_grad.raw(), filter.convolution.get(),
                                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(filter.algo),
                                             s.workspace_for(workspace, Pass::kBackwardFilter), filter.workspace,
                                             &kOne, s.w.get(), args.param_grads[0].raw()));
  if (options_.bias) {
    CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, &kOne, s.y.get(), args.output_grad.raw(), &kOne,
                                             s.bias.get(), args.param_grads[1].raw()));
  }
}

}  // namespace glassbox
