// tensor/nvml_cuda.cpp: the GPU's clocks, power, temperature, throttle
// reasons and energy counter through NVML (tensor/machine_state.h).
//
// Note [NVML by dlopen]: libnvidia-ml.so.1 ships with the driver, not with
// the CUDA toolkit (which has no nvml.h here either), and linking it would
// make a machine without the driver refuse to start the binary at all. So it
// is opened at run time, and the handful of entry points used are declared
// below with the signatures of NVML's public API: every NVML call returns an
// int status (0 is success), devices are opaque handles, clocks are MHz,
// power is milliwatts, energy is millijoules since the driver loaded.
#include <dlfcn.h>

#include <cuda_runtime.h>

#include "tensor/context_cuda.h"
#include "tensor/error.h"
#include "tensor/machine_state.h"

namespace glassbox::cuda_entry {
namespace {

using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr unsigned kClockSm = 1;      // NVML_CLOCK_SM
constexpr unsigned kClockMemory = 2;  // NVML_CLOCK_MEM
constexpr unsigned kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

struct Nvml {
  void* library = nullptr;
  int (*init)() = nullptr;
  int (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*clock)(NvmlDevice, unsigned, unsigned*) = nullptr;
  int (*power)(NvmlDevice, unsigned*) = nullptr;
  int (*temperature)(NvmlDevice, unsigned, unsigned*) = nullptr;
  int (*throttle)(NvmlDevice, unsigned long long*) = nullptr;
  int (*energy)(NvmlDevice, unsigned long long*) = nullptr;
  std::string missing;  // why NVML cannot be used ("" when it can)
};

template <typename Function>
bool load(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  return function != nullptr;
}

// Opened once per process and kept: NVML's own initialisation is slow.
const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    n.library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n.library) {
      n.missing = cat("cannot open libnvidia-ml.so.1 (", dlerror(), ")");
      return n;
    }
    const bool all = load(n.library, "nvmlInit_v2", n.init) &&
                     load(n.library, "nvmlDeviceGetHandleByPciBusId_v2", n.by_pci_bus_id) &&
                     load(n.library, "nvmlDeviceGetClockInfo", n.clock) &&
                     load(n.library, "nvmlDeviceGetPowerUsage", n.power) &&
                     load(n.library, "nvmlDeviceGetTemperature", n.temperature) &&
                     load(n.library, "nvmlDeviceGetCurrentClocksThrottleReasons", n.throttle);
    if (!all) {
      n.missing = "libnvidia-ml.so.1 lacks an entry point Glassbox reads (too old a driver?)";
      return n;
    }
    load(n.library, "nvmlDeviceGetTotalEnergyConsumption", n.energy);  // Volta and later only
    if (const int status = n.init(); status != 0) n.missing = cat("nvmlInit_v2 failed with status ", status);
    return n;
  }();
  return loaded;
}

}  // namespace

std::optional<GpuSample> sample_gpu(const Context& ctx, std::string& why) {
  const Nvml& n = nvml();
  if (!n.missing.empty()) {
    why = n.missing;
    return std::nullopt;
  }
  char bus_id[64] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, cuda_resources(ctx).device) != cudaSuccess) {
    (void)cudaGetLastError();
    why = "cudaDeviceGetPCIBusId failed";
    return std::nullopt;
  }
  NvmlDevice device = nullptr;
  if (const int status = n.by_pci_bus_id(bus_id, &device); status != 0) {
    why = cat("NVML does not know the GPU at ", bus_id, " (status ", status, ")");
    return std::nullopt;
  }
  GpuSample g;
  unsigned milliwatts = 0;
  unsigned long long reasons = 0;
  if (n.clock(device, kClockSm, &g.sm_mhz) != 0 || n.clock(device, kClockMemory, &g.memory_mhz) != 0 ||
      n.power(device, &milliwatts) != 0 || n.temperature(device, kTemperatureGpu, &g.temperature_c) != 0 ||
      n.throttle(device, &reasons) != 0) {
    why = "NVML could not read the GPU's clocks, power, temperature or throttle reasons";
    return std::nullopt;
  }
  g.power_w = milliwatts / 1e3;
  g.throttle = throttle_reasons(reasons);
  unsigned long long millijoules = 0;
  if (n.energy && n.energy(device, &millijoules) == 0) g.energy_j = static_cast<double>(millijoules) / 1e3;
  return g;
}

}  // namespace glassbox::cuda_entry
