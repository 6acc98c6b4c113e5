// tests/support/devices.cpp
#include "tests/support/devices.h"

#include <cstdlib>

namespace glassbox::testing {

std::vector<Device> all_devices() { return {Device::cpu(), Device::cuda(0)}; }

std::string device_label(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cuda() ? "cuda" : "cpu";
}

std::string cuda_skip_reason() {
  static const CudaAvailability availability = cuda_availability();
  if (availability.usable) return "";
  return "no usable CUDA device (" + availability.reason + "): GPU test not run";
}

bool gpu_required() {
  const char* value = std::getenv("GLASSBOX_REQUIRE_GPU");
  return value != nullptr && std::string(value) == "1";
}

void DeviceTest::SetUp() {
  if (GetParam().is_cuda()) GLASSBOX_REQUIRE_CUDA();
  ctx_.emplace(Context::on(GetParam()));
}

}  // namespace glassbox::testing
