// tensor/cublas_loader_cuda.cpp: the cuBLAS and cuBLASLt entry points
// Glassbox calls, each passing its arguments to the same function of the
// library opened at the first call.
//
// Note [cuBLAS by dlopen]: libcublasLt's static initialisers fault in about
// 200 MB of the library when a process that links it starts, whether or not
// the process touches a GPU: `glassbox --help`, every CPU test of a CUDA
// build. So Glassbox does not link cuBLAS. The functions below have cuBLAS's
// own declarations (cublas_v2.h, cublasLt.h; inside `extern "C"`, so a
// signature that differs does not compile) and are hidden from other
// libraries (-fvisibility=hidden for this file, CMakeLists.txt). The loader
// finds the libraries as it would have at start (LD_LIBRARY_PATH, RUNPATH,
// the system's). A library that does not open, or lacks an entry point, is
// named once by require_cublas(), which a CUDA context calls before its
// first handle; a call without it returns CUBLAS_STATUS_NOT_INITIALIZED.
// Probe: an empty program linked to libcublasLt.so.13 takes 0.19 s, 25,000
// page faults (perf stat, 2-core EPYC).
#include "tensor/cublas_loader_cuda.h"

#include <dlfcn.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#include <array>

#include "tensor/error.h"

namespace glassbox {
namespace {

// Every entry point, by its exported name (cublas_v2.h maps cublasCreate to
// cublasCreate_v2 and so on): true for cuBLASLt's.
#define GLASSBOX_CUBLAS_ENTRY_POINTS(X) \
  X(false, cublasCreate_v2)             \
  X(false, cublasDestroy_v2)            \
  X(false, cublasGetProperty)           \
  X(false, cublasGetStatusString)       \
  X(false, cublasSetStream_v2)          \
  X(false, cublasSetWorkspace_v2)       \
  X(false, cublasSetMathMode)           \
  X(false, cublasSetPointerMode_v2)     \
  X(false, cublasSgemm_v2)              \
  X(false, cublasGemmEx)                \
  X(false, cublasSaxpy_v2)              \
  X(false, cublasSnrm2_v2_64)           \
  X(true, cublasLtCreate)               \
  X(true, cublasLtDestroy)              \
  X(true, cublasLtMatmul)               \
  X(true, cublasLtMatmulDescCreate)     \
  X(true, cublasLtMatmulDescDestroy)    \
  X(true, cublasLtMatmulDescSetAttribute) \
  X(true, cublasLtMatrixLayoutCreate)   \
  X(true, cublasLtMatrixLayoutDestroy)  \
  X(true, cublasLtMatmulPreferenceCreate) \
  X(true, cublasLtMatmulPreferenceDestroy) \
  X(true, cublasLtMatmulPreferenceSetAttribute) \
  X(true, cublasLtMatmulAlgoGetHeuristic) \
  X(true, cublasLtMatmulAlgoConfigGetAttribute)

enum class Entry : size_t {
#define GLASSBOX_ENTRY_ENUM(in_lt, name) name,
  GLASSBOX_CUBLAS_ENTRY_POINTS(GLASSBOX_ENTRY_ENUM)
#undef GLASSBOX_ENTRY_ENUM
  kCount
};
constexpr size_t kEntryCount = static_cast<size_t>(Entry::kCount);

struct Opened {
  std::array<void*, kEntryCount> functions{};  // all null where `problem` is not ""
  std::string problem;
};

// cuBLASLt first: libcublas needs it, so its refusal is the one to name.
// `keep` leaves both open (the process's copy); otherwise they are closed.
Opened open_libraries(const std::string& blas, const std::string& lt, bool keep) {
  Opened opened;
  void* lt_library = dlopen(lt.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lt_library == nullptr) {
    opened.problem = cat("cannot open ", lt, " (", dlerror(), ")");
    return opened;
  }
  void* blas_library = dlopen(blas.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (blas_library == nullptr) {
    opened.problem = cat("cannot open ", blas, " (", dlerror(), ")");
    if (!keep) dlclose(lt_library);
    return opened;
  }
  std::string missing;
  size_t missing_count = 0;
  const auto& entries = cublas_entry_points();
  for (size_t i = 0; i < kEntryCount; ++i) {
    opened.functions[i] = dlsym(entries[i].in_lt ? lt_library : blas_library, entries[i].name);
    if (opened.functions[i] == nullptr && missing_count++ == 0) missing = entries[i].name;
  }
  if (missing_count > 0) {
    opened.functions = {};
    opened.problem = cat(blas, " and ", lt, " lack ", missing_count, " of the ", kEntryCount,
                         " entry points Glassbox calls (", missing, " first): a cuBLAS older than the headers ",
                         "Glassbox was built with (", CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR, ")?");
  }
  if (!keep) {
    dlclose(blas_library);
    dlclose(lt_library);
  }
  return opened;
}

const Opened& process_libraries() {
  static const Opened opened = open_libraries(cublas_library_name(), cublas_lt_library_name(), true);
  return opened;
}

void* entry_point(Entry entry) { return process_libraries().functions[static_cast<size_t>(entry)]; }

}  // namespace

std::string cublas_library_name() { return cat("libcublas.so.", CUBLAS_VER_MAJOR); }
std::string cublas_lt_library_name() { return cat("libcublasLt.so.", CUBLAS_VER_MAJOR); }

const std::vector<CublasEntryPoint>& cublas_entry_points() {
  static const std::vector<CublasEntryPoint> entries = {
#define GLASSBOX_ENTRY_NAME(in_lt, name) {#name, in_lt},
      GLASSBOX_CUBLAS_ENTRY_POINTS(GLASSBOX_ENTRY_NAME)
#undef GLASSBOX_ENTRY_NAME
  };
  return entries;
}

const std::string& cublas_load_problem() { return process_libraries().problem; }

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    return "";
  }
  return cat(major, ".", minor, ".", patch);
}

