// layers/batch_norm/batch_norm_cuda.cpp: BatchNorm2d with cuDNN's spatial batch norm.
//
// What cuDNN does, from cudnn_ops.h (cuDNN 9) and the cuDNN API reference,
// paraphrased, and how it lines up with the header:
//   - cudnnBatchNormalizationForwardTraining updates
//       running = factor * batch statistic + (1 - factor) * running
//     with factor = exponentialAverageFactor: that is the header's momentum.
//   - The batch variance it folds into the running variance is the unbiased
//     one (times M / (M - 1)), as PyTorch's: PyTorch hands its running_var to
//     cuDNN unchanged, and MXNet's cuDNN-vs-native comparison
//     (apache/mxnet#21111) shows cuDNN storing the unbiased estimate. The
//     normalisation itself uses the biased variance. CPU == cuDNN == header.
//   - resultSaveMean / resultSaveInvVariance are the batch mean and
//     1 / sqrt(var + eps) (biased var), which backward takes back; the same
//     epsilon must go to forward and backward; epsilon >= CUDNN_BN_MIN_EPSILON.
//   - cudnnBatchNormalizationBackward blends dx with alphaDataDiff/betaDataDiff
//     (1 and beta_for(mode)) and the scale/shift gradients with
//     alphaParamDiff/betaParamDiff (1 and 1: they accumulate).
//   - The (1, C, 1, 1) descriptor of scale, shift and the statistics comes
//     from cudnnDeriveBNTensorDescriptor in the mode of the training calls.
// The Ex calls of channels-last values (Note [Persistent batch norm on NHWC])
// take the same arguments in the same meaning, plus a workspace and a reserve.
//
// Note [Batch norm's fp32 side]: x, y, dx and dy are float32, or bfloat16 or
// float16 in a mixed-precision graph (value_storage(), Note [16-bit values in
// a layer]); scale, shift, their gradients, the running and the saved
// statistics are float32 always (keeps_fp32_parameters, allocate_state).
// That is cuDNN's own split: cudnn_ops.h gives the shared descriptor of those
// six tensors the type "(typeOf(x) == double) ? double : float", and
// cudnnDeriveBNTensorDescriptor, which derives it from x's descriptor, so
// makes a float one for half or bfloat16 x. cuDNN 9 checks that bfloat16 x
// comes with a float scale descriptor, and its batch-norm kernels come in
// __half/float and __nv_bfloat16/float instances: the statistics are computed
// in float. alpha and beta stay float. prepare_cuda reads the derived type
// back and refuses anything but float, so a cuDNN that derived otherwise
// fails at prepare instead of reading float buffers as 16-bit ones.
//
// Note [Persistent batch norm on NHWC]: on channels-last values (x, y, dx, dy
// all NHWC, the layout of input 0) a training forward and the backward go
// through cudnnBatchNormalizationForwardTrainingEx and
// cudnnBatchNormalizationBackwardEx in CUDNN_BATCHNORM_SPATIAL_PERSISTENT mode
// with CUDNN_BATCHNORM_OPS_BN (batch norm alone: no z, no activation). The
// reason is speed: cuDNN's fast NHWC batch-norm kernels (the "family of fast
// NHWC batch normalization functions" of cuDNN 7.4's release notes) run only
// through the Ex calls in that mode, on fully packed NHWC tensors, given a
// workspace of at least cudnnGet...ExWorkspaceSize bytes and a reserve of at
// least cudnnGetBatchNormalizationTrainingExReserveSpaceSize bytes whose
// contents the forward leaves for the backward. The API reference names half
// data for those kernels; for float and bfloat16 it promises the Ex calls'
// results, not their speed. What the reference says the mode costs: it "may
// be faster than CUDNN_BATCHNORM_SPATIAL but imposes some limits on the range
// of values" (cudnn_ops.h): its scaled-integer reduction (described for NCHW)
// can overflow into Inf or NaN on finite but very large inputs where
// CUDNN_BATCHNORM_SPATIAL stays finite, which only cudnnQueryRuntimeError
// would report. The layer does not query it: a NaN reaches the loss, which
// checked_loss (graph/finite_check.h) refuses. PyTorch's cuDNN batch norm
// trains in this mode through the same Ex calls. An inference forward has no
// reduction and keeps cudnnBatchNormalizationForwardInference in
// CUDNN_BATCHNORM_SPATIAL mode on either layout; both modes derive the same
// (1, C, 1, 1) float descriptor (cudnn_ops.h gives both 1xCx1x1 scale and
// bias). The reserve is allocated once, in a training prepare, as layer state:
// it must survive from forward to backward, which the shared workspace does
// not. NCHW values keep the plain calls in CUDNN_BATCHNORM_SPATIAL mode.
//
// Note [Batch norm and ReLU in one cuDNN call]: where the graph fuses the
// ReLU after a batch norm into it (graph/fusion.h), the same Ex calls run with
// CUDNN_BATCHNORM_OPS_BN_ACTIVATION and a ReLU activation descriptor: the
// forward writes y = max(0, bn(x)) and leaves in the reserve what its
// backward needs; the backward reads y and the ReLU's dy, as the graph hands
// them, and applies the ReLU's gradient before batch norm's. The reserve and
// workspace sizes are asked for those ops. cudnn_fuses_batch_norm_relu
// (batch_norm.h) holds the conditions, and the layer takes a ReLU only where
// its cuDNN also gives the fused call's sizes for that shape and runs the
// fused forward and backward on two samples of it
// (cudnn_fused_batch_norm_refusal): the API reference documents these ops
// for float16 only, and a size question alone does not prove that a call
// runs. Where cuDNN refuses, the ReLU runs apart and the layer's
// algorithms() says why.
//
// Note [A residual add fused into its batch norm] (graph/fusion.h) on cuDNN:
// CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION, the same calls with z described as
// y: the forward writes y = max(0, bn(x) + z); the backward writes dz, the
// ReLU's dy masked by y > 0, besides dx. cudnn_ops.h lists dz as an output
// and documents no blend for it, so Glassbox has it written, never added to:
// the graph fuses only where this backward is the first to write z's
// gradient, and the layer refuses a kAdd there.
#include "layers/batch_norm/batch_norm.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "layers/layer_cuda.h"
#include "layers/relu_kernels_cuda.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;  // NCHW, and every inference forward
constexpr cudnnBatchNormMode_t kNhwcTrainingMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

