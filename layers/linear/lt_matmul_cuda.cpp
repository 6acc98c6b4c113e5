// layers/linear/lt_matmul_cuda.cpp: see layers/linear/lt_matmul_cuda.h.
#include "layers/linear/lt_matmul_cuda.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "layers/layer_cuda.h"
#include "tensor/context_cuda.h"
#include "tensor/error.h"

namespace glassbox {
namespace {

// Note [cuBLASLt's alignment]: cuBLASLt's heuristics choose among kernels
// by the alignment they may assume: of A, B, C and D from the preference
// (256 bytes unless set lower), of the bias from the pointer in the
// descriptor (none at prepare, which counts as aligned to anything). The
// graph places every value and parameter, and each weight of a bf16 or fp16
// working copy, at a multiple of 256 bytes (kPlanAlignment,
// graph/memory_plan.h; kParameterAlignment, graph/graph.cpp) and the
// allocator returns 256-byte aligned memory, so the defaults hold; run() checks each pointer rather
// than hand a kernel an address it was not chosen for.
constexpr uintptr_t kLtAlignment = 256;

cublasLtEpilogue_t lt_epilogue(LinearEpilogue epilogue) {
  switch (epilogue) {
    case LinearEpilogue::kNone: return CUBLASLT_EPILOGUE_DEFAULT;
    case LinearEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case LinearEpilogue::kRelu: return CUBLASLT_EPILOGUE_RELU;
    case LinearEpilogue::kBiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LinearEpilogue::kBiasGradientOfB: return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool has_bias_pointer(LinearEpilogue epilogue) {
  return epilogue == LinearEpilogue::kBias || epilogue == LinearEpilogue::kBiasRelu ||
         epilogue == LinearEpilogue::kBiasGradientOfB;
}

template <typename T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

// A packed column-major rows x columns matrix.
LtMatrixLayout make_layout(cudaDataType_t type, int64_t rows, int64_t columns) {
  cublasLtMatrixLayout_t raw = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(columns),
                                          rows));
  return LtMatrixLayout(raw);
}

}  // namespace

std::optional<LtMatmul> LtMatmul::plan(Context& ctx, const LinearGemm& gemm, DType data, bool tf32,
                                       LinearEpilogue epilogue, size_t workspace_limit) {
  LtMatmul m;
  m.epilogue_ = epilogue;
  m.tf32_ = data == DType::kFloat32 && tf32;
  const cudaDataType_t type = cuda_data_type(data);
  const cublasComputeType_t compute =
      data == DType::kFloat32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t desc = nullptr;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
  m.desc_ = LtMatmulDescriptor(desc);
  set_attribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, gemm.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_attribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, gemm.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_attribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(lt_epilogue(epilogue)));
  m.a_ = make_layout(type, gemm.a_rows, gemm.a_columns);
  m.b_ = make_layout(type, gemm.b_rows, gemm.b_columns);
  m.d_ = make_layout(type, gemm.m, gemm.n);

  cublasLtMatmulPreference_t raw_preference = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_preference));
  const LtPreference preference(raw_preference);
  const uint64_t limit = workspace_limit;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit,
                                                    sizeof(limit)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(cublas_lt_of(ctx), desc, m.a_.get(), m.b_.get(),
                                                               m.d_.get(), m.d_.get(), raw_preference, 1, &result,
                                                               &found);
  // Note [cuBLASLt's heuristic refusals]: besides NOT_SUPPORTED, the
  // heuristic answers INVALID_VALUE for some shapes it has no kernel for (a
  // matrix of one row or column, as PyTorch's CUDABlas.cpp records); both mean
  // no algorithm, which the caller names or works around.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE ||
      (status == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return std::nullopt;
  }
  CUBLAS_CHECK(status);
  // Each result carries its own status; one that is not SUCCESS cannot run.
  if (result.state != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  m.algo_ = result.algo;
  m.workspace_bytes_ = result.workspaceSize;
  int32_t id = -1;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&m.algo_, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &written) ==
      CUBLAS_STATUS_SUCCESS) {
    m.algorithm_id_ = id;
  }
  return m;
}

