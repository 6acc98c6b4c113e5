// layers/linear/linear_product_cuda.cpp: see layers/linear/linear_product_cuda.h.
#include "layers/linear/linear_product_cuda.h"

#include "layers/layer_cuda.h"
#include "layers/relu_kernels_cuda.h"
#include "tensor/context_cuda.h"
#include "tensor/error.h"

namespace glassbox {

LinearProduct LinearProduct::plan(Context& ctx, const std::string& layer, const LinearGemm& gemm, DType data,
                                  bool tf32, LinearEpilogue wanted, size_t workspace_limit, LinearLibrary library) {
  LinearProduct p;
  p.gemm_ = gemm;
  p.data_ = data;
  p.tf32_ = tf32;
  p.wanted_ = wanted;
  p.library_ = library;
  if (library == LinearLibrary::kAuto) {
    for (LinearEpilogue epilogue : lt_epilogue_fallbacks(wanted)) {
      p.lt_ = LtMatmul::plan(ctx, gemm, data, tf32, epilogue, workspace_limit);
      // Note [A ReLU epilogue that drops NaN] (gemm_plan.h)
      if (p.lt_ && applies_relu(epilogue)) {
        std::string why;
        const std::optional<bool> keeps = p.lt_->relu_keeps_nan(ctx, gemm, data, why);
        if (keeps != true) {
          p.relu_epilogue_refused_ = keeps ? "cuBLASLt's ReLU epilogue returns a number for a NaN at these shapes"
                                           : cat("cuBLASLt's ReLU epilogue not probed for NaN: ", why);
          p.lt_.reset();
          continue;
        }
      }
      if (p.lt_) break;
    }
  }
  if (!p.lt_ && !fits_gemm_ex(gemm)) {
    throw ShapeError(cat(layer, " (Linear): ",
                         library == LinearLibrary::kAuto ? "cuBLASLt offers no algorithm for"
                                                         : "pinned to cublasGemmEx (Linear::pin_cuda_library):",
                         " the product of ", gemm.m, " x ", gemm.k, " by ", gemm.k, " x ", gemm.n,
                         ", and cublasGemmEx takes sizes within int only"));
  }
  p.passes_ = passes_left(wanted, p.lt_ ? p.lt_->epilogue() : LinearEpilogue::kNone);
  if (p.passes_.bias) {
    // D is n rows of m values, one per output feature: the bias's channels.
    p.bias_add_ = plan_bias_add(gemm.n, gemm.m, 1, Layout::kNCHW, static_cast<int64_t>(size_of(data)));
  } else if (p.passes_.relu) {
    p.d_desc_ = make_tensor_descriptor(Shape{gemm.n, gemm.m}, data);
    p.relu_ = make_relu_descriptor();
  }
  return p;
}

std::string LinearProduct::describe() const {
  std::string text = lt_                                 ? lt_->describe()
                     : library_ == LinearLibrary::kGemmEx ? "cuBLAS GemmEx (pinned: Linear::pin_cuda_library)"
                                                          : "cuBLAS GemmEx (cuBLASLt offers no algorithm for these shapes)";
  const std::string passes = glassbox::describe(passes_);
  if (!passes.empty()) {
    text += cat("; ", passes);
    if (!relu_epilogue_refused_.empty()) {
      text += cat(" (", relu_epilogue_refused_, ")");
    } else if (lt_) {
      text += cat(" (cuBLASLt offers no ", name_of(wanted_), " epilogue for these shapes)");
    }
  }
  return text;
}

void LinearProduct::run(Context& ctx, const std::string& layer, const void* a, const void* b, const float* beta,
                        void* d, void* bias, void* workspace) {
  if (lt_) {
    lt_->run(ctx, layer, a, b, beta, d, bias, workspace);
  } else {
    const cudaDataType_t type = cuda_data_type(data_);
    const cublasComputeType_t compute =
        data_ == DType::kFloat32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const LinearGemm& g = gemm_;
    CUBLAS_CHECK(cublasGemmEx(cublas_of(ctx), g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                              g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(g.m), static_cast<int>(g.n),
                              static_cast<int>(g.k), &kOne, a, type, static_cast<int>(g.a_rows), b, type,
                              static_cast<int>(g.b_rows), beta, d, type, static_cast<int>(g.m), compute,
                              CUBLAS_GEMM_DEFAULT));
  }
  // Note [When cuBLASLt refuses a product]: the bias, then the ReLU, on D as
  // it was written; a forward's beta is 0, so neither sees an older D. The
  // bias with its ReLU in one pass (Note [A bias add by Glassbox's kernel]).
  if (passes_.bias) {
    launch_bias_add(d, bias, bias_add_, data_, passes_.relu, stream_of(ctx));
  } else if (passes_.relu) {
    CUDNN_CHECK(cudnnActivationForward(cudnn_of(ctx), relu_.get(), &kOne, d_desc_.get(), d, &kZero, d_desc_.get(),
                                       d));
  }
}

}  // namespace glassbox
