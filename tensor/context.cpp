// tensor/context.cpp: contexts, the workspace and the math mode.
#include "tensor/context.h"

#include "tensor/cpu_blas.h"
#include "tensor/cuda_entry.h"
#include "tensor/eigen_maps.h"
#include "tensor/error.h"
#include "tensor/parallel_for.h"

namespace glassbox {

std::string_view name_of(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32 (TF32 off)";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16 (mixed: 16-bit values, fp32 master weights and accumulation)";
    case Precision::kFp16:
      return "fp16 (mixed: 16-bit values, fp32 master weights and accumulation; a training step scales the loss)";
  }
  return "?";
}

std::string_view flag_name_of(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
  }
  return "?";
}

Precision parse_precision(std::string_view text) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16}) {
    if (text == flag_name_of(p)) return p;
  }
  throw ConfigError(cat("unknown precision '", text, "'; valid: fp32, tf32, bf16, fp16"));
}

std::string precision_refusal(Precision precision, int major, int minor, std::string_view tf32_override) {
  if (precision == Precision::kBf16 && major < 8) {
    return cat("--precision bf16 needs a GPU of compute capability 8.0 or later (Ampere and after), where cuDNN and "
               "cuBLAS have bfloat16 kernels; this one is ", major, ".", minor, ": use --precision fp16");
  }
  if (precision == Precision::kTf32 && major < 8) {
    return cat("--precision tf32 needs a GPU of compute capability 8.0 or later (Ampere and after), which has TF32 "
               "tensor cores; this one is ", major, ".", minor, " and would compute in fp32: use --precision fp32");
  }
  if (precision == Precision::kTf32 && tf32_override == "0") {
    return "--precision tf32, but NVIDIA_TF32_OVERRIDE=0 in the environment turns TF32 off in cuBLAS and cuDNN, "
           "which would compute in fp32: unset it, or use --precision fp32";
  }
  return "";
}

DType value_dtype(Precision precision) {
  switch (precision) {
    case Precision::kBf16: return DType::kBFloat16;
    case Precision::kFp16: return DType::kFloat16;
    case Precision::kFp32:
    case Precision::kTf32: return DType::kFloat32;
  }
  return DType::kFloat32;
}

CudaAvailability cuda_availability() { return cuda_entry::availability(); }

DeviceChoice choose_device(std::string_view requested, std::string_view flag) {
  const CudaAvailability cuda = cuda_availability();
  if (requested.empty()) {
    if (cuda.usable) return {Device::cuda(0), ""};
    return {Device::cpu(), cat("no usable GPU (", cuda.reason, "): running on the CPU")};
  }
  const Device device = Device::parse(requested, flag);
  if (!device.is_cuda()) return {device, ""};
  if (!cuda.usable) throw ConfigError(cat(flag, " ", requested, ": no usable GPU (", cuda.reason, ")"));
  if (device.index >= cuda.device_count) {
    throw ConfigError(cat(flag, " ", requested, ": no such GPU; this machine has ", cuda.device_count,
                          cuda.device_count == 1 ? " (cuda:0)" : cat(" (cuda:0 to cuda:", cuda.device_count - 1, ")")));
  }
  return {device, ""};
}

Context::Context(Device device, uint64_t seed) : device_(device), seed_(seed), rng_(seed) {
  keep_openmp_teams_whole();  // Note [Whole OpenMP teams]
}
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;
Context::~Context() = default;

Context Context::cpu(uint64_t seed) {
  keep_eigen_single_threaded();  // Note [Eigen's own threads]
  check_cpu_blas();              // Note [OpenBLAS's OpenMP build] (cmake/CpuBlas.cmake)
  Context ctx(Device::cpu(), seed);
  ctx.allocator_ = make_cpu_allocator();
  return ctx;
}

Context Context::cuda(int index, uint64_t seed) {
  const CudaAvailability cuda = cuda_entry::availability();
  if (cuda.usable && (index < 0 || index >= cuda.device_count)) {
    throw ConfigError(cat("cuda:", index, ": no such GPU; this machine has ", cuda.device_count));
  }
  Context ctx(Device::cuda(index), seed);
  ctx.cuda_ = cuda_entry::create_resources(index);
  ctx.allocator_ = cuda_entry::make_allocator(ctx.cuda_);
  cuda_entry::set_precision(*ctx.cuda_, ctx.precision_);
  return ctx;
}

Context Context::on(Device device, uint64_t seed) {
  return device.is_cuda() ? cuda(device.index, seed) : cpu(seed);
}

Allocator& Context::allocator() const {
  if (allocator_ == nullptr) {
    throw Error(cat("a ", device_.str(), " Context that was moved from holds no memory; use the one it was moved to"));
  }
  return *allocator_;
}

Tensor Context::allocate(Shape shape, DType dtype, MemoryCategory category) {
  allocator();  // a context moved from is refused by name
  // At most kMaxElements (2^48) of at most 8 bytes: the byte count fits.
  const size_t bytes = static_cast<size_t>(shape.numel()) * size_of(dtype);
  return Tensor(std::make_shared<Buffer>(allocator_, bytes, category), 0, std::move(shape), dtype);
}

// Note [Workspace grows by allocate, then swap]: the larger block is allocated
// while the old one is still held, and the old one is freed only once the new
// one is there. So a refused reservation (OutOfMemoryError) leaves the context
// with the workspace it had: the layers prepared so far chose algorithms sized
// to it, and a convolution's search goes on to a candidate needing less
// (conv2d_algorithms_cuda.cpp). The price: while it grows, old + new bytes are
// held at once, at most twice the new size, which the memory peak reports.
// That happens only at compile time, before any step, and freeing first would
// lose the old block whenever the larger one is refused. (On a device that
// cannot hold both, a candidate that would have fit after the free is skipped
// as out of memory, and a less hungry one is taken.)
void Context::reserve_workspace(size_t bytes) {
  allocator();  // a context moved from is refused by name
  if (bytes <= workspace_bytes()) return;
  auto larger = std::make_shared<Buffer>(allocator_, bytes, MemoryCategory::kWorkspace);
  workspace_ = std::move(larger);  // frees the old block, if any
}

void* Context::workspace() const { return workspace_ ? workspace_->data() : nullptr; }
size_t Context::workspace_bytes() const { return workspace_ ? workspace_->bytes() : 0; }

void Context::set_replica(Replica replica) {
  if (replica.count < 1 || replica.index < 0 || replica.index >= replica.count) {
    throw ConfigError(cat("replica ", replica.index, " of ", replica.count, ": the index must be in [0, count)"));
  }
  replica_ = replica;
}

void Context::set_precision(Precision precision) {
  if (cuda_) cuda_entry::set_precision(*cuda_, precision);  // first: it may refuse
  precision_ = precision;
}

void Context::synchronize() const {
  if (cuda_) cuda_entry::synchronize(*cuda_);
}

}  // namespace glassbox