struct BatchNormState final : BackendState {
  TensorDescriptor data;   // x, y, dx, dy: (N, C, H, W), in input_layout(0)
  TensorDescriptor param;  // (1, C, 1, 1): scale, shift, their gradients, running and saved statistics
  // Note [Persistent batch norm on NHWC]: a channels-last training plan's
  // Ex calls, and the reserve their forward leaves for their backward.
  bool ex = false;
  // Note [Batch norm and ReLU in one cuDNN call]: the Ex calls' ops, and the
  // ReLU they apply where fused (null otherwise).
  cudnnBatchNormOps_t ops = CUDNN_BATCHNORM_OPS_BN;
  ActivationDescriptor relu;
  Tensor reserve;  // reserve_bytes, as float32 words; undefined where cuDNN asks for none
  size_t reserve_bytes = 0;
  // Note [Batch norm inference in slices]: a batch over cuDNN's inference
  // limit, its slices' descriptors by sample count.
  std::map<int64_t, TensorDescriptor> slices;
  // Where cuDNN refuses the fused ReLU the rule allows, so that a ReLU after
  // this layer runs apart: what `glassbox time` shows in its row.
  std::string note;
  std::string algorithms() const override { return note; }
  void* reserve_data() const { return reserve.defined() ? reserve.raw() : nullptr; }
};

// The Ex calls' workspace (forward, backward) and reserve sizes for `ops`, in
// the descriptor slots PyTorch's cuDNN batch norm passes for OPS_BN (z and y
// described as x; no dz), with `relu` where one is fused (null otherwise).
// With CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION, dz described as x too.
// The first status that is not success, or success.
struct ExSizes {
  size_t forward = 0, backward = 0, reserve = 0;
};
cudnnStatus_t ask_ex_sizes(cudnnHandle_t handle, cudnnBatchNormOps_t ops, cudnnTensorDescriptor_t data,
                           cudnnTensorDescriptor_t param, cudnnActivationDescriptor_t relu, ExSizes& sizes) {
  cudnnStatus_t status = cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
      handle, kNhwcTrainingMode, ops, data, data, data, param, relu, &sizes.forward);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  const bool residual = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  status = cudnnGetBatchNormalizationBackwardExWorkspaceSize(handle, kNhwcTrainingMode, ops, data, data, data,
                                                              residual ? data : nullptr, data, param, relu,
                                                              &sizes.backward);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return cudnnGetBatchNormalizationTrainingExReserveSpaceSize(handle, kNhwcTrainingMode, ops, relu, data,
                                                              &sizes.reserve);
}

