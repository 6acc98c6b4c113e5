// tests/support/devices.h: running a test on every device.
//
//   class PoolTest : public glassbox::testing::DeviceTest {};
//   TEST_P(PoolTest, ...) { Context& ctx = this->ctx(); ... }
//   GLASSBOX_INSTANTIATE_ON_DEVICES(PoolTest);
//
// On a machine without a usable GPU the CUDA instance is skipped, visibly, with
// the reason (GTEST_SKIP), never passed silently.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tensor/context.h"

namespace glassbox {
// How gtest prints a Device parameter: "cpu", "cuda:0".
inline void PrintTo(const Device& device, std::ostream* out) { *out << device.str(); }
}  // namespace glassbox

namespace glassbox::testing {

std::vector<Device> all_devices();
std::string device_label(const ::testing::TestParamInfo<Device>& info);
// Empty if CUDA can run here; otherwise why not, for GTEST_SKIP.
std::string cuda_skip_reason();
// True when GLASSBOX_REQUIRE_GPU=1: GPU tests must run, not skip.
bool gpu_required();

class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override;
  Context& ctx() { return *ctx_; }
  std::optional<Context> ctx_;
};

}  // namespace glassbox::testing

#define GLASSBOX_INSTANTIATE_ON_DEVICES(Suite)                                          \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite,                                              \
                           ::testing::ValuesIn(::glassbox::testing::all_devices()),     \
                           ::glassbox::testing::device_label)

// Skips the current test, with the reason, unless a CUDA device can run here.
// With GLASSBOX_REQUIRE_GPU=1 in the environment (tools/gpu_check.sh sets it)
// the test fails instead: on a GPU machine a skipped GPU test is a bug.
#define GLASSBOX_REQUIRE_CUDA()                                                          \
  do {                                                                                   \
    const std::string glassbox_reason_ = ::glassbox::testing::cuda_skip_reason();         \
    if (!glassbox_reason_.empty()) {                                                     \
      if (::glassbox::testing::gpu_required()) GTEST_FAIL() << glassbox_reason_;         \
      GTEST_SKIP() << glassbox_reason_;                                                  \
    }                                                                                    \
  } while (0)
