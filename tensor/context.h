// tensor/context.h: everything one device needs to run layers, owned in one
// place: its allocator, its stream, its cuDNN and cuBLAS handles (one each per
// device, never per layer), the shared workspace, a seeded RNG and the math
// mode. One process drives one device through one Context.
//
// This header is CUDA-free. The CUDA half (stream, handles, pool) is the
// CudaResources struct of tensor/context_cuda.h, which only *_cuda.cpp and .cu
// files include.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "tensor/allocator.h"
#include "tensor/device.h"
#include "tensor/pass.h"
#include "tensor/tensor.h"

namespace glassbox {

struct CudaResources;  // tensor/context_cuda.h

// The precision a graph computes in. kFp32 is the reference: plain FMA
// arithmetic, TF32 tensor cores off (cuDNN CUDNN_FMA_MATH, cuBLAS default
// math). kTf32 lets cuDNN and cuBLAS round float32 inputs to TF32 on tensor
// cores. kBf16 and kFp16 are mixed precision (Note [Mixed precision],
// graph/mixed_precision.h): values, their gradients and the weights in use
// are stored in 16 bits, arithmetic and accumulation are fp32, and master
// weights, momentum, batch-norm parameters and statistics and the loss stay
// fp32; fp16 adds dynamic loss scaling (optim/loss_scale.h).
enum class Precision { kFp32, kTf32, kBf16, kFp16 };
// What reports and benchmark contexts print: "fp32 (TF32 off)", "tf32",
// "bf16 (mixed: 16-bit values, fp32 master weights and accumulation)",
// "fp16 (mixed: 16-bit values, fp32 master weights and accumulation; a training step scales the loss)".
std::string_view name_of(Precision precision);
// The flag's spelling: "fp32", "tf32", "bf16", "fp16" (benchmark names end in
// "/" and this, except for fp32).
std::string_view flag_name_of(Precision precision);
// "fp32", "tf32", "bf16" or "fp16"; throws ConfigError naming the valid choices.
Precision parse_precision(std::string_view text);
// The element type a graph stores its float values in: float32 for fp32 and
// tf32, bfloat16 for bf16, float16 for fp16.
DType value_dtype(Precision precision);
// Whether the precision is one of the mixed (16-bit) ones.
constexpr bool is_mixed(Precision precision) { return precision == Precision::kBf16 || precision == Precision::kFp16; }
// Why a GPU of compute capability major.minor cannot run `precision`, or ""
// where it can. bf16 needs 8.0 (Ampere) or later: below it cuDNN refuses
// every bfloat16 call (CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH, some with no
// message), so a graph would fail at its first layer instead of at compile.
// tf32 needs 8.0 too, and an environment without NVIDIA_TF32_OVERRIDE=0
// (`tf32_override`, its value, "" where unset), which turns TF32 off in every
// NVIDIA library: either way a tf32 run would compute in fp32 under tf32's name.
std::string precision_refusal(Precision precision, int major, int minor, std::string_view tf32_override);

// Whether a CUDA device can be used here, and why not if it cannot.
struct CudaAvailability {
  bool usable = false;
  int device_count = 0;
  std::string reason;  // why not: "built without CUDA", "cudaGetDeviceCount: no CUDA-capable device..."
};
CudaAvailability cuda_availability();

// The device a program runs on, from its --device flag. `requested` empty:
// the first GPU when one is usable, else the CPU, with `note` saying why (for
// the program to print). Otherwise the named device, which must exist: throws
// ConfigError naming `flag` for an unknown name, an unusable GPU or an index
// past the last GPU.
struct DeviceChoice {
  Device device;
  std::string note;  // "" unless the default fell back to the CPU
};
DeviceChoice choose_device(std::string_view requested, std::string_view flag);

class Context {
 public:
  static constexpr uint64_t kDefaultSeed = 2024;

  static Context cpu(uint64_t seed = kDefaultSeed);
  // Throws NotBuiltError in a CPU-only build, LibraryError if the device fails.
  static Context cuda(int index = 0, uint64_t seed = kDefaultSeed);
  static Context on(Device device, uint64_t seed = kDefaultSeed);

  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;
  ~Context();

  const Device& device() const { return device_; }
  bool is_cuda() const { return device_.is_cuda(); }

  Tensor allocate(Shape shape, DType dtype, MemoryCategory category);
  // Each throws Error for a context that was moved from (it holds no memory).
  Allocator& allocator() const;
  MemoryStats memory() const { return allocator().stats(); }

  // The workspace is shared by layers in turn. The graph reserves the largest
  // need at compile time; a step never allocates. reserve_workspace only
  // grows it; when the larger block is refused (OutOfMemoryError), the
  // workspace held stays as it was (Note [Workspace grows by allocate, then swap]).
  void reserve_workspace(size_t bytes);
  void* workspace() const;
  size_t workspace_bytes() const;

  // Host RNG, seeded: parameter initialisation, CPU dropout masks, and the
  // seeds of device-side generators.
  std::mt19937_64& rng() { return rng_; }
  uint64_t seed() const { return seed_; }

  // Data parallelism (optim/communicator.h): this process computes replica
  // `index` of `count`, rows [index x B, (index + 1) x B) of each global batch
  // of count x B rows. A layer that draws per element (CPU dropout: Note
  // [Dropout mask bits]) indexes its draws by the element's place in the
  // global batch, so that R replicas draw what one process at R x B draws.
  // {0, 1} outside a data-parallel job; make_communicator sets it.
  struct Replica {
    int index = 0, count = 1;
  };
  const Replica& replica() const { return replica_; }
  void set_replica(Replica replica);

  Precision precision() const { return precision_; }
  // Sets the cuBLAS math mode now; convolutions read it when they are
  // compiled. ConfigError where the GPU cannot run it (precision_refusal).
  void set_precision(Precision precision);

  // Waits until all work queued on this context's stream is done (no-op on CPU).
  void synchronize() const;

  // Who hears that a layer's backward moved on to its parameter gradients
  // (graph/step_spans.h sets itself here while it records a step); null: no one.
  void set_pass_observer(PassObserver* observer) { pass_observer_ = observer; }
  // Called by a split backward (Layer::splits_backward) between its input
  // gradient and its parameter gradients: Pass::kBackwardWeights.
  void switch_pass(Pass pass) const {
    if (pass_observer_) pass_observer_->switch_pass(pass);
  }

  // The stream and handles; null for a CPU context. Used by *_cuda.cpp files.
  CudaResources* cuda_state() const { return cuda_.get(); }

 private:
  Context(Device device, uint64_t seed);

  Device device_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  Precision precision_ = Precision::kFp32;
  Replica replica_;
  PassObserver* pass_observer_ = nullptr;  // not owned
  std::shared_ptr<CudaResources> cuda_;  // shared with the CUDA allocator, which frees on its stream
  std::shared_ptr<Allocator> allocator_;
  std::shared_ptr<Buffer> workspace_;
};

}  // namespace glassbox