// The descriptors of a fused call (Note [Batch norm and ReLU in one cuDNN
// call]) on an NHWC training batch x of `values`.
struct FusedCall {
  TensorDescriptor data, param;
  ActivationDescriptor relu;
  cudnnBatchNormOps_t ops = CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
};
FusedCall fused_call(const Shape& x, DType values, bool residual) {
  FusedCall call;
  call.data = make_tensor_descriptor(x, values, Layout::kNHWC);
  call.param = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(call.param.get(), call.data.get(), kNhwcTrainingMode));
  call.relu = make_relu_descriptor();
  if (residual) call.ops = CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  return call;
}

}  // namespace

std::string cudnn_fused_batch_norm_size_refusal(const Context& ctx, const Shape& x, DType values, bool residual) {
  try {
    const FusedCall call = fused_call(x, values, residual);
    ExSizes sizes;
    const cudnnStatus_t status =
        ask_ex_sizes(cudnn_of(ctx), call.ops, call.data.get(), call.param.get(), call.relu.get(), sizes);
    return status == CUDNN_STATUS_SUCCESS ? std::string() : std::string(cudnnGetErrorString(status));
  } catch (const Error& e) {  // a shape no descriptor takes (past INT_MAX): no fused call either
    return e.what();
  }
}

namespace {

// cudnn_batch_norm_relu_refusal's answer, and whether it is the device's
// memory at the moment rather than cuDNN's (not kept by the compile-time cache).
struct FusedRun {
  std::string refusal;
  bool short_of_memory = false;
};
FusedRun run_fused_call(const Context& ctx, const Shape& x, DType values, bool residual) {
  cudnnHandle_t handle = cudnn_of(ctx);
  const FusedCall call = fused_call(x, values, residual);
  const cudnnBatchNormOps_t ops = call.ops;
  const ActivationDescriptor& relu = call.relu;
  const cudnnTensorDescriptor_t d = call.data.get(), p = call.param.get();
  ExSizes sizes;
  auto refusal = [](std::string_view what, cudnnStatus_t status) {
    return cat(what, ": ", cudnnGetErrorString(status));
  };
  if (const cudnnStatus_t status = ask_ex_sizes(handle, ops, d, p, relu.get(), sizes); status != CUDNN_STATUS_SUCCESS) {
    return {refusal("the workspace and reserve sizes", status)};
  }
  const size_t forward_bytes = sizes.forward, backward_bytes = sizes.backward, reserve_bytes = sizes.reserve;
  // Buffers of its own, freed on return. A buffer the device has no memory
  // for makes the answer a refusal (the ReLU then runs apart), not an error.
  cudaStream_t stream = stream_of(ctx);
  ProbeBuffers probe(ctx);
  auto bytes = [&](size_t n) { return probe.zeroed(n); };
  const size_t value_bytes = static_cast<size_t>(x.numel()) * size_of(values);
  const CudaBuffer in = bytes(value_bytes), out = bytes(value_bytes), dy = bytes(value_bytes), dx = bytes(value_bytes);
  const CudaBuffer z = bytes(value_bytes), dz = bytes(value_bytes);
  const cudnnTensorDescriptor_t zd = residual ? d : nullptr;
  const CudaBuffer channels = bytes(6 * static_cast<size_t>(x[1]) * sizeof(float));
  const CudaBuffer workspace = bytes(std::max(forward_bytes, backward_bytes)), reserve = bytes(reserve_bytes);
  const CudaBuffer grads = bytes(2 * static_cast<size_t>(x[1]) * sizeof(float));
  if (!probe.short_of_memory().empty()) return {probe.short_of_memory(), true};
  float* c = static_cast<float*>(channels.get());
  const int64_t k = x[1];
  const cudnnStatus_t forward = cudnnBatchNormalizationForwardTrainingEx(
      handle, kNhwcTrainingMode, ops, &kOne, &kZero, d, in.get(), zd, residual ? z.get() : nullptr, d, out.get(), p,
      c, c + k, 0.1,
      c + 2 * k, c + 3 * k, 1e-5, c + 4 * k, c + 5 * k, relu.get(), workspace.get(), forward_bytes, reserve.get(),
      reserve_bytes);
  if (forward != CUDNN_STATUS_SUCCESS) return {refusal("forward", forward)};
  float* g = static_cast<float*>(grads.get());
  const cudnnStatus_t backward = cudnnBatchNormalizationBackwardEx(
      handle, kNhwcTrainingMode, ops, &kOne, &kZero, &kOne, &kOne, d, in.get(), d, out.get(), d, dy.get(), zd,
      residual ? dz.get() : nullptr, d, dx.get(), p, c, c + k, g, g + k, 1e-5,
      c + 4 * k, c + 5 * k,
      relu.get(), workspace.get(), backward_bytes, reserve.get(), reserve_bytes);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return {backward == CUDNN_STATUS_SUCCESS ? std::string() : refusal("backward", backward)};
}

}  // namespace