std::string LtMatmul::describe() const {
  return cat("epilogue ", name_of(epilogue_), ", algorithm ", algorithm_id_);
}

void LtMatmul::run(Context& ctx, const std::string& layer, const void* a, const void* b, const float* beta, void* d,
                   void* bias, void* workspace) {
  const bool with_bias = has_bias_pointer(epilogue_);
  for (const void* pointer : {a, b, static_cast<const void*>(d), static_cast<const void*>(with_bias ? bias : nullptr),
                              static_cast<const void*>(workspace_bytes_ > 0 ? workspace : nullptr)}) {
    if (reinterpret_cast<uintptr_t>(pointer) % kLtAlignment != 0) {  // Note [cuBLASLt's alignment]
      throw Error(cat(layer, " (Linear): cuBLASLt was planned for 256-byte aligned operands; ", pointer,
                      " is not"));
    }
  }
  if (with_bias) set_attribute(desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  CUBLAS_CHECK(cublasLtMatmul(cublas_lt_of(ctx), desc_.get(), &kOne, a, a_.get(), b, b_.get(), beta, d, d_.get(), d,
                              d_.get(), &algo_, workspace_bytes_ > 0 ? workspace : nullptr, workspace_bytes_,
                              stream_of(ctx)));
}

std::optional<bool> LtMatmul::relu_keeps_nan(Context& ctx, const LinearGemm& gemm, DType data, std::string& why) {
  // The whole algorithm (its id, tile, stages, split-K: the opaque words
  // cuBLASLt fills in), not its id alone.
  using AlgoWords = std::array<uint64_t, sizeof(cublasLtMatmulAlgo_t) / sizeof(uint64_t)>;
  using Key = std::tuple<int, int64_t, int64_t, int64_t, bool, bool, DType, LinearEpilogue, bool, AlgoWords, size_t>;
  static std::mutex mutex;
  static std::map<Key, bool> answers;
  AlgoWords words{};
  std::memcpy(words.data(), &algo_, sizeof(algo_));
  const Key key{ctx.device().index, gemm.m, gemm.n, gemm.k, gemm.transpose_a, gemm.transpose_b, data, epilogue_,
                tf32_, words, workspace_bytes_};
  const std::lock_guard lock(mutex);
  if (const auto it = answers.find(key); it != answers.end()) return it->second;

  // Buffers of its own, freed on return.
  const cudaStream_t stream = stream_of(ctx);
  ProbeBuffers probe(ctx);
  const size_t value = size_of(data);
  auto count = [](int64_t rows, int64_t columns) { return static_cast<size_t>(rows) * static_cast<size_t>(columns); };
  const CudaBuffer a = probe.zeroed(count(gemm.a_rows, gemm.a_columns) * value);
  const CudaBuffer b = probe.zeroed(count(gemm.b_rows, gemm.b_columns) * value);
  const CudaBuffer d = probe.zeroed(count(gemm.m, gemm.n) * value);
  const CudaBuffer bias = probe.zeroed(static_cast<size_t>(gemm.m) * value);
  const CudaBuffer workspace = probe.zeroed(workspace_bytes_);
  if (!probe.short_of_memory().empty()) {
    why = probe.short_of_memory();
    return std::nullopt;
  }
  const std::vector<uint8_t> nan = nan_bytes(data);
  CUDA_CHECK(cudaMemcpyAsync(a.get(), nan.data(), nan.size(), cudaMemcpyHostToDevice, stream));
  run(ctx, "a probe of cuBLASLt's ReLU epilogue", a.get(), b.get(), &kZero, d.get(), bias.get(), workspace.get());
  std::array<uint8_t, sizeof(float)> first{};
  CUDA_CHECK(cudaMemcpyAsync(first.data(), d.get(), value, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return answers.emplace(key, is_nan_bytes(data, std::span<const uint8_t>(first.data(), value))).first->second;
}

}  // namespace glassbox
