// layers/linear/linear_product_cuda.h: one of Linear's products on the GPU,
// planned at prepare: on cuBLASLt with as much of its epilogue as cuBLASLt
// offers an algorithm for, the rest as passes of its own, or on cublasGemmEx
// where cuBLASLt offers nothing (Note [When cuBLASLt refuses a product],
// layers/linear/gemm_plan.h).
#pragma once

#include <optional>
#include <string>

#include "layers/bias_add_plan.h"
#include "layers/linear/gemm_plan.h"
#include "layers/linear/lt_matmul_cuda.h"
#include "tensor/context.h"
#include "tensor/handles_cuda.h"

namespace glassbox {

class LinearProduct {
 public:
  // The product `gemm` for `pass` on `data` values (TF32 tensor cores where
  // `tf32` and float32), wanting `wanted` as its epilogue, within
  // `workspace_limit` bytes. ShapeError naming `layer` where no library takes
  // the shapes.
  static LinearProduct plan(Context& ctx, const std::string& layer, const LinearGemm& gemm, DType data, bool tf32,
                            LinearEpilogue wanted, size_t workspace_limit,
                            LinearLibrary library = LinearLibrary::kAuto);

  size_t workspace_bytes() const { return lt_ ? lt_->workspace_bytes() : 0; }
  // What the epilogue leaves to passes: run() does the bias and the ReLU;
  // the bias gradient is the caller's (BiasGradient, layers/bias_gradient_cuda.h).
  const EpiloguePasses& passes() const { return passes_; }
  // "epilogue bias, algorithm 21; ReLU as a pass of its own (cuBLASLt offers
  // no bias + ReLU epilogue for these shapes)", or "cuBLAS GemmEx (...)";
  // where the ReLU epilogue lost a NaN, "(cuBLASLt's ReLU epilogue returns a
  // number for a NaN at these shapes)", or was not probed, why.
  std::string describe() const;

  // D = op(A) op(B) + beta D, then the epilogue, then the bias and the ReLU
  // that it left to passes. `bias` as LtMatmul::run: the bias read (forward)
  // or the bias gradient written (the epilogue's, where it runs), in D's type.
  void run(Context& ctx, const std::string& layer, const void* a, const void* b, const float* beta, void* d,
           void* bias, void* workspace);

 private:
  LinearProduct() = default;

  std::optional<LtMatmul> lt_;  // empty: cublasGemmEx
  LinearLibrary library_ = LinearLibrary::kAuto;  // kGemmEx: pinned there, cuBLASLt not asked
  LinearGemm gemm_;
  DType data_ = DType::kFloat32;
  bool tf32_ = false;
  LinearEpilogue wanted_ = LinearEpilogue::kNone;
  EpiloguePasses passes_;
  // Note [A ReLU epilogue that drops NaN]: why a ReLU epilogue cuBLASLt
  // offered is not used (it turned the probe's NaN into a number, or could
  // not be probed); empty where none was refused so.
  std::string relu_epilogue_refused_;
  // Where a pass adds the bias (and applies the ReLU in the same pass): D as
  // n rows of the bias's m values. Where a pass applies the ReLU alone: D as
  // (n, m) rows, for cuDNN's activation.
  BiasAddPlan bias_add_;
  TensorDescriptor d_desc_;
  ActivationDescriptor relu_;
};

}  // namespace glassbox