std::string cudnn_batch_norm_relu_refusal(const Context& ctx, const Shape& x, DType values, bool residual) {
  return run_fused_call(ctx, x, values, residual).refusal;
}

std::string cudnn_fused_batch_norm_refusal(const Context& ctx, const Shape& x, DType values, bool residual) {
  if (std::string sizes = cudnn_fused_batch_norm_size_refusal(ctx, x, values, residual); !sizes.empty()) {
    return sizes;
  }
  const Shape probe{std::min<int64_t>(x[0], 2), x[1], x[2], x[3]};
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, DType, bool>;
  static std::mutex mutex;
  static std::map<Key, std::string> answers;
  const Key key{ctx.device().index, probe[0], probe[1], probe[2], probe[3], values, residual};
  const std::lock_guard lock(mutex);
  if (const auto it = answers.find(key); it != answers.end()) return it->second;
  const FusedRun run = run_fused_call(ctx, probe, values, residual);
  std::string refused = run.refusal.empty() ? "" : cat("a run on ", probe.str(), ": ", run.refusal);
  if (run.short_of_memory) return refused;  // the moment's memory, not cuDNN's answer: asked again next time
  return answers.emplace(key, std::move(refused)).first->second;
}

void BatchNorm2d::prepare_cuda(Context& ctx, const PrepareOptions& options) {
  static_assert(kMinEpsilon == CUDNN_BN_MIN_EPSILON, "BatchNorm2d's epsilon limit must be cuDNN's");
  allocate_state(ctx);
  auto state = std::make_unique<BatchNormState>();
  const Layout layout = input_layout(0);  // keeps_layout: y, dx and dy share it
  state->data = make_tensor_descriptor(input_shapes()[0], value_storage(), layout);
  const Shape& x = input_shapes()[0];
  if (x[0] > kCudnnInferenceBatchLimit) {
    for (const auto& [first, count] : batch_slices(x[0], kCudnnInferenceBatchLimit)) {
      if (!state->slices.contains(count)) {
        state->slices.emplace(count, make_tensor_descriptor(Shape{count, x[1], x[2], x[3]}, value_storage(), layout));
      }
    }
  }
  state->ex = layout == Layout::kNHWC && options.phase == Phase::kTraining;
  state->param = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(state->param.get(), state->data.get(),
                                            state->ex ? kNhwcTrainingMode : kMode));
  // Note [Batch norm's fp32 side]: the parameters and statistics are float buffers.
  cudnnDataType_t param_type{};
  int n = 0, c = 0, h = 0, w = 0, n_stride = 0, c_stride = 0, h_stride = 0, w_stride = 0;
  CUDNN_CHECK(cudnnGetTensor4dDescriptor(state->param.get(), &param_type, &n, &c, &h, &w, &n_stride, &c_stride,
                                         &h_stride, &w_stride));
  if (param_type != CUDNN_DATA_FLOAT) {
    throw Error(cat(name(), " (", type(), "): cuDNN derives the scale and statistics descriptor as cudnnDataType_t ",
                    static_cast<int>(param_type), ", not float, for ", name_of(value_storage()),
                    " values; the layer keeps them in float32"));
  }
  if (fused_relu()) {
    // Note [Batch norm and ReLU in one cuDNN call]; set_fused_relu checked the
    // conditions, so only the Ex path gets here.
    if (!state->ex) throw Error(cat(name(), " (", type(), "): a fused ReLU without the Ex path"));
    state->ops = fused_residual() ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION : CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
    state->relu = make_relu_descriptor();
  } else if (state->ex) {
    // Note [Batch norm and ReLU in one cuDNN call]: a fusion the rule allows
    // and this cuDNN refuses is named (can_fuse_relu and
    // can_fuse_residual_relu asked it the same way), so that a ReLU or an
    // add after this layer that runs apart says why.
    std::string refused;
    for (const bool residual : {false, true}) {
      if (!cudnn_fuses_batch_norm_relu(options.phase, true, value_storage(), x[1], residual)) continue;
      const std::string refusal = cudnn_fused_batch_norm_refusal(ctx, x, value_storage(), residual);
      if (refusal.empty()) continue;
      refused += cat(refused.empty() ? "" : "; ",
                     residual ? "CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION" : "CUDNN_BATCHNORM_OPS_BN_ACTIVATION", ": ",
                     refusal);
    }
    if (!refused.empty()) {
      // Said of any ReLU after it: this layer does not know whether one follows.
      state->note = cat("a ReLU after it runs apart: cuDNN refuses the fused call on ", name_of(value_storage()),
                        " NHWC values (", refused, ")");
    }
  }
  if (state->ex) {
    ExSizes sizes;
    const cudnnStatus_t status =
        ask_ex_sizes(cudnn_of(ctx), state->ops, state->data.get(), state->param.get(), state->relu.get(), sizes);
    if (status != CUDNN_STATUS_SUCCESS) {
      if (fused_relu()) {
        throw Error(cat(name(), " (", type(), "): cuDNN refuses batch norm with a fused ",
                        fused_residual() ? "residual add and ReLU (CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION)"
                                         : "ReLU (CUDNN_BATCHNORM_OPS_BN_ACTIVATION)",
                        " on ", input_shapes()[0].str(), " ",
                        name_of(value_storage()), " NHWC values: ", cudnnGetErrorString(status),
                        "; --no-fusion runs the ReLU itself"));
      }
      CUDNN_CHECK(status);
    }
    state->reserve_bytes = sizes.reserve;
    if (state->reserve_bytes > 0) {
      const int64_t words = static_cast<int64_t>((state->reserve_bytes + sizeof(float) - 1) / sizeof(float));
      state->reserve = ctx.allocate(Shape{words}, DType::kFloat32, MemoryCategory::kLayerState);
    }
    set_workspace_bytes(std::max(sizes.forward, sizes.backward));
  }
  backend_ = std::move(state);
}

