// tensor/allocator.h: device memory with accounting. Every byte Glassbox
// allocates is tagged with what it is for, so reports can show memory by
// category and its high-water mark (peak), per device.
//
// The CPU allocator is aligned malloc, with every page written once at
// allocation (Note [First touch]). The CUDA allocator is cudaMallocAsync on
// the device's memory pool with its release threshold raised: the pool is
// CUDA's own caching allocator, so Glassbox does not write one. Both refuse a
// request larger than what the device has available, before making it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "tensor/device.h"

namespace glassbox {

enum class MemoryCategory {
  kParameters,         // learnable weights (one flat buffer per graph)
  kGradients,          // their gradients (one flat buffer, same layout)
  kOptimizerState,     // momentum and friends
  kActivations,        // every layer's output
  kActivationGrads,    // gradients with respect to those outputs
  kLayerState,         // what layers keep: saved statistics, masks, running means
  kWorkspace,          // scratch shared by layers in turn (im2col tiles, cuDNN workspace)
  kData,               // inputs and labels
};
inline constexpr int kMemoryCategoryCount = 8;
std::string_view name_of(MemoryCategory category);

struct MemoryStats {
  std::array<int64_t, kMemoryCategoryCount> current{};  // bytes in use now, by category
  std::array<int64_t, kMemoryCategoryCount> peak{};     // most ever in use, by category
  int64_t current_total = 0;
  int64_t peak_total = 0;  // high-water mark of the sum (not the sum of the peaks)
};

// Memory a device can still hand out, and where that figure comes from.
struct DeviceMemory {
  int64_t available = std::numeric_limits<int64_t>::max();  // max(): unknown
  std::string source;  // "MemAvailable", "cudaMemGetInfo + pool", "limit of 100.00 MiB"
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;

  // Throws OutOfMemoryError naming the device, the size, the category, what
  // is available and what Glassbox already holds, by category, when the
  // request is larger than what is available or the device refuses it.
  void* allocate(size_t bytes, MemoryCategory category);
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) noexcept;

  MemoryStats stats() const;
  void reset_peak();

  // What can still be allocated: the device's free memory (tensor/host_memory.h
  // on the CPU; the GPU's free memory plus its pool's unused blocks), capped
  // by the limit when one is set.
  DeviceMemory available() const;
  // Caps the bytes this allocator holds at once (0: no cap). For finding the
  // largest batch that fits a smaller device, and for tests.
  void set_limit(int64_t bytes);

  // "out of memory on cpu: allocating 20.08 GiB of activations; 18.50 GiB
  // available (MemAvailable); Glassbox holds 1.03 GiB (parameters ..., ...)":
  // what an OutOfMemoryError says, for the graph's plan check too.
  std::string out_of_memory_message(const std::string& request) const;

 private:
  // Throws where no allocation may be made now (a GPU stream being captured),
  // before anything asks the device what it has.
  virtual void check_can_allocate(size_t /*bytes*/) const {}
  virtual void* raw_allocate(size_t bytes) = 0;  // returns nullptr when out of memory
  virtual void raw_deallocate(void* ptr) noexcept = 0;
  virtual DeviceMemory device_memory() const = 0;

  mutable std::mutex mutex_;
  MemoryStats stats_;
  int64_t limit_ = 0;
};

std::shared_ptr<Allocator> make_cpu_allocator();

// Formats a byte count for people: "512 B", "3.2 MiB", "1.25 GiB".
std::string format_bytes(int64_t bytes);

}  // namespace glassbox
