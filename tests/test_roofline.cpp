// tests/test_roofline.cpp: the roofline arithmetic of `glassbox time`
// (tools/cli/roofline.h) and the device peaks it divides by (tensor/device_peaks.h).
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "tensor/cpu_blas.h"
#include "tensor/device_peaks.h"
#include "tests/support/address_space_limit.h"
#include "tests/support/sanitizers.h"
#include "tools/cli/roofline.h"

namespace glassbox {
namespace {

using cli::PassCost;
using cli::Peak;

constexpr Peak kPeak{.flops_per_s = 10e12, .bytes_per_s = 1e12};  // ridge point: 10 FLOP/byte

TEST(Roofline, RatesAndIntensity) {
  const PassCost cost{Pass::kForward, 2.0, 4'000'000'000, 100'000'000};  // 4 GFLOP, 100 MB in 2 ms
  EXPECT_DOUBLE_EQ(cli::flops_per_s(cost), 2e12);
  EXPECT_DOUBLE_EQ(cli::bytes_per_s(cost), 5e10);
  EXPECT_DOUBLE_EQ(cli::intensity(cost), 40.0);
}

TEST(Roofline, ComputeBoundPassIsMeasuredAgainstThePeakFlops) {
  // I = 40 > 10: the roof is the 10 TFLOP/s peak; 4 GFLOP take at least 0.4 ms, it took 2 ms.
  const PassCost cost{Pass::kForward, 2.0, 4'000'000'000, 100'000'000};
  EXPECT_DOUBLE_EQ(cli::attainable_flops_per_s(cost, kPeak), 10e12);
  EXPECT_NEAR(cli::roofline_fraction(cost, kPeak), 0.2, 1e-12);
}

TEST(Roofline, MemoryBoundPassIsMeasuredAgainstTheBandwidthSlope) {
  // I = 2 < 10: the roof is 2 * 1 TB/s = 2 TFLOP/s; 1 GB takes at least 1 ms, it took 4 ms.
  const PassCost cost{Pass::kBackwardData, 4.0, 2'000'000'000, 1'000'000'000};
  EXPECT_DOUBLE_EQ(cli::attainable_flops_per_s(cost, kPeak), 2e12);
  EXPECT_NEAR(cli::roofline_fraction(cost, kPeak), 0.25, 1e-12);
  // The same as achieved / attainable.
  EXPECT_NEAR(cli::roofline_fraction(cost, kPeak), cli::flops_per_s(cost) / cli::attainable_flops_per_s(cost, kPeak),
              1e-12);
}

TEST(Roofline, PassWithoutFlopsIsBandwidthOverPeakBandwidth) {
  const PassCost relu{Pass::kForward, 0.5, 0, 250'000'000};  // 0.5 TB/s of 1 TB/s
  EXPECT_DOUBLE_EQ(cli::intensity(relu), 0.0);
  EXPECT_NEAR(cli::roofline_fraction(relu, kPeak), 0.5, 1e-12);
}

TEST(Roofline, NoTimeOrNoPeakGivesZeroNotInfinity) {
  EXPECT_EQ(cli::roofline_fraction(PassCost{Pass::kForward, 0.0, 100, 100}, kPeak), 0.0);
  EXPECT_EQ(cli::roofline_fraction(PassCost{Pass::kForward, 1.0, 100, 100}, Peak{}), 0.0);
  EXPECT_EQ(cli::flops_per_s(PassCost{Pass::kForward, 0.0, 100, 100}), 0.0);
  EXPECT_EQ(cli::intensity(PassCost{Pass::kForward, 1.0, 100, 0}), 0.0);
}

TEST(Roofline, LayerPassesSplitTheBackwardAndSkipTheDataGradientOfTheFirstLayer) {
  GraphBuilder b;
  Value x = b.input("x", Shape{2, 3, 8, 8});
  Value c1 = b.conv(x, {.out_channels = 4, .kernel = 3, .pad = 1}, "conv1");
  Value r1 = b.relu(c1, "relu1");
  Value c2 = b.conv(r1, {.out_channels = 4, .kernel = 3, .pad = 1}, "conv2");
  Value logits = b.linear(b.flatten(c2), {.out_features = 10}, "fc");
  Value labels = b.input("labels", Shape{2}, DType::kInt32);
  Graph g = std::move(b).build(b.softmax_cross_entropy(logits, labels));
  Context ctx = Context::cpu();
  g.compile(ctx);
  auto passes_of = [&](std::string_view name) {
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      if (g.nodes()[i].name != name) continue;
      LayerTime t{.node = static_cast<int>(i), .forward_ms = 1.0, .backward_ms = 3.0, .backward_weights_ms = 2.0};
      std::vector<std::string> names;
      for (const PassCost& p : cli::layer_passes(g, t)) names.emplace_back(pass_name(p.pass));
      return names;
    }
    return std::vector<std::string>{};
  };
  EXPECT_EQ(passes_of("conv1"), (std::vector<std::string>{"forward", "backward-weights"}));
  EXPECT_EQ(passes_of("relu1"), (std::vector<std::string>{"forward", "backward"}));
  EXPECT_EQ(passes_of("conv2"), (std::vector<std::string>{"forward", "backward-data", "backward-weights"}));
  ASSERT_EQ(g.nodes()[3].name, "conv2");
  const Node& conv2 = g.nodes()[3];
  const std::vector<PassCost> passes =
      cli::layer_passes(g, LayerTime{.node = 3, .forward_ms = 1.0, .backward_ms = 3.0, .backward_weights_ms = 2.0});
  EXPECT_DOUBLE_EQ(passes[1].ms, 1.0);  // backward-data: the whole less the weights' part
  EXPECT_DOUBLE_EQ(passes[2].ms, 2.0);
  EXPECT_EQ(passes[1].bytes, conv2.layer->bytes_moved(Pass::kBackwardData));
  EXPECT_EQ(passes[2].flops, conv2.layer->flops(Pass::kBackwardWeights));
}

// Note [Only what trains gets a gradient]: a Flatten of the images runs no
// backward, and the Linear after it no backward-data.
TEST(Roofline, LayersBeforeTheFirstThatTrainsShowNoBackward) {
  GraphBuilder b;
  Value x = b.input("x", Shape{2, 1, 4, 4});
  Value logits = b.linear(b.flatten(x, "flat"), {.out_features = 3}, "fc");
  Value labels = b.input("labels", Shape{2}, DType::kInt32);
  Graph g = std::move(b).build(b.softmax_cross_entropy(logits, labels));
  Context ctx = Context::cpu();
  g.compile(ctx);
  auto passes_of = [&](std::string_view name) {
    std::vector<std::string> names;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      if (g.nodes()[i].name != name) continue;
      LayerTime t{.node = static_cast<int>(i), .forward_ms = 1.0, .backward_ms = 3.0, .backward_weights_ms = 2.0};
      for (const PassCost& p : cli::layer_passes(g, t)) names.emplace_back(pass_name(p.pass));
    }
    return names;
  };
  EXPECT_EQ(passes_of("flat"), (std::vector<std::string>{"forward"}));
  EXPECT_EQ(passes_of("fc"), (std::vector<std::string>{"forward", "backward-weights"}));
}

TEST(DevicePeaks, LooksUpCudaDeviceNamesBySubstring) {
  ASSERT_TRUE(find_device_peak("NVIDIA H100 80GB HBM3").has_value());
  EXPECT_EQ(find_device_peak("NVIDIA H100 80GB HBM3")->name, "NVIDIA H100 SXM");
  EXPECT_EQ(find_device_peak("NVIDIA H100 PCIe")->name, "NVIDIA H100 PCIe");
  EXPECT_EQ(find_device_peak("NVIDIA H200")->name, "NVIDIA H200");
  EXPECT_EQ(find_device_peak("NVIDIA A100-SXM4-80GB")->name, "NVIDIA A100 SXM 80GB");
  EXPECT_EQ(find_device_peak("NVIDIA A100-SXM4-40GB")->bytes_per_s, 1.555e12);
  EXPECT_EQ(find_device_peak("Tesla V100-SXM2-16GB")->name, "NVIDIA V100 SXM2");
  EXPECT_EQ(find_device_peak("NVIDIA L40S")->name, "NVIDIA L40S");  // not "L4"
  EXPECT_EQ(find_device_peak("NVIDIA L4")->name, "NVIDIA L4");
  EXPECT_EQ(find_device_peak("NVIDIA GeForce RTX 4090")->name, "NVIDIA GeForce RTX 4090");
  EXPECT_FALSE(find_device_peak("AMD EPYC 7B13 64-Core Processor").has_value());
  EXPECT_FALSE(find_device_peak("NVIDIA GeForce RTX 4080").has_value());
}

TEST(DevicePeaks, TheTableWinsWhereItKnowsTheDeviceElseTheProbes) {
  const MeasuredPeak measured{.flops_per_s = 5e13, .bytes_per_s = 3e12, .how = "cuBLAS SGEMM 4096^3"};
  const RooflinePeak h100 = choose_peak("NVIDIA H100 80GB HBM3", Precision::kFp32, measured);
  EXPECT_EQ(h100.flops_per_s, 67e12);
  EXPECT_EQ(h100.bytes_per_s, 3.35e12);
  EXPECT_EQ(h100.source, "table: NVIDIA H100 SXM (datasheet, FP32)");
  EXPECT_EQ(h100.measured.flops_per_s, 5e13);
  EXPECT_EQ(choose_peak("NVIDIA H100 80GB HBM3", Precision::kTf32, measured).flops_per_s, 494.5e12);
  const RooflinePeak cpu = choose_peak("AMD EPYC", Precision::kFp32, measured);
  EXPECT_EQ(cpu.flops_per_s, 5e13);
  EXPECT_EQ(cpu.source, "measured: cuBLAS SGEMM 4096^3");
}

// Measured after the timed steps, with the run's tensors still held: where
// its buffers cannot be had, the error says what was being measured.
TEST(DevicePeaks, ACpuProbeWithoutMemorySaysWhatItMeasured) {
  if (testing::kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer aborts where an allocation fails";
  Context ctx = Context::cpu();
  // OpenMP's threads first, their stacks outside the limit: a thread that
  // cannot be started ends the process (libgomp), whatever the core count.
#pragma omp parallel
  { [[maybe_unused]] volatile int started = 1; }
  std::string message;
  {
    // Less room than one of the 256 MiB buffers, which come first.
    const testing::AddressSpaceLimit limit(int64_t{128} << 20);
    ASSERT_TRUE(limit.held());
    try {
      measure_peak(ctx);
    } catch (const OutOfMemoryError& e) {
      message = e.what();
    }
  }
  EXPECT_EQ(message, "out of host memory measuring the CPU's peak for the roofline (three 1024x1024 matrices and two "
                     "256 MiB buffers, 524 MiB)");
}

TEST(DevicePeaks, CpuProbesMeasureSomething) {
  Context ctx = Context::cpu();
  const MeasuredPeak peak = measure_peak(ctx);
  EXPECT_GT(peak.flops_per_s, 1e8);
  EXPECT_GT(peak.bytes_per_s, 1e8);
  EXPECT_EQ(peak.how, std::string(cpu_gemm_name()) + " GEMM 1024^3, copy 256 MiB");
}

}  // namespace
}  // namespace glassbox
