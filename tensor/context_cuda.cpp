// tensor/context_cuda.cpp: CUDA resources, the pool allocator, copies, events
// and version reporting: the definitions behind tensor/cuda_entry.h.
#include "tensor/context_cuda.h"

#include <cstdlib>

#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensor/cublas_loader_cuda.h"
#include "tensor/cuda_entry.h"
#include "tensor/runtime_info.h"

namespace glassbox {

CudaResources& cuda_resources(const Context& ctx) {
  if (ctx.cuda_state() == nullptr) {
    throw Error(cat("a CUDA call was made with a ", ctx.device().str(), " context"));
  }
  return *ctx.cuda_state();
}

cudnnDataType_t cudnn_data_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return CUDNN_DATA_FLOAT;
    case DType::kFloat16: return CUDNN_DATA_HALF;
    case DType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: break;
  }
  throw Error(cat("cuDNN: no float data type for ", name_of(dtype)));
}

cudaDataType_t cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return CUDA_R_32F;
    case DType::kFloat16: return CUDA_R_16F;
    case DType::kBFloat16: return CUDA_R_16BF;
    default: break;
  }
  throw Error(cat("CUDA: no float data type for ", name_of(dtype)));
}

TensorDescriptor make_nchw_descriptor(int n, int c, int h, int w, DType dtype) {
  auto desc = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc.get(), CUDNN_TENSOR_NCHW, cudnn_data_type(dtype), n, c, h, w));
  return desc;
}

namespace {

// cudaMallocAsync from the device's default pool, in stream order. The pool's
// release threshold is raised at context creation, so freed blocks stay cached
// in the pool instead of going back to the driver: the pool is the caching
// allocator.
class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(std::shared_ptr<CudaResources> resources)
      : resources_(std::move(resources)) {}
  Device device() const override { return Device::cuda(resources_->device); }

 private:
  // Note [A second try after trimming the pool]: the pool keeps every freed
  // block, and a request may not fit among them while the driver could give
  // it after they go back (another size, fragments); cudaMalloc by cuDNN,
  // NCCL or cuBLAS does not trim the pool either. So a failed request waits
  // for the stream (frees are released only at a synchronisation), trims the
  // pool to what is in use and tries once more. Allocations are made at
  // compile time, never inside a captured step, so the wait is legal; an
  // allocation during a capture is refused by name, since CUDA would make it
  // a node of the graph, memory outside the plan (Note [Capturing a stream]).
  void check_can_allocate(size_t bytes) const override {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cudaStreamIsCapturing(resources_->stream.get(), &capturing));
    if (capturing != cudaStreamCaptureStatusNone) {
      throw Error(cat("an allocation of ", bytes, " bytes inside a step being captured: a step's memory is "
                      "allocated when its graph is compiled, before the capture"));
    }
  }
  void* raw_allocate(size_t bytes) override {
    cudaStream_t stream = resources_->stream.get();
    void* ptr = nullptr;
    cudaError_t status = cudaMallocAsync(&ptr, bytes, stream);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      CUDA_CHECK(cudaStreamSynchronize(stream));
      CUDA_CHECK(cudaMemPoolTrimTo(resources_->pool, 0));
      status = cudaMallocAsync(&ptr, bytes, stream);
    }
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear it: out of memory is reported by Allocator::allocate
      return nullptr;
    }
    CUDA_CHECK(status);
    return ptr;
  }
  void raw_deallocate(void* ptr) noexcept override {
    (void)cudaFreeAsync(ptr, resources_->stream.get());
  }
  DeviceMemory device_memory() const override {
    CUDA_CHECK(cudaSetDevice(resources_->device));
    size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    // Blocks the pool keeps for reuse are free to Glassbox, but cudaMemGetInfo
    // counts them as taken.
    uint64_t reserved = 0, used = 0;
    CUDA_CHECK(cudaMemPoolGetAttribute(resources_->pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    CUDA_CHECK(cudaMemPoolGetAttribute(resources_->pool, cudaMemPoolAttrUsedMemCurrent, &used));
    return {static_cast<int64_t>(free + (reserved - used)), "cudaMemGetInfo and the pool's unused blocks"};
  }

  std::shared_ptr<CudaResources> resources_;  // the stream outlives every block freed on it
};

std::string version_string(int major, int minor, int patch) {
  return cat(major, ".", minor, ".", patch);
}

}  // namespace

namespace cuda_entry {

struct EventSet {
  std::vector<CudaEvent> events;
};

CudaAvailability availability() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return {false, 0, cat("cudaGetDeviceCount: ", cudaGetErrorString(status))};
  }
  if (count == 0) return {false, 0, "no CUDA device found"};
  return {true, count, ""};
}

