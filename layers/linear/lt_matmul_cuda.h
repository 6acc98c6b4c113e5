// layers/linear/lt_matmul_cuda.h: one of Linear's products on cuBLASLt
// (layers/linear/gemm_plan.h), planned at prepare: its descriptors, its
// epilogue and the algorithm cuBLASLt's heuristics rank first for them.
#pragma once

#include <optional>
#include <string>

#include "layers/linear/gemm_plan.h"
#include "tensor/context.h"
#include "tensor/handles_cuda.h"

namespace glassbox {

class LtMatmul {
 public:
  // The product `gemm` on `data` values (float32: fp32 FMA, or TF32 tensor
  // cores where `tf32`; bfloat16 or float16: fp32 accumulation), with
  // `epilogue`, within `workspace_limit` bytes of workspace. nullopt where
  // cuBLASLt offers no algorithm for it; the caller says what that means.
  static std::optional<LtMatmul> plan(Context& ctx, const LinearGemm& gemm, DType data, bool tf32,
                                      LinearEpilogue epilogue, size_t workspace_limit);

  size_t workspace_bytes() const { return workspace_bytes_; }
  LinearEpilogue epilogue() const { return epilogue_; }
  // "epilogue bias + ReLU, algorithm 21" (the algorithm's cuBLASLt id).
  std::string describe() const;

  // D = op(A) op(B) + beta D, then the epilogue: `bias` is the bias read
  // (kBias, kBiasRelu) or the bias gradient written (kBiasGradientOfB), in
  // D's type; nullptr for the others. Every pointer 256-byte aligned, as the
  // heuristics assumed (Note [cuBLASLt's alignment]): Error naming `layer`
  // otherwise.
  void run(Context& ctx, const std::string& layer, const void* a, const void* b, const float* beta, void* d,
           void* bias, void* workspace);

  // Note [A ReLU epilogue that drops NaN] (layers/linear/gemm_plan.h):
  // whether a run of this product, planned for `gemm` on `data` values,
  // passes A's NaN on through its ReLU epilogue. Runs it once on device
  // buffers of its own and waits for it; the answer is kept per device,
  // shape, compute type and algorithm. nullopt where the device has no memory
  // for the run (asked again next time), and `why` says so: the ReLU then
  // runs apart, which is right whatever the epilogue does.
  std::optional<bool> relu_keeps_nan(Context& ctx, const LinearGemm& gemm, DType data, std::string& why);

 private:
  LtMatmul() = default;

  LtMatmulDescriptor desc_;
  LtMatrixLayout a_, b_, d_;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_bytes_ = 0;
  LinearEpilogue epilogue_ = LinearEpilogue::kNone;
  bool tf32_ = false;  // float32 data on TF32 tensor cores
  int algorithm_id_ = -1;
};

}  // namespace glassbox
