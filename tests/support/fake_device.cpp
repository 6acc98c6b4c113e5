// tests/support/fake_device.cpp
#include "tests/support/fake_device.h"

#include <cstdlib>

namespace glassbox::testing {
namespace {

class HostMemoryClaiming final : public Allocator {
 public:
  explicit HostMemoryClaiming(Device device) : device_(device) {}
  Device device() const override { return device_; }

 private:
  void* raw_allocate(size_t bytes) override { return std::malloc(bytes); }
  void raw_deallocate(void* ptr) noexcept override { std::free(ptr); }
  DeviceMemory device_memory() const override { return {}; }  // unknown: never refuses

  Device device_;
};

}  // namespace

Tensor tensor_claiming(Device device, Shape shape, DType dtype) {
  const size_t bytes = static_cast<size_t>(shape.numel()) * size_of(dtype);
  auto buffer = std::make_shared<Buffer>(std::make_shared<HostMemoryClaiming>(device), bytes, MemoryCategory::kData);
  return Tensor(std::move(buffer), 0, std::move(shape), dtype);
}

}  // namespace glassbox::testing
