// layers/linear/linear_cuda.cpp: Linear with cuBLAS GEMMs and cuDNN bias ops.
//
// cuBLAS is column-major. A row-major (R, C) matrix is the column-major C x R
// matrix with leading dimension C, i.e. its transpose. So with row-major
// x:(N,I), w:(O,I), y:(N,O) the products become, column-major:
//   y^T  (O x N) = w (as I x O)^T * x^T (I x N)    -> gemm(T, N, O, N, I)
//   dx^T (I x N) = w (I x O)      * dy^T (O x N)   -> gemm(N, N, I, N, O)
//   dw^T (I x O) = x^T (I x N)    * dy (as O x N)^T -> gemm(N, T, I, O, N)
// Over leading dimensions (Options::over_last_dim) x is (..., I): N is then
// the product of the leading sizes (rows()), the same packed memory.
#include "layers/linear/linear.h"

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct LinearState final : BackendState {
  TensorDescriptor output;  // (N, O, 1, 1): y as rows, whatever its rank
  TensorDescriptor bias;    // (1, O, 1, 1), broadcast over N
};

}  // namespace

void Linear::prepare_cuda(Context&, const PrepareOptions&) {
  auto state = std::make_unique<LinearState>();
  // Not output_shape(): a (T, B, O) y would read as (T, B, O, 1), whose
  // channels are B, and the (1, O, 1, 1) bias would not broadcast onto it.
  state->output = make_tensor_descriptor(Shape{rows(), options_.out_features});
  state->bias = make_tensor_descriptor(Shape{1, options_.out_features});
  backend_ = std::move(state);
}

void Linear::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<LinearState>(backend_);
  const int n = static_cast<int>(rows());
  const int in = static_cast<int>(in_features());
  const int out = options_.out_features;
  CUBLAS_CHECK(cublasSgemm(cublas_of(ctx), CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &kOne,
                           args.params[0].data<float>(), in, args.inputs[0].data<float>(), in,
                           &kZero, args.output.data<float>(), out));
  if (options_.bias) {
    CUDNN_CHECK(cudnnAddTensor(cudnn_of(ctx), &kOne, s.bias.get(), args.params[1].raw(), &kOne,
                               s.output.get(), args.output.raw()));
  }
}

void Linear::backward_cuda(Context& ctx, const BackwardArgs& args) {
  auto& s = state_as<LinearState>(backend_);
  const int n = static_cast<int>(rows());
  const int in = static_cast<int>(in_features());
  const int out = options_.out_features;
  const float* dy = args.output_grad.data<float>();
  if (args.input_grads[0].defined()) {
    CUBLAS_CHECK(cublasSgemm(cublas_of(ctx), CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &kOne,
                             args.params[0].data<float>(), in, dy, out,
                             beta_for(args.input_grad_modes[0]), args.input_grads[0].data<float>(),
                             in));
  }
  ctx.switch_pass(Pass::kBackwardWeights);
  CUBLAS_CHECK(cublasSgemm(cublas_of(ctx), CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &kOne,
                           args.inputs[0].data<float>(), in, dy, out, &kOne,
                           args.param_grads[0].data<float>(), in));
  if (options_.bias) {
    CUDNN_CHECK(cudnnConvolutionBackwardBias(cudnn_of(ctx), &kOne, s.output.get(),
                                             args.output_grad.raw(), &kOne, s.bias.get(),
                                             args.param_grads[1].raw()));
  }
}

}  // namespace glassbox
