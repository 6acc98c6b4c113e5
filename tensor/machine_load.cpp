// tensor/machine_load.cpp: the load this machine carries (tensor/machine_load.h).
#include "tensor/machine_load.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>

#include "tensor/error.h"

namespace glassbox {

std::optional<double> machine_load() {
  std::ifstream in("/proc/loadavg");
  double one_minute = 0.0;
  if (!(in >> one_minute)) return std::nullopt;
  return one_minute;
}

int usable_cores() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  return std::max(1, CPU_COUNT(&allowed));
}

std::string load_warning(double load, int cores, int threads) {
  // A load of `cores` is a machine whose cores are all busy: above it, some
  // runnable process waits. Half a core of slack keeps a load that is still
  // settling from a build or a previous run from warning.
  if (load <= static_cast<double>(cores) + 0.5) return "";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f", load);
  std::string warning = cat("the machine's load is ", text, " on ", cores, " core", cores == 1 ? "" : "s",
                            ": other processes are running, so timings will read slow and vary");
  if (threads > 1) {
    warning += cat("; with ", threads, " threads each step waits for the slowest of them (--threads 1 suffers least)");
  }
  return warning;
}

std::string machine_load_warning(int threads) {
  const std::optional<double> load = machine_load();
  return load ? load_warning(*load, usable_cores(), threads) : "";
}

}  // namespace glassbox
