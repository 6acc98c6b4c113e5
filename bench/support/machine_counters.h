// bench/support/machine_counters.h: the machine's state over a benchmark's
// timed steps as counters (tensor/machine_state.h), so each row of
// bench_nets says at what clock it ran and, where a counter exists, what an
// image cost in joules.
#pragma once

#include <benchmark/benchmark.h>

#include "tensor/machine_state.h"

namespace glassbox::bench {

// cpu_mhz (the mean at the end); other_cpus (cores' worth of other
// processes' work over the steps, Note [Threads on a shared machine]);
// cpu_J_per_image where RAPL is readable; on a GPU sm_mhz_start,
// sm_mhz_end, mem_mhz, gpu_power_w and gpu_temp_c (at the
// end), gpu_throttled (1 if any throttle reason other than idle was active at
// the end) and gpu_J_per_image where NVML's energy counter is read.
void add_machine_counters(benchmark::State& state, const MachineSample& start, const MachineSample& end,
                          int64_t images);

// The machine at the start of the run, for the benchmark context: the CPU's
// frequency and energy source, and the GPU's clocks, power and temperature.
void add_machine_context(const MachineSample& now);

}  // namespace glassbox::bench
