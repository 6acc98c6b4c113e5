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
//
// The data (x, y, their gradients, the weights and bias in use) are float32,
// run by cublasSgemm, or bfloat16 or float16 in a mixed-precision graph
// (value_storage(), Note [16-bit values in a layer] in layers/layer.h), run by
// cublasGemmEx with fp32 compute (CUBLAS_COMPUTE_32F). The parameter
// gradients stay float32: dW and db are computed in the data's type into a
// scratch and added widened, as Conv2d's are (Note [16-bit parameter
// gradients] in layers/conv2d/conv2d_cuda.cpp).
//
// Note [cuBLAS reductions in the output type]: with 16-bit C, cuBLAS may sum
// the partial products of a split-K GEMM in C's type rather than in fp32,
// unless the handle's math mode carries
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION. The context sets that mode
// for every layer (tensor/context_cuda.cpp) and leaves the reduction allowed,
// as PyTorch does by default for bf16 and fp16 matmuls; each dot product
// itself accumulates in fp32.
#include "layers/linear/linear.h"

#include "layers/layer_cuda.h"
#include "tensor/convert.h"

namespace glassbox {
namespace {

struct LinearState final : BackendState {
  TensorDescriptor output;  // (N, O, 1, 1): y as rows, whatever its rank
  TensorDescriptor bias;    // (1, O, 1, 1), broadcast over N
  // 16-bit data in training: dW (O, I) and db (O) in the data's type, before
  // they are added into the fp32 gradients. Undefined otherwise (db also
  // without a bias).
  Tensor weight_grad, bias_grad;
};

// c (m x n, column-major) = op(a) op(b) + beta c in the data's type: float32
// by cublasSgemm; bfloat16 or float16 by cublasGemmEx, fp32 compute (Note
// [cuBLAS reductions in the output type]).
void gemm(Context& ctx, DType data, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
          const Tensor& a, int lda, const Tensor& b, int ldb, const float* beta, const Tensor& c, int ldc) {
  if (data == DType::kFloat32) {
    CUBLAS_CHECK(cublasSgemm(cublas_of(ctx), op_a, op_b, m, n, k, &kOne, a.data<float>(), lda, b.data<float>(), ldb,
                             beta, c.data<float>(), ldc));
    return;
  }
  const cudaDataType_t type = cuda_data_type(data);
  CUBLAS_CHECK(cublasGemmEx(cublas_of(ctx), op_a, op_b, m, n, k, &kOne, a.raw(), type, lda, b.raw(), type, ldb, beta,
                            c.raw(), type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void Linear::prepare_cuda(Context& ctx, const PrepareOptions& options) {
  const DType data = value_storage();
  auto state = std::make_unique<LinearState>();
  // Not output_shape(): a (T, B, O) y would read as (T, B, O, 1), whose
  // channels are B, and the (1, O, 1, 1) bias would not broadcast onto it.
  state->output = make_tensor_descriptor(Shape{rows(), options_.out_features}, data);
  state->bias = make_tensor_descriptor(Shape{1, options_.out_features}, data);
  if (data != DType::kFloat32 && options.phase == Phase::kTraining) {  // Note [16-bit parameter gradients]
    NarrowParamGrads grads = allocate_narrow_param_grads(ctx, Shape{options_.out_features, in_features()},
                                                         options_.bias ? options_.out_features : 0, data);
    state->weight_grad = std::move(grads.weight), state->bias_grad = std::move(grads.bias);
  }
  backend_ = std::move(state);
}

void Linear::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<LinearState>(backend_);
  const int n = static_cast<int>(rows());
  const int in = static_cast<int>(in_features());
  const int out = options_.out_features;
  gemm(ctx, value_storage(), CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, args.params[0], in, args.inputs[0], in, &kZero,
       args.output, out);
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
  const DType data = value_storage();
  const Tensor& dy = args.output_grad;
  if (args.input_grads[0].defined()) {
    gemm(ctx, data, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, args.params[0], in, dy, out,
         beta_for(args.input_grad_modes[0]), args.input_grads[0], in);
  }
  ctx.switch_pass(Pass::kBackwardWeights);
  // float32 data: dW and db add into the gradients. 16-bit data: they are
  // written into the 16-bit scratch, then added widened.
  const bool narrow = data != DType::kFloat32;
  const float* beta = narrow ? &kZero : &kOne;
  const Tensor& dw = narrow ? s.weight_grad : args.param_grads[0];
  gemm(ctx, data, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, args.inputs[0], in, dy, out, beta, dw, in);
  if (narrow) accumulate_widened(ctx, s.weight_grad, args.param_grads[0]);
  if (options_.bias) {
    const Tensor& db = narrow ? s.bias_grad : args.param_grads[1];
    CUDNN_CHECK(cudnnConvolutionBackwardBias(cudnn_of(ctx), &kOne, s.output.get(), dy.raw(), beta, s.bias.get(),
                                             db.raw()));
    if (narrow) accumulate_widened(ctx, s.bias_grad, args.param_grads[1]);
  }
}

}  // namespace glassbox
