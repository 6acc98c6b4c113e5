// tensor/machine_state.h: the state of the machine a result was measured on,
// read before and after the timed steps: clocks, power, temperature and
// throttle reasons of the GPU (NVML), the CPU's frequency, and energy from
// the hardware's counters, so a result says whether the device ran at full
// clock and what a trained image cost in joules.
//
// On a GPU: NVML, opened at run time with dlopen (tensor/nvml_cuda.cpp), so a
// binary built with CUDA still runs where the driver's libnvidia-ml is
// missing; energy is NVML's total-energy counter (millijoules since the
// driver loaded), read at both ends. On the CPU: the mean "cpu MHz" of
// /proc/cpuinfo, and the package energy counter of Linux's powercap (RAPL:
// /sys/class/powercap/intel-rapl:0/energy_uj, which AMD processors expose too
// on recent kernels). What cannot be read says "not available" and why.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/context.h"
#include "tensor/machine_load.h"

namespace glassbox {

struct GpuSample {
  unsigned sm_mhz = 0;
  unsigned memory_mhz = 0;
  double power_w = 0.0;
  unsigned temperature_c = 0;
  std::string throttle;                 // "none", or the active reasons: "sw power cap, hw slowdown"
  std::optional<double> energy_j;       // the counter's value; differences are what count
};

struct MachineSample {
  double seconds = 0.0;                 // steady clock, for power from energy
  double cpu_mhz = 0.0;                 // mean over the cores; 0 where unknown
  std::optional<double> cpu_energy_j;   // RAPL package counter
  double cpu_energy_range_j = 0.0;      // where the counter wraps
  std::string cpu_energy_missing;       // why there is none
  std::optional<CpuTimes> cpu_times;    // the usable cores' busy time and this process's (tensor/machine_load.h)
  std::optional<GpuSample> gpu;         // a CUDA context's device
  std::string gpu_missing;              // why there is none (a CUDA context only)
};

MachineSample sample_machine(const Context& ctx);

// Cores' worth of other processes' work between two samples
// (others_busy_cores); nullopt where /proc/stat was not read at both, or the
// samples are too close to tell (Note [Too short to tell]).
std::optional<double> others_busy_between(const MachineSample& start, const MachineSample& end);

// (key, value) pairs for reports: the readings at start and end, the other
// processes' work in between ("other_work"), and the
// energy over the interval per image where a counter was read at both ends
// ("not available: ..." where not).
std::vector<std::pair<std::string, std::string>> machine_fields(const MachineSample& start, const MachineSample& end,
                                                                 int64_t images);

// Joules per image over the interval, from a counter read at both ends (a
// RAPL counter that wrapped once is unwrapped); nullopt where there is none.
std::optional<double> cpu_joules_per_image(const MachineSample& start, const MachineSample& end, int64_t images);
std::optional<double> gpu_joules_per_image(const MachineSample& start, const MachineSample& end, int64_t images);

// A throttle-reasons bit mask (NVML's nvmlClocksThrottleReasons) in words.
std::string throttle_reasons(unsigned long long mask);

namespace cuda_entry {
// NVML's reading of ctx's GPU; nullopt with `why` set where NVML cannot be
// opened or read.
std::optional<GpuSample> sample_gpu(const Context& ctx, std::string& why);
}  // namespace cuda_entry

}  // namespace glassbox
