// layers/bias_gradient_cuda.cpp: see layers/bias_gradient_cuda.h.
#include "layers/bias_gradient_cuda.h"

#include <algorithm>
#include <vector>

#include "layers/layer_cuda.h"
#include "tensor/context_cuda.h"
#include "tensor/convert.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

// `count` ones of float32, on the context's device.
Tensor float_ones(Context& ctx, int64_t count) {
  Tensor ones = ctx.allocate(Shape{count}, DType::kFloat32, MemoryCategory::kLayerState);
  const std::vector<float> values(static_cast<size_t>(count), 1.0f);
  from_vector<float>(ctx, values, ones);
  return ones;
}

// fp32 accumulation of every product. For float32 operands, the pedantic
// type: a TF32 context's cuBLAS math mode (tensor/context_cuda.cpp) would
// otherwise let the sums read dy rounded to TF32, which PyTorch's sum does not.
cublasComputeType_t compute_type_for(DType operands) {
  return operands == DType::kFloat32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
}

}  // namespace

BiasGradient::BiasGradient(Context& ctx, int64_t images, int64_t channels, int64_t pixels, Layout layout,
                           DType data)
    : plan_(plan_bias_gradient(images, channels, pixels, layout)), data_(data) {
  const int64_t first = plan_.first_ones(), second = plan_.second_ones;
  if (data == DType::kFloat32) {  // one vector serves both products
    first_ones_ = float_ones(ctx, std::max(first, second));
    second_ones_ = first_ones_;
    return;
  }
  if (!is_16_bit_float(data)) throw Error(cat("bias gradient: dy of ", name_of(data), " (float types only)"));
  const Tensor wide = float_ones(ctx, first);
  first_ones_ = ctx.allocate(Shape{first}, data, MemoryCategory::kLayerState);
  convert(ctx, wide, first_ones_);  // queued before `wide` is freed, on the same stream
  if (second > 1) second_ones_ = float_ones(ctx, second);
}

std::string BiasGradient::describe() const {
  return plan_.second_ones > 1 ? "cuBLAS, two products" : "cuBLAS, one product";
}

void BiasGradient::run(Context& ctx, const void* dy, float* db, void* workspace) const {
  const cublasHandle_t handle = cublas_of(ctx);
  const BiasGradientPlan& p = plan_;
  const bool two = p.second_ones > 1;
  float* first_out = two ? static_cast<float*>(workspace) : db;
  const int rows = static_cast<int>(p.a_rows), columns = static_cast<int>(p.a_columns);
  // first_out (m) = op(A) ones: m x 1 = (m x k)(k x 1), op(A) = A^T (columns x rows) or A.
  const int m = p.transpose_a ? columns : rows, k = p.transpose_a ? rows : columns;
  CUBLAS_CHECK(cublasGemmEx(handle, p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, m, 1, k, &kOne, dy,
                            cuda_data_type(data_), rows, first_ones_.raw(), cuda_data_type(data_), k,
                            two ? &kZero : &kOne, first_out, CUDA_R_32F, m, compute_type_for(data_),
                            CUBLAS_GEMM_DEFAULT));
  if (!two) return;
  // db (channels) += partial (channels x second_ones) ones(second_ones).
  const int channels = static_cast<int>(p.channels), second = static_cast<int>(p.second_ones);
  CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, channels, 1, second, &kOne, first_out, CUDA_R_32F,
                            channels, second_ones_.raw(), CUDA_R_32F, second, &kOne, db, CUDA_R_32F, channels,
                            CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
}

}  // namespace glassbox
