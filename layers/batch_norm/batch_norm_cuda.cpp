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
//     from cudnnDeriveBNTensorDescriptor in CUDNN_BATCHNORM_SPATIAL mode.
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
#include "layers/batch_norm/batch_norm.h"

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct BatchNormState final : BackendState {
  TensorDescriptor data;   // x, y, dx, dy: (N, C, H, W)
  TensorDescriptor param;  // (1, C, 1, 1): scale, shift, their gradients, running and saved statistics
};

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;

}  // namespace

void BatchNorm2d::prepare_cuda(Context& ctx, const PrepareOptions&) {
  static_assert(kMinEpsilon == CUDNN_BN_MIN_EPSILON, "BatchNorm2d's epsilon limit must be cuDNN's");
  allocate_state(ctx);
  auto state = std::make_unique<BatchNormState>();
  state->data = make_tensor_descriptor(input_shapes()[0], value_storage());
  state->param = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(state->param.get(), state->data.get(), kMode));
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
  backend_ = std::move(state);
}

void BatchNorm2d::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<BatchNormState>(backend_);
  const void* x = args.inputs[0].raw();
  void* y = args.output.raw();
  const void* scale = args.params[0].raw();
  const void* shift = args.params[1].raw();
  if (args.phase == Phase::kTraining) {
    check_training_batch();
    CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        cudnn_of(ctx), kMode, &kOne, &kZero, s.data.get(), x, s.data.get(), y, s.param.get(), scale, shift,
        static_cast<double>(options_.momentum), running_mean_.raw(), running_var_.raw(),
        static_cast<double>(options_.eps), saved_mean_.raw(), saved_inv_std_.raw()));
  } else {
    CUDNN_CHECK(cudnnBatchNormalizationForwardInference(cudnn_of(ctx), kMode, &kOne, &kZero, s.data.get(), x,
                                                        s.data.get(), y, s.param.get(), scale, shift,
                                                        running_mean_.raw(), running_var_.raw(),
                                                        static_cast<double>(options_.eps)));
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
  // this backward reads x, not y.
  const bool want_dx = args.input_grads[0].defined();
  void* dx = want_dx ? args.input_grads[0].raw() : args.output.raw();
  const float* beta_dx = want_dx ? beta_for(args.input_grad_modes[0]) : &kZero;
  CUDNN_CHECK(cudnnBatchNormalizationBackward(
      cudnn_of(ctx), kMode, &kOne, beta_dx, &kOne, &kOne, s.data.get(), args.inputs[0].raw(), s.data.get(),
      args.output_grad.raw(), s.data.get(), dx, s.param.get(), args.params[0].raw(), args.param_grads[0].raw(),
      args.param_grads[1].raw(), static_cast<double>(options_.eps), saved_mean_.raw(), saved_inv_std_.raw()));
}

}  // namespace glassbox
