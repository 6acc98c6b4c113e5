// tensor/allocator.h: device memory with accounting. Every byte Glassbox
// allocates is tagged with what it is for, so reports can show memory by
// category and its high-water mark (peak), per device.
//
// The CPU allocator is aligned malloc. The CUDA allocator is cudaMallocAsync on
// the device's memory pool with its release threshold raised: the pool is
// CUDA's own caching allocator, so Glassbox does not write one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
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

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;

  // Throws Error naming the device, the size, the category and what is in use.
  void* allocate(size_t bytes, MemoryCategory category);
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) noexcept;

  MemoryStats stats() const;
  void reset_peak();

 private:
  virtual void* raw_allocate(size_t bytes) = 0;  // returns nullptr when out of memory
  virtual void raw_deallocate(void* ptr) noexcept = 0;

  mutable std::mutex mutex_;
  MemoryStats stats_;
};

std::shared_ptr<Allocator> make_cpu_allocator();

// Formats a byte count for people: "512 B", "3.2 MiB", "1.25 GiB".
std::string format_bytes(int64_t bytes);

}  // namespace glassbox
