// tensor/allocator.cpp: accounting shared by every allocator, and the CPU one.
#include "tensor/allocator.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "tensor/error.h"

namespace glassbox {

std::string_view name_of(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParameters: return "parameters";
    case MemoryCategory::kGradients: return "gradients";
    case MemoryCategory::kOptimizerState: return "optimizer state";
    case MemoryCategory::kActivations: return "activations";
    case MemoryCategory::kActivationGrads: return "activation gradients";
    case MemoryCategory::kLayerState: return "layer state";
    case MemoryCategory::kWorkspace: return "workspace";
    case MemoryCategory::kData: return "data";
  }
  return "?";
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
  return text;
}

void* Allocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) bytes = 1;  // a valid, distinct pointer even for empty requests
  void* ptr = raw_allocate(bytes);
  std::lock_guard lock(mutex_);
  if (ptr == nullptr) {
    throw OutOfMemoryError(cat(device().str(), ": out of memory allocating ", format_bytes(bytes), " of ",
                    name_of(category), " (", format_bytes(stats_.current_total),
                    " already in use by Glassbox)"));
  }
  const auto c = static_cast<size_t>(category);
  stats_.current[c] += static_cast<int64_t>(bytes);
  stats_.peak[c] = std::max(stats_.peak[c], stats_.current[c]);
  stats_.current_total += static_cast<int64_t>(bytes);
  stats_.peak_total = std::max(stats_.peak_total, stats_.current_total);
  return ptr;
}

void Allocator::deallocate(void* ptr, size_t bytes, MemoryCategory category) noexcept {
  if (bytes == 0) bytes = 1;
  raw_deallocate(ptr);
  std::lock_guard lock(mutex_);
  stats_.current[static_cast<size_t>(category)] -= static_cast<int64_t>(bytes);
  stats_.current_total -= static_cast<int64_t>(bytes);
}

MemoryStats Allocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Allocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak = stats_.current;
  stats_.peak_total = stats_.current_total;
}

namespace {

class CpuAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu(); }

 private:
  // 256-byte alignment, as cudaMallocAsync gives: a tensor the graph places at
  // a 256-byte offset is then 256-byte aligned on either device (and a whole
  // number of cache lines and AVX-512 vectors).
  static constexpr size_t kAlignment = 256;
  void* raw_allocate(size_t bytes) override {
    return ::operator new(bytes, std::align_val_t{kAlignment}, std::nothrow);
  }
  void raw_deallocate(void* ptr) noexcept override {
    ::operator delete(ptr, std::align_val_t{kAlignment});
  }
};

}  // namespace

std::shared_ptr<Allocator> make_cpu_allocator() { return std::make_shared<CpuAllocator>(); }

}  // namespace glassbox
