// tensor/machine_load.cpp: the work other processes put on this process's
// cores (tensor/machine_load.h).
#include "tensor/machine_load.h"

#include <omp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "tensor/error.h"

namespace glassbox {
namespace {

// A core counts as free while other work keeps it at most this busy: a
// single busy process reads 1.0 of a core, an idle machine 0 to 0.01.
constexpr double kFreeCoreSlack = 0.5;

// How long a measuring program watches the cores (Note [Too short to tell]).
constexpr double kWatchSeconds = kShortestBusyWindow;

std::string two_places(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// The cores that other work keeps at most half busy (may be 0 or fewer).
int free_cores(int cores, double others_busy) {
  return static_cast<int>(std::floor(static_cast<double>(cores) - others_busy + kFreeCoreSlack));
}

}  // namespace

std::vector<int> usable_core_ids() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> ids;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int core = 0; core < CPU_SETSIZE; ++core) {
      if (CPU_ISSET(core, &allowed)) ids.push_back(core);
    }
  }
  if (ids.empty()) {
    const int machine = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    for (int core = 0; core < machine; ++core) ids.push_back(core);
  }
  return ids;
}

int usable_cores() { return static_cast<int>(usable_core_ids().size()); }

std::optional<double> busy_seconds_in(std::string_view proc_stat, const std::vector<int>& cores,
                                      double ticks_per_second) {
  std::istringstream lines{std::string(proc_stat)};
  std::string line;
  double ticks = 0.0;
  bool found = false;
  while (std::getline(lines, line)) {
    // "cpuN": a core's own line; the first line, "cpu ", sums them all.
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int core = -1;
    // user nice system idle iowait irq softirq steal
    std::array<double, 8> t{};
    if (!(fields >> core)) continue;
    if (std::find(cores.begin(), cores.end(), core) == cores.end()) continue;
    bool complete = true;
    for (double& value : t) complete = complete && static_cast<bool>(fields >> value);
    if (!complete) continue;
    ticks += t[0] + t[1] + t[2] + t[5] + t[6] + t[7];  // everything but idle and iowait
    found = true;
  }
  if (!found) return std::nullopt;
  return ticks / ticks_per_second;
}

std::optional<CpuTimes> read_cpu_times() {
  std::ifstream in("/proc/stat");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const long ticks = sysconf(_SC_CLK_TCK);
  const std::vector<int> cores = usable_core_ids();
  const std::optional<double> busy = busy_seconds_in(text.str(), cores, static_cast<double>(ticks > 0 ? ticks : 100));
  timespec own{};
  if (!busy || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own) != 0) return std::nullopt;
  return CpuTimes{
      .wall = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(),
      .busy = *busy,
      .own = static_cast<double>(own.tv_sec) + static_cast<double>(own.tv_nsec) * 1e-9,
      .cores = static_cast<int>(cores.size())};
}

std::optional<double> others_busy_cores(const CpuTimes& start, const CpuTimes& end) {
  const double wall = end.wall - start.wall;
  if (!(wall >= kShortestBusyWindow)) return std::nullopt;
  const double others = std::max(0.0, ((end.busy - start.busy) - (end.own - start.own)) / wall);
  const int cores = std::max(start.cores, end.cores);
  return cores > 0 ? std::min(others, static_cast<double>(cores)) : others;
}

int threads_beside(int most, int cores, double others_busy) {
  return std::clamp(free_cores(cores, others_busy), 1, std::max(1, most));
}

std::optional<double> watch_others_busy(double seconds) {
  const std::optional<CpuTimes> start = read_cpu_times();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::optional<CpuTimes> end = read_cpu_times();
  if (!start || !end) return std::nullopt;
  return others_busy_cores(*start, *end);
}

ThreadFit fit_threads_to_free_cores(int asked, double seconds) {
  ThreadFit fit{.asked = asked, .used = asked, .cores = usable_cores(), .others_busy = watch_others_busy(seconds)};
  if (!fit.others_busy) return fit;
  fit.used = threads_beside(asked, fit.cores, *fit.others_busy);
  if (fit.used != asked) omp_set_num_threads(fit.used);
  return fit;
}

std::string describe(const ThreadFit& fit) {
  if (fit.used == fit.asked || !fit.others_busy) return "";
  const std::string running = cat("running ", fit.used, " thread", fit.used == 1 ? "" : "s", " instead of ", fit.asked);
  const std::string keeps = cat(" (--fixed-threads keeps ", fit.asked, ")");
  const std::string cores = cat(fit.cores, " core", fit.cores == 1 ? "" : "s");
  if (free_cores(fit.cores, *fit.others_busy) < fit.cores) {
    return cat("other processes keep ", two_places(*fit.others_busy), " of ", cores, " busy: ", running,
               ", one per free core, since a thread beside their work holds up every kernel", keeps);
  }
  return cat(fit.asked, " threads asked for on ", cores, ": ", running,
             ", one per core, since two threads sharing a core hold up every kernel", keeps);
}

std::string fit_measuring_threads(bool on_cpu, bool fixed) {
  if (!on_cpu) return "";
  const int asked = omp_get_max_threads();
  if (!fixed) return describe(fit_threads_to_free_cores(asked, kWatchSeconds));
  const std::optional<double> others = watch_others_busy(kWatchSeconds);
  const int cores = usable_cores();
  // More threads than cores, asked for with --fixed-threads, are the user's choice, not other work's doing.
  if (!others || free_cores(cores, *others) >= std::min(asked, cores)) return "";
  return cat("warning: other processes keep ", two_places(*others), " of ", cores, " core", cores == 1 ? "" : "s",
             " busy, more than ", asked, " thread", asked == 1 ? "" : "s",
             " can run beside (--fixed-threads): the timings will read slow and vary");
}

std::string others_busy_warning(double others_busy, int cores, int threads) {
  if (free_cores(cores, others_busy) >= std::min(threads, cores)) return "";
  return cat("other processes kept ", two_places(others_busy), " of ", cores, " core", cores == 1 ? "" : "s",
             " busy while the steps were timed, more than ", threads, " thread", threads == 1 ? "" : "s",
             " can run beside: the timings read slow and vary");
}

}  // namespace glassbox
