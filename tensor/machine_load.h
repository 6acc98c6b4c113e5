// tensor/machine_load.h: whether other work shares this machine's cores
// when a run starts, read from /proc/loadavg.
//
// Timings from a loaded machine read slow, and more so with more threads: an
// OpenMP team whose threads share cores with other processes waits at every
// barrier for the thread that was descheduled (libgomp spins, then sleeps),
// so a step can take many times longer on 2 threads than on 1. A run that
// measures says so at its start, in words, rather than print figures that
// look like the machine's own.
#pragma once

#include <optional>
#include <string>

namespace glassbox {

// The one-minute load average (runnable processes, this one included), or
// nullopt where /proc/loadavg cannot be read.
std::optional<double> machine_load();

// The cores this process may run on (its affinity mask; the machine's count
// where the mask cannot be read).
int usable_cores();

// "" where `load` is at most `cores` plus this run's own share, else a warning
// naming both and what follows for the timings and for `threads`.
std::string load_warning(double load, int cores, int threads);

// load_warning for this machine, now; "" where the load cannot be read.
std::string machine_load_warning(int threads);

}  // namespace glassbox