void require_cublas() {
  if (const std::string& problem = cublas_load_problem(); !problem.empty()) throw Error(cat("cuBLAS: ", problem));
}

std::string cublas_open_problem(const std::string& blas, const std::string& lt) {
  return open_libraries(blas, lt, false).problem;
}

}  // namespace glassbox

// The forwarding functions: each calls the library's function of its own name,
// whose type is its own (Function) where the name has no C++ overloads.
#define GLASSBOX_FORWARD_AS(Function, name, ...)                                                 \
  const auto function = reinterpret_cast<Function>(glassbox::entry_point(glassbox::Entry::name)); \
  return function != nullptr ? function(__VA_ARGS__) : CUBLAS_STATUS_NOT_INITIALIZED
#define GLASSBOX_FORWARD(name, ...) GLASSBOX_FORWARD_AS(decltype(&name), name, __VA_ARGS__)

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) { GLASSBOX_FORWARD(cublasCreate_v2, handle); }
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) { GLASSBOX_FORWARD(cublasDestroy_v2, handle); }
cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  GLASSBOX_FORWARD(cublasGetProperty, type, value);
}
const char* cublasGetStatusString(cublasStatus_t status) {
  const auto function = reinterpret_cast<decltype(&cublasGetStatusString)>(
      glassbox::entry_point(glassbox::Entry::cublasGetStatusString));
  return function != nullptr ? function(status) : "cuBLAS status (cuBLAS did not load, so it cannot name it)";
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  GLASSBOX_FORWARD(cublasSetStream_v2, handle, stream);
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  GLASSBOX_FORWARD(cublasSetWorkspace_v2, handle, workspace, bytes);
}
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  GLASSBOX_FORWARD(cublasSetMathMode, handle, mode);
}
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  GLASSBOX_FORWARD(cublasSetPointerMode_v2, handle, mode);
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  GLASSBOX_FORWARD(cublasSgemm_v2, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  // cublas_api.h adds a C++ overload that takes a cudaDataType compute type.
  using Function = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                      const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                      const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GLASSBOX_FORWARD_AS(Function, cublasGemmEx, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
                      beta, C, Ctype, ldc, computeType, algo);
}
cublasStatus_t cublasSaxpy_v2(cublasHandle_t handle, int n, const float* alpha, const float* x, int incx, float* y,
                              int incy) {
  GLASSBOX_FORWARD(cublasSaxpy_v2, handle, n, alpha, x, incx, y, incy);
}
cublasStatus_t cublasSnrm2_v2_64(cublasHandle_t handle, int64_t n, const float* x, int64_t incx, float* result) {
  GLASSBOX_FORWARD(cublasSnrm2_v2_64, handle, n, x, incx, result);
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) { GLASSBOX_FORWARD(cublasLtCreate, handle); }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) { GLASSBOX_FORWARD(cublasLtDestroy, handle); }
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspaceSizeInBytes, cudaStream_t stream) {
  GLASSBOX_FORWARD(cublasLtMatmul, handle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                   workspace, workspaceSizeInBytes, stream);
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  GLASSBOX_FORWARD(cublasLtMatmulDescCreate, matmulDesc, computeType, scaleType);
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  GLASSBOX_FORWARD(cublasLtMatmulDescDestroy, matmulDesc);
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes) {
  GLASSBOX_FORWARD(cublasLtMatmulDescSetAttribute, matmulDesc, attr, buf, sizeInBytes);
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  GLASSBOX_FORWARD(cublasLtMatrixLayoutCreate, matLayout, type, rows, cols, ld);
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  GLASSBOX_FORWARD(cublasLtMatrixLayoutDestroy, matLayout);
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  GLASSBOX_FORWARD(cublasLtMatmulPreferenceCreate, pref);
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  GLASSBOX_FORWARD(cublasLtMatmulPreferenceDestroy, pref);
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes) {
  GLASSBOX_FORWARD(cublasLtMatmulPreferenceSetAttribute, pref, attr, buf, sizeInBytes);
}
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount) {
  GLASSBOX_FORWARD(cublasLtMatmulAlgoGetHeuristic, handle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference,
                   requestedAlgoCount, heuristicResultsArray, returnAlgoCount);
}
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                    size_t sizeInBytes, size_t* sizeWritten) {
  GLASSBOX_FORWARD(cublasLtMatmulAlgoConfigGetAttribute, algo, attr, buf, sizeInBytes, sizeWritten);
}

}  // extern "C"