void BatchNorm2d::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<BatchNormState>(backend_);
  const void* x = args.inputs[0].raw();
  void* y = args.output.raw();
  const void* scale = args.params[0].raw();
  const void* shift = args.params[1].raw();
  const double momentum = static_cast<double>(options_.momentum), eps = static_cast<double>(options_.eps);
  if (args.phase == Phase::kTraining && s.ex) {
    check_training_batch();
    // Note [Persistent batch norm on NHWC]
    // Note [A residual add fused into its batch norm]: z, described as y.
    const bool residual = fused_residual();
    CUDNN_CHECK(cudnnBatchNormalizationForwardTrainingEx(
        cudnn_of(ctx), kNhwcTrainingMode, s.ops, &kOne, &kZero, s.data.get(), x, residual ? s.data.get() : nullptr,
        residual ? args.inputs[1].raw() : nullptr, s.data.get(), y,
        s.param.get(), scale, shift, momentum, running_mean_.raw(), running_var_.raw(), eps, saved_mean_.raw(),
        saved_inv_std_.raw(), s.relu.get(), checked_workspace(ctx), workspace_bytes(), s.reserve_data(),
        s.reserve_bytes));
  } else if (args.phase == Phase::kTraining) {
    check_training_batch();
    CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(cudnn_of(ctx), kMode, &kOne, &kZero, s.data.get(), x,
                                                       s.data.get(), y, s.param.get(), scale, shift, momentum,
                                                       running_mean_.raw(), running_var_.raw(), eps,
                                                       saved_mean_.raw(), saved_inv_std_.raw()));
  } else {
    const Shape& shape = input_shapes()[0];
    const size_t sample_bytes = static_cast<size_t>(shape[1] * shape[2] * shape[3]) * size_of(value_storage());
    for (const auto& [first, count] : batch_slices(shape[0], kCudnnInferenceBatchLimit)) {
      const cudnnTensorDescriptor_t d = count == shape[0] ? s.data.get() : s.slices.at(count).get();
      const size_t offset = static_cast<size_t>(first) * sample_bytes;
      CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
          cudnn_of(ctx), kMode, &kOne, &kZero, d, static_cast<const char*>(x) + offset, d,
          static_cast<char*>(y) + offset, s.param.get(), scale, shift, running_mean_.raw(), running_var_.raw(), eps));
    }
    // An inference forward of a training plan (an evaluation between epochs)
    // has no fused call: the fused ReLU, and z, in a pass over y after it.
    if (fused_residual()) {
      launch_add_relu(y, args.inputs[1].raw(), y, args.output.numel(), value_storage(), stream_of(ctx));
    } else if (fused_relu()) {
      CUDNN_CHECK(cudnnActivationForward(cudnn_of(ctx), s.relu.get(), &kOne, s.data.get(), y, &kZero, s.data.get(), y));
    }
  }
  last_forward_trained_ = args.phase == Phase::kTraining;
}

