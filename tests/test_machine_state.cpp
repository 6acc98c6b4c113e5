// tests/test_machine_state.cpp: what a result records about the machine
// (tensor/machine_state.h): the CPU's readings here, and the arithmetic of
// energy per image and of throttle reasons on given samples.
#include <gtest/gtest.h>

#include "tensor/machine_state.h"
#include "tests/support/devices.h"
#include "tests/support/strings.h"

namespace glassbox {
namespace {

using testing::contains;

std::string field(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "(no field " + key + ")";
}

TEST(MachineState, TheCpuSampleHasAFrequencyAndSaysWhereEnergyIsMissing) {
  const MachineSample s = sample_machine(Context::cpu());
  EXPECT_GT(s.cpu_mhz, 0.0);  // /proc/cpuinfo's "cpu MHz" on Linux x86
  EXPECT_TRUE(s.cpu_times.has_value()) << "/proc/stat";
  EXPECT_FALSE(s.gpu.has_value());
  EXPECT_TRUE(s.gpu_missing.empty());  // a CPU context asks no GPU
  if (s.cpu_energy_j) {
    EXPECT_GE(*s.cpu_energy_j, 0.0);
  } else {
    EXPECT_TRUE(contains(s.cpu_energy_missing, "not available (/sys/class/powercap/intel-rapl:0/energy_uj"))
        << s.cpu_energy_missing;
  }
}

TEST(MachineState, EnergyPerImageIsTheCountersDifferenceOverTheImages) {
  MachineSample start, end;
  start.seconds = 10.0;
  end.seconds = 12.0;
  start.cpu_mhz = 2600.4;
  end.cpu_mhz = 2400.0;
  start.cpu_energy_j = 100.0;
  end.cpu_energy_j = 150.0;
  const auto fields = machine_fields(start, end, 200);
  EXPECT_EQ(field(fields, "cpu_mhz"), "2600 MHz at start, 2400 MHz at end");
  EXPECT_EQ(field(fields, "cpu_energy"), "0.2500 J per image (50.00 J over 2.000 s, mean 25.0 W), RAPL package 0");

  // A counter that wrapped once in between: 90 J to the wrap at 100 J, then 15 J.
  start.cpu_energy_j = 90.0;
  start.cpu_energy_range_j = 100.0;
  end.cpu_energy_j = 5.0;
  EXPECT_EQ(field(machine_fields(start, end, 3), "cpu_energy"),
            "5.0000 J per image (15.00 J over 2.000 s, mean 7.5 W), RAPL package 0");

  EXPECT_EQ(field(fields, "other_work"), "not available (/proc/stat cannot be read here)");
  start.cpu_times = CpuTimes{.wall = 10.0, .busy = 50.0, .own = 1.0};
  end.cpu_times = CpuTimes{.wall = 12.0, .busy = 54.5, .own = 3.0};
  EXPECT_EQ(field(machine_fields(start, end, 200), "other_work"), "1.25 cores busy with other processes")
      << "4.5 busy seconds over 2 s, 2 of them this process's";
  MachineSample soon = start;
  soon.seconds = start.seconds + 0.02;
  soon.cpu_times = CpuTimes{.wall = 10.02, .busy = 50.09, .own = 1.01};
  EXPECT_EQ(field(machine_fields(start, soon, 2), "other_work"),
            "not measured: the timed steps took 0.020 s, and /proc/stat's 10 ms ticks need 0.25 s to tell");

  MachineSample no_counter;
  no_counter.cpu_energy_missing = "not available (no RAPL here)";
  EXPECT_EQ(field(machine_fields(no_counter, no_counter, 1), "cpu_energy"), "not available (no RAPL here)");
}

TEST(MachineState, GpuReadingsAtBothEndsAndItsEnergy) {
  MachineSample start, end;
  start.seconds = 0.0;
  end.seconds = 4.0;
  start.gpu = GpuSample{.sm_mhz = 1980, .memory_mhz = 2619, .power_w = 120.5, .temperature_c = 40,
                        .throttle = "gpu idle", .energy_j = 1000.0};
  end.gpu = GpuSample{.sm_mhz = 1755, .memory_mhz = 2619, .power_w = 690.0, .temperature_c = 71,
                      .throttle = "sw power cap", .energy_j = 3800.0};
  const auto fields = machine_fields(start, end, 1000);
  EXPECT_EQ(field(fields, "gpu_start"), "SM 1980 MHz, memory 2619 MHz, 120.5 W, 40 C, throttle: gpu idle");
  EXPECT_EQ(field(fields, "gpu_end"), "SM 1755 MHz, memory 2619 MHz, 690.0 W, 71 C, throttle: sw power cap");
  EXPECT_EQ(field(fields, "gpu_energy"), "2.8000 J per image (2800.00 J over 4.000 s, mean 700.0 W), NVML");

  MachineSample unreadable;
  unreadable.gpu_missing = "cannot open libnvidia-ml.so.1 (no such file)";
  EXPECT_EQ(field(machine_fields(unreadable, unreadable, 1), "gpu_state"),
            "not available: cannot open libnvidia-ml.so.1 (no such file)");
}

TEST(MachineState, ThrottleReasonsInWords) {
  EXPECT_EQ(throttle_reasons(0), "none");
  EXPECT_EQ(throttle_reasons(0x4 | 0x8), "sw power cap, hw slowdown");
  EXPECT_EQ(throttle_reasons(0x1 | 0x1000), "gpu idle, other (bits 4096)");
}

TEST(MachineState, AGpuSampleReadsNvmlOrSaysWhyNot) {
  GLASSBOX_REQUIRE_CUDA();  // NVML reads the context's GPU
  const MachineSample s = sample_machine(Context::cuda());
  ASSERT_TRUE(s.gpu.has_value()) << s.gpu_missing;
  EXPECT_GT(s.gpu->sm_mhz, 0u);
  EXPECT_GT(s.gpu->power_w, 0.0);
}

}  // namespace
}  // namespace glassbox
