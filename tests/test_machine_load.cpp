// tests/test_machine_load.cpp: the work other processes put on this
// process's cores, and the thread count a measuring run takes beside it
// (tensor/machine_load.h, Note [Threads on a shared machine]).
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <thread>

#include "tensor/machine_load.h"

namespace glassbox {
namespace {

TEST(MachineLoad, OneThreadFewerForEachCoreOfOtherWork) {
  EXPECT_EQ(threads_beside(2, 2, 0.0), 2) << "a quiet machine";
  EXPECT_EQ(threads_beside(2, 2, 0.45), 2) << "less than half a core of other work leaves the core free";
  EXPECT_EQ(threads_beside(2, 2, 0.7), 1) << "one busy process beside two threads reads about two thirds";
  EXPECT_EQ(threads_beside(2, 2, 1.0), 1) << "one busy process";
  EXPECT_EQ(threads_beside(2, 2, 2.0), 1) << "never fewer than one";
  EXPECT_EQ(threads_beside(16, 16, 1.0), 15);
  EXPECT_EQ(threads_beside(16, 16, 3.6), 12);
  EXPECT_EQ(threads_beside(4, 16, 3.0), 4) << "never more than asked";
  EXPECT_EQ(threads_beside(8, 16, 10.0), 6);
}

TEST(MachineLoad, BusyTimeIsSummedOverTheGivenCoresOnly) {
  const std::string stat =
      "cpu  900 0 100 5000 20 0 0 0 0 0\n"
      "cpu0 300 10 40 2000 10 5 5 40 0 0\n"
      "cpu1 600 0 60 3000 10 0 0 0 0 0\n"
      "cpu12 1 1 1 1 1 1 1 1 0 0\n"
      "intr 12345 0 0\n"
      "ctxt 999\n";
  // cpu0: user 300 + nice 10 + system 40 + irq 5 + softirq 5 + steal 40; idle and iowait left out.
  EXPECT_DOUBLE_EQ(*busy_seconds_in(stat, {0}, 100.0), 4.0);
  EXPECT_DOUBLE_EQ(*busy_seconds_in(stat, {1}, 100.0), 6.6);
  EXPECT_DOUBLE_EQ(*busy_seconds_in(stat, {0, 1}, 100.0), 10.6);
  EXPECT_DOUBLE_EQ(*busy_seconds_in(stat, {12}, 100.0), 0.06) << "cpu12 is not cpu1";
  EXPECT_FALSE(busy_seconds_in(stat, {5}, 100.0).has_value()) << "no line for the core";
  EXPECT_FALSE(busy_seconds_in("cpu0 1 2\n", {0}, 100.0).has_value()) << "a cut line";
}

TEST(MachineLoad, OtherWorkIsTheBusyTimeThisProcessDidNotSpend) {
  const CpuTimes start{.wall = 10.0, .busy = 100.0, .own = 5.0, .cores = 2};
  EXPECT_EQ(others_busy_cores(start, {.wall = 12.0, .busy = 104.0, .own = 7.0, .cores = 2}), 1.0);
  EXPECT_EQ(others_busy_cores(start, {.wall = 12.0, .busy = 104.0, .own = 9.0, .cores = 2}), 0.0) << "all of it ours";
  EXPECT_EQ(others_busy_cores(start, {.wall = 12.0, .busy = 103.0, .own = 9.0, .cores = 2}), 0.0)
      << "tick rounding never reads negative";
  EXPECT_EQ(others_busy_cores(start, {.wall = 12.0, .busy = 110.0, .own = 5.0, .cores = 2}), 2.0)
      << "nor more than the cores counted";
}

// Note [Too short to tell]: a window of a few ticks is no reading.
TEST(MachineLoad, AWindowOfAFewTicksIsNoReading) {
  const CpuTimes start{.wall = 10.0, .busy = 100.0, .own = 5.0, .cores = 2};
  EXPECT_FALSE(others_busy_cores(start, start).has_value()) << "no time passed";
  // 20 ms in which the counters ticked 9 times and this process ran 10 ms of
  // it: read as it stands, 4 cores of other work on 2.
  EXPECT_FALSE(others_busy_cores(start, {.wall = 10.02, .busy = 100.09, .own = 5.01, .cores = 2}).has_value());
  EXPECT_TRUE(others_busy_cores(start, {.wall = 10.0 + kShortestBusyWindow, .busy = 100.0, .own = 5.0, .cores = 2})
                  .has_value());
}

TEST(MachineLoad, TheLinesSayWhatWasChosenAndWhy) {
  EXPECT_EQ(describe({.asked = 2, .used = 2, .cores = 2, .others_busy = 0.01}), "");
  EXPECT_EQ(describe({.asked = 2, .used = 1, .cores = 2, .others_busy = 1.0}),
            "other processes keep 1.00 of 2 cores busy: running 1 thread instead of 2, one per free core, since a "
            "thread beside their work holds up every kernel (--fixed-threads keeps 2)");
  EXPECT_EQ(describe({.asked = 8, .used = 2, .cores = 2, .others_busy = 0.0}),
            "8 threads asked for on 2 cores: running 2 threads instead of 8, one per core, since two threads "
            "sharing a core hold up every kernel (--fixed-threads keeps 8)");
  EXPECT_EQ(describe({.asked = 2, .used = 2, .cores = 2}), "") << "nothing read, nothing changed";
  EXPECT_EQ(others_busy_warning(0.3, 2, 2), "");
  EXPECT_EQ(others_busy_warning(1.0, 2, 1), "") << "one thread beside one busy process has a core of its own";
  EXPECT_EQ(others_busy_warning(0.7, 2, 2),
            "other processes kept 0.70 of 2 cores busy while the steps were timed, more than 2 threads can run "
            "beside: the timings read slow and vary");
  EXPECT_EQ(others_busy_warning(0.1, 2, 5), "") << "more threads than cores is not other work's doing";
  EXPECT_EQ(others_busy_warning(1.6, 2, 1),
            "other processes kept 1.60 of 2 cores busy while the steps were timed, more than 1 thread can run "
            "beside: the timings read slow and vary");
}

TEST(MachineLoad, ThisMachinesCountersCanBeRead) {
  EXPECT_GE(usable_cores(), 1);
  const std::optional<CpuTimes> now = read_cpu_times();
  ASSERT_TRUE(now.has_value()) << "/proc/stat";
  EXPECT_GT(now->busy, 0.0);
  EXPECT_GT(now->own, 0.0);
}

TEST(MachineLoad, AThreadOfThisProcessIsNotOtherWork) {
  // A busy thread of this process, on a machine otherwise quiet or not:
  // whatever the others did, this thread's time is not counted as theirs.
  const std::optional<CpuTimes> start = read_cpu_times();
  std::atomic<bool> stop{false};
  std::thread spin([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::optional<CpuTimes> middle = read_cpu_times();
  stop = true;
  spin.join();
  ASSERT_TRUE(start && middle);
  const double ours = (middle->own - start->own) / (middle->wall - start->wall);
  // It ran: on a machine busy with other processes (tests in parallel, on two
  // cores) a spinning thread may get well under half a core, so no share is asked.
  EXPECT_GT(ours, 0.0) << "the spinning thread ran";
  // The machine's busy time includes the spin; the others' estimate does not.
  const std::optional<double> others = others_busy_cores(*start, *middle);
  ASSERT_TRUE(others.has_value()) << "300 ms is long enough to tell";
  EXPECT_LT(*others, (middle->busy - start->busy) / (middle->wall - start->wall));
}

TEST(MachineLoad, FittingSetsOpenMpsCountToTheOneChosen) {
  const int before = omp_get_max_threads();
  const ThreadFit fit = fit_threads_to_free_cores(before, kShortestBusyWindow);
  EXPECT_EQ(fit.asked, before);
  EXPECT_GE(fit.used, 1);
  EXPECT_LE(fit.used, before);
  EXPECT_EQ(omp_get_max_threads(), fit.used);
  ASSERT_TRUE(fit.others_busy.has_value());
  EXPECT_EQ(fit.used, threads_beside(before, fit.cores, *fit.others_busy));
  omp_set_num_threads(before);
}

}  // namespace
}  // namespace glassbox
