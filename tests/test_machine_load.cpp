// tests/test_machine_load.cpp: the warning a measuring run prints at its
// start where other processes share the machine's cores (tensor/machine_load.h).
#include <gtest/gtest.h>

#include "tensor/machine_load.h"

namespace glassbox {
namespace {

TEST(MachineLoad, AQuietMachineGetsNoWarning) {
  EXPECT_EQ(load_warning(0.0, 2, 2), "");
  EXPECT_EQ(load_warning(2.0, 2, 2), "") << "every core busy, none waiting";
  EXPECT_EQ(load_warning(2.5, 2, 1), "") << "within the half core of slack";
}

TEST(MachineLoad, ALoadAboveTheCoresIsNamedWithWhatItDoesToThreads) {
  EXPECT_EQ(load_warning(3.2, 2, 2),
            "the machine's load is 3.20 on 2 cores: other processes are running, so timings will read slow and vary; "
            "with 2 threads each step waits for the slowest of them (--threads 1 suffers least)");
  EXPECT_EQ(load_warning(1.75, 1, 1),
            "the machine's load is 1.75 on 1 core: other processes are running, so timings will read slow and vary");
}

TEST(MachineLoad, ThisMachinesLoadAndCoresCanBeRead) {
  ASSERT_TRUE(machine_load().has_value()) << "/proc/loadavg";
  EXPECT_GE(*machine_load(), 0.0);
  EXPECT_GE(usable_cores(), 1);
}

}  // namespace
}  // namespace glassbox
