// bench/support/machine_counters.cpp
#include "bench/support/machine_counters.h"

#include "bench/support/google_benchmark.h"
#include "tensor/error.h"

namespace glassbox::bench {

void add_machine_counters(benchmark::State& state, const MachineSample& start, const MachineSample& end,
                          int64_t images) {
  if (end.cpu_mhz > 0) state.counters["cpu_mhz"] = end.cpu_mhz;
  if (const auto others = others_busy_between(start, end)) state.counters["other_cpus"] = *others;
  if (const auto joules = cpu_joules_per_image(start, end, images)) state.counters["cpu_J_per_image"] = *joules;
  if (!start.gpu || !end.gpu) return;
  state.counters["sm_mhz_start"] = start.gpu->sm_mhz;
  state.counters["sm_mhz_end"] = end.gpu->sm_mhz;
  state.counters["mem_mhz"] = end.gpu->memory_mhz;
  state.counters["gpu_power_w"] = end.gpu->power_w;
  state.counters["gpu_temp_c"] = end.gpu->temperature_c;
  state.counters["gpu_throttled"] = end.gpu->throttle != "none" && end.gpu->throttle != "gpu idle" ? 1 : 0;
  if (const auto joules = gpu_joules_per_image(start, end, images)) state.counters["gpu_J_per_image"] = *joules;
}

void add_machine_context(const MachineSample& now) {
  add_context("cpu_mhz_at_start", now.cpu_mhz > 0 ? cat(static_cast<int>(now.cpu_mhz + 0.5))
                                                                   : std::string("not available"));
  add_context("cpu_energy", now.cpu_energy_j ? "RAPL package 0 (powercap): cpu_J_per_image counters"
                                                             : now.cpu_energy_missing);
  if (now.gpu) {
    add_context(
        "gpu_at_start", cat("SM ", now.gpu->sm_mhz, " MHz, memory ", now.gpu->memory_mhz, " MHz, ",
                            now.gpu->power_w, " W, ", now.gpu->temperature_c, " C, throttle: ", now.gpu->throttle));
  } else if (!now.gpu_missing.empty()) {
    add_context("gpu_state", "not available: " + now.gpu_missing);
  }
}

}  // namespace glassbox::bench
