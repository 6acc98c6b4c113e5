// tensor/device.h: where a tensor lives: the host ("cpu") or CUDA device n ("cuda:n").
#pragma once

#include <string>
#include <string_view>

namespace glassbox {

enum class DeviceKind { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::kCpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::kCuda, index}; }
  // "cpu", "cuda" (= cuda:0) or "cuda:N"; throws ConfigError naming `what`
  // (the flag: "--device") and the valid forms. Whether device N exists is
  // for the caller to check (choose_device in tensor/context.h).
  static Device parse(std::string_view text, std::string_view what = "device");

  bool is_cuda() const { return kind == DeviceKind::kCuda; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace glassbox
