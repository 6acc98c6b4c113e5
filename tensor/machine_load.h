// tensor/machine_load.h: how much of this process's cores other work keeps
// busy, read from /proc/stat, and the CPU thread count that follows from it.
//
// Note [Threads on a shared machine]: every CPU kernel splits its work into
// one equal share per OpenMP thread, fixed when it is compiled (oneDNN's
// primitives, the convolution and linear plans) or when it starts (the
// parallel loops), and each kernel ends when its last share does. A thread
// that shares its core with another busy process runs at half speed at best,
// or is paused for whole scheduler time slices, and every kernel waits for
// it: beside one busy process on 2 cores, 2 threads ran AlexNet's step at
// 0.65 of the speed of 1 thread, and no OpenMP wait policy recovers it
// (bench/probes/threads_under_load.txt). Equal shares cannot use part of a
// core, so the measuring programs (`glassbox time`, `trace`, `sweep`,
// bench_nets) watch the cores for a moment before they compile and run one
// thread fewer for each core's worth of other work (threads_beside), saying
// so; --fixed-threads keeps the count asked for. Training keeps the count it is
// given: the thread count changes a run's bits (docs/determinism.md), and a
// run's bits must not depend on what else ran at its start.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox {

// The cores this process may run on (its affinity mask; every core of the
// machine where the mask cannot be read).
std::vector<int> usable_core_ids();
int usable_cores();

// Counters of CPU time at one instant, in seconds.
struct CpuTimes {
  double wall = 0.0;  // steady clock
  double busy = 0.0;  // the usable cores' time not idle since boot (user, nice, system, irq, softirq, steal)
  double own = 0.0;   // this process's CPU time, every thread
  int cores = 0;      // the usable cores `busy` counts (0: not known)
};

// This machine's counters now; nullopt where /proc/stat cannot be read.
std::optional<CpuTimes> read_cpu_times();

// The busy seconds of the per-core lines ("cpuN user nice system idle iowait
// irq softirq steal ...") of /proc/stat text whose N is in `cores`, at
// `ticks_per_second` (USER_HZ); nullopt where none of them is there.
std::optional<double> busy_seconds_in(std::string_view proc_stat, const std::vector<int>& cores,
                                      double ticks_per_second);

// Note [Too short to tell]: /proc/stat counts each core's time in ticks of
// USER_HZ (10 ms), this process's own time in nanoseconds, so a reading over
// a few ticks is mostly rounding (`glassbox time LeNet --steps 3` read 3.78
// cores of other work on 2). Over kShortestBusyWindow (25 ticks) the
// rounding, at most a tick a core at each end, is under a tenth of a core per
// core.
inline constexpr double kShortestBusyWindow = 0.25;

// Cores' worth of work of other processes between two readings: the cores'
// busy time that this process did not spend, per second, between 0 and the
// cores counted. Steal counts: on a virtual machine it is time another guest
// had the core. nullopt for readings less than kShortestBusyWindow apart.
std::optional<double> others_busy_cores(const CpuTimes& start, const CpuTimes& end);

// The threads to use beside `others_busy` cores of other work: one per free
// core, where a core more than half busy with other work is not free, and
// between 1 and `most`.
int threads_beside(int most, int cores, double others_busy);

// What fit_threads_to_free_cores found and chose.
struct ThreadFit {
  int asked = 1;                       // the count before (--threads, OMP_NUM_THREADS or one per core)
  int used = 1;                        // the count set
  int cores = 1;                       // usable_cores()
  std::optional<double> others_busy;   // nullopt where /proc/stat cannot be read (then used == asked)
};

// Cores' worth of other processes' work over the next `seconds`, this
// process idle meanwhile; nullopt where /proc/stat cannot be read, or for
// `seconds` under kShortestBusyWindow.
std::optional<double> watch_others_busy(double seconds);

// Watches the usable cores for `seconds`, this process idle, and sets
// OpenMP's thread count to threads_beside(asked, ...). Call it before a graph
// is compiled: compiled kernels keep the count they were compiled with.
ThreadFit fit_threads_to_free_cores(int asked, double seconds);

// The line a run prints about it: "" where it used the threads asked for.
std::string describe(const ThreadFit& fit);

// What a measuring program does before it compiles, on the CPU: watch the
// cores for a quarter of a second and fit_threads_to_free_cores from
// OpenMP's current count, or with `fixed` (--fixed-threads) keep the count
// and warn where fewer cores are free. Returns the line to print, "" for none.
std::string fit_measuring_threads(bool on_cpu, bool fixed);

// A warning for timings taken on `threads` threads while other processes
// kept `others_busy` cores busy: "" where that left a free core for each
// thread, or for each core where the threads outnumber them.
std::string others_busy_warning(double others_busy, int cores, int threads);

}  // namespace glassbox