std::shared_ptr<CudaResources> create_resources(int device_index) {
  auto resources = std::make_shared<CudaResources>();
  resources->device = device_index;
  CUDA_CHECK(cudaSetDevice(device_index));

  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  resources->stream = CudaStream(stream);

  cudnnHandle_t cudnn = nullptr;
  CUDNN_CHECK(cudnnCreate(&cudnn));
  resources->cudnn = CudnnHandle(cudnn);
  CUDNN_CHECK(cudnnSetStream(cudnn, stream));

  require_cublas();  // Note [cuBLAS by dlopen]
  cublasHandle_t cublas = nullptr;
  CUBLAS_CHECK(cublasCreate(&cublas));
  resources->cublas = CublasHandle(cublas);
  CUBLAS_CHECK(cublasSetStream(cublas, stream));
  // Note [cuBLAS's workspace]: without a workspace of its own, cuBLAS
  // allocates one as it needs, and inside a captured step that allocation
  // becomes part of the graph, outside Glassbox's memory accounting. So each
  // handle gets a fixed one here, once, the size cuBLAS's reference
  // recommends (cublasSetWorkspace: 32 MiB on Hopper and later, 4 MiB
  // before). It is set after cublasSetStream, which resets it.
  CUDA_CHECK(cudaDeviceGetAttribute(&resources->major, cudaDevAttrComputeCapabilityMajor, device_index));
  CUDA_CHECK(cudaDeviceGetAttribute(&resources->minor, cudaDevAttrComputeCapabilityMinor, device_index));
  const size_t workspace_bytes = (resources->major >= 9 ? size_t{32} : size_t{4}) << 20;
  void* workspace = nullptr;
  CUDA_CHECK(cudaMalloc(&workspace, workspace_bytes));
  resources->cublas_workspace = CudaBuffer(workspace);
  CUBLAS_CHECK(cublasSetWorkspace(cublas, workspace, workspace_bytes));

  cublasLtHandle_t cublas_lt = nullptr;
  CUBLAS_CHECK(cublasLtCreate(&cublas_lt));
  resources->cublas_lt = CublasLtHandle(cublas_lt);

  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&resources->pool, device_index));
  uint64_t keep_everything = UINT64_MAX;
  CUDA_CHECK(cudaMemPoolSetAttribute(resources->pool, cudaMemPoolAttrReleaseThreshold,
                                     &keep_everything));
  return resources;
}

std::shared_ptr<Allocator> make_allocator(std::shared_ptr<CudaResources> resources) {
  return std::make_shared<CudaAllocator>(std::move(resources));
}

void set_precision(CudaResources& resources, Precision precision) {
  const char* tf32_override = std::getenv("NVIDIA_TF32_OVERRIDE");
  const std::string refused =
      precision_refusal(precision, resources.major, resources.minor, tf32_override != nullptr ? tf32_override : "");
  if (!refused.empty()) throw ConfigError(cat("cuda:", resources.device, ": ", refused));
  // Default math never uses TF32 for float32 GEMMs.
  CUBLAS_CHECK(cublasSetMathMode(resources.cublas.get(), precision == Precision::kTf32
                                                             ? CUBLAS_TF32_TENSOR_OP_MATH
                                                             : CUBLAS_DEFAULT_MATH));
}

void synchronize(const CudaResources& resources) {
  CUDA_CHECK(cudaStreamSynchronize(resources.stream.get()));
}

void copy(const CudaResources& resources, void* dst, const void* src, size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, resources.stream.get()));
}

void fill_zero(const CudaResources& resources, void* dst, size_t bytes) {
  CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, resources.stream.get()));
}

std::shared_ptr<EventSet> create_events(const CudaResources& resources, int count, bool timing) {
  CUDA_CHECK(cudaSetDevice(resources.device));
  auto set = std::make_shared<EventSet>();
  for (int i = 0; i < count; ++i) {
    cudaEvent_t event = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
    set->events.emplace_back(event);
  }
  return set;
}

void record_event(const CudaResources& resources, EventSet& events, int index) {
  CUDA_CHECK(cudaEventRecord(events.events.at(static_cast<size_t>(index)).get(),
                             resources.stream.get()));
}

void wait_event(EventSet& events, int index) {
  CUDA_CHECK(cudaEventSynchronize(events.events.at(static_cast<size_t>(index)).get()));
}

std::shared_ptr<void> allocate_pinned(const CudaResources& resources, size_t bytes) {
  CUDA_CHECK(cudaSetDevice(resources.device));
  void* host = nullptr;
  CUDA_CHECK(cudaHostAlloc(&host, std::max<size_t>(bytes, 1), cudaHostAllocDefault));
  return std::shared_ptr<void>(host, [](void* p) { (void)cudaFreeHost(p); });
}

float elapsed_ms(EventSet& events, int from, int to) {
  cudaEvent_t end = events.events.at(static_cast<size_t>(to)).get();
  CUDA_CHECK(cudaEventSynchronize(end));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, events.events.at(static_cast<size_t>(from)).get(), end));
  return ms;
}

void describe(const Context& ctx, RuntimeInfo& info) {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
    info.cuda_runtime = version_string(runtime / 1000, runtime % 1000 / 10, 0);
  }
  const size_t cudnn = cudnnGetVersion();
  info.cudnn = version_string(static_cast<int>(cudnn / 10000), static_cast<int>(cudnn % 10000 / 100),
                              static_cast<int>(cudnn % 100));
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    info.nccl = version_string(nccl / 10000, nccl % 10000 / 100, nccl % 100);
  }
  if (!ctx.is_cuda()) return;
  // Only for a GPU context: asking opens cuBLAS (Note [cuBLAS by dlopen]),
  // which a CPU run in a CUDA build does not use.
  info.cublas = cublas_version();
  int driver = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  info.driver = version_string(driver / 1000, driver % 1000 / 10, 0);
  cudaDeviceProp props{};
  CUDA_CHECK(cudaGetDeviceProperties(&props, ctx.device().index));
  info.device_name = cat(props.name, " (sm_", props.major, props.minor, ", ",
                         props.multiProcessorCount, " SMs)");
  info.gpu_memory = format_bytes(static_cast<int64_t>(props.totalGlobalMem));
}

}  // namespace cuda_entry
}  // namespace glassbox
