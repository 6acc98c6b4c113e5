// tensor/allocator.cpp: accounting shared by every allocator, and the CPU one.
#include "tensor/allocator.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>

#include "tensor/error.h"
#include "tensor/host_memory.h"

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
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};  // 2^63 bytes is 8 EiB
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (std::abs(value) >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
  return text;
}

namespace {
// Requests from this size up are compared with what the device has available
// before they are made (reading it costs a file read or a driver call);
// smaller ones only where a limit is set. The graph's plan check covers the
// sum of the small ones.
constexpr size_t kCheckAvailableFrom = size_t{1} << 20;
}  // namespace

void* Allocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) bytes = 1;  // a valid, distinct pointer even for empty requests
  const auto request = [&] { return cat("allocating ", format_bytes(static_cast<int64_t>(bytes)), " of ", name_of(category)); };
  check_can_allocate(bytes);
  const bool check = bytes >= kCheckAvailableFrom || limit_ > 0;
  if (check && (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max()) ||
                static_cast<int64_t>(bytes) > available().available)) {
    throw OutOfMemoryError(out_of_memory_message(request()));
  }
  void* ptr = raw_allocate(bytes);
  if (ptr == nullptr) throw OutOfMemoryError(out_of_memory_message(request()));
  std::lock_guard lock(mutex_);
  const auto c = static_cast<size_t>(category);
  stats_.current[c] += static_cast<int64_t>(bytes);
  stats_.peak[c] = std::max(stats_.peak[c], stats_.current[c]);
  stats_.current_total += static_cast<int64_t>(bytes);
  stats_.peak_total = std::max(stats_.peak_total, stats_.current_total);
  return ptr;
}

DeviceMemory Allocator::available() const {
  DeviceMemory memory = device_memory();
  std::lock_guard lock(mutex_);
  if (limit_ > 0 && limit_ - stats_.current_total < memory.available) {
    memory = {std::max<int64_t>(0, limit_ - stats_.current_total), cat("limit of ", format_bytes(limit_))};
  }
  return memory;
}

void Allocator::set_limit(int64_t bytes) {
  std::lock_guard lock(mutex_);
  limit_ = std::max<int64_t>(0, bytes);
}

std::string Allocator::out_of_memory_message(const std::string& request) const {
  const DeviceMemory memory = available();
  const MemoryStats held = stats();
  std::string text = cat(device().str(), ": out of memory ", request, "; ");
  text += memory.available == std::numeric_limits<int64_t>::max()
              ? "the device refused it"
              : cat(format_bytes(memory.available), " available (", memory.source, ")");
  text += cat("; Glassbox holds ", format_bytes(held.current_total));
  std::string parts;
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    const int64_t bytes = held.current[static_cast<size_t>(c)];
    if (bytes > 0) parts += cat(parts.empty() ? "" : ", ", name_of(static_cast<MemoryCategory>(c)), " ", format_bytes(bytes));
  }
  return parts.empty() ? text : cat(text, " (", parts, ")");
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

// Note [First touch]: Linux hands out address space, not memory: a large
// allocation succeeds whatever is free, and pages are found only when first
// written, by which time the process may be in the middle of a step, and the
// kernel's answer to a shortage is to kill it. Writing one byte per page here
// makes a shortage show up at allocation, at compile time, where the check
// against MemAvailable has already refused what clearly cannot fit.
class CpuAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu(); }

 private:
  // 256-byte alignment, as cudaMallocAsync gives: a tensor the graph places at
  // a 256-byte offset is then 256-byte aligned on either device (and a whole
  // number of cache lines and AVX-512 vectors).
  static constexpr size_t kAlignment = 256;
  static constexpr size_t kPage = 4096;  // the smallest x86-64 and ARM64 page
  void* raw_allocate(size_t bytes) override {
    void* ptr = ::operator new(bytes, std::align_val_t{kAlignment}, std::nothrow);
    if (ptr != nullptr) {
      auto* byte = static_cast<volatile char*>(ptr);
      for (size_t at = 0; at < bytes; at += kPage) byte[at] = 0;
    }
    return ptr;
  }
  void raw_deallocate(void* ptr) noexcept override {
    ::operator delete(ptr, std::align_val_t{kAlignment});
  }
  DeviceMemory device_memory() const override {
    const AvailableMemory host = host_available_memory();
    return {host.bytes, host.source};
  }
};

}  // namespace

std::shared_ptr<Allocator> make_cpu_allocator() { return std::make_shared<CpuAllocator>(); }

}  // namespace glassbox