void BatchNorm2d::backward_cuda(Context& ctx, const BackwardArgs& args) {
  check_saved_statistics();
  auto& s = state_as<BatchNormState>(backend_);
  // Note [BatchNorm2d scratch dx]: cuDNN computes the scale and shift
  // gradients only together with dx. Where no input gradient is wanted, dx
  // goes to y's memory, which is dead by now: backward runs in reverse
  // topological order, so every reader of y has finished its backward, and
  // this backward reads x, not y. That holds for the Ex call too: with
  // CUDNN_BATCHNORM_OPS_BN it is given no y (yDesc and yData are null; only
  // a fused activation's backward reads y) and no dz. A fused ReLU's backward
  // reads y, so the graph fuses one only where dx is wanted (graph/fusion.h).
  const bool want_dx = args.input_grads[0].defined();
  if (fused_relu_backward() && !want_dx) {
    throw Error(cat(name(), " (", type(), "): a fused ReLU's backward needs the input gradient"));
  }
  void* dx = want_dx ? args.input_grads[0].raw() : args.output.raw();
  const float* beta_dx = want_dx ? beta_for(args.input_grad_modes[0]) : &kZero;
  const void* x = args.inputs[0].raw();
  const void* dy = args.output_grad.raw();
  const void* scale = args.params[0].raw();
  void* dscale = args.param_grads[0].raw();
  void* dshift = args.param_grads[1].raw();
  const double eps = static_cast<double>(options_.eps);
  if (s.ex) {
    // Note [Persistent batch norm on NHWC]: the reserve the training forward
    // left. Note [Batch norm and ReLU in one cuDNN call]: y = max(0, .) and
    // the ReLU's dy where fused.
    const bool relu = s.ops != CUDNN_BATCHNORM_OPS_BN;
    // Note [A residual add fused into its batch norm]: dz is written, never added to.
    const bool residual = fused_residual();
    if (residual && (!args.input_grads[1].defined() || args.input_grad_modes[1] != GradMode::kWrite)) {
      throw Error(cat(name(), " (", type(), "): a fused residual add's backward writes z's gradient first; got ",
                      args.input_grads[1].defined() ? "one to add to" : "none"));
    }
    // cuDNN documents no blend for dz; should betaDataDiff blend it as it
    // does dx, dz must hold zeros when dx is added to, as nothing wrote it yet.
    if (residual && beta_dx != &kZero) fill_zero(ctx, args.input_grads[1]);
    CUDNN_CHECK(cudnnBatchNormalizationBackwardEx(
        cudnn_of(ctx), kNhwcTrainingMode, s.ops, &kOne, beta_dx, &kOne, &kOne, s.data.get(), x,
        relu ? s.data.get() : nullptr, relu ? args.output.raw() : nullptr, s.data.get(), dy,
        residual ? s.data.get() : nullptr, residual ? args.input_grads[1].raw() : nullptr,
        s.data.get(), dx, s.param.get(), scale, relu ? args.params[1].raw() : nullptr, dscale, dshift, eps,
        saved_mean_.raw(), saved_inv_std_.raw(), s.relu.get(), checked_workspace(ctx), workspace_bytes(),
        s.reserve_data(), s.reserve_bytes));
    return;
  }
  CUDNN_CHECK(cudnnBatchNormalizationBackward(cudnn_of(ctx), kMode, &kOne, beta_dx, &kOne, &kOne, s.data.get(), x,
                                              s.data.get(), dy, s.data.get(), dx, s.param.get(), scale, dscale,
                                              dshift, eps, saved_mean_.raw(), saved_inv_std_.raw()));
}

}  // namespace glassbox
