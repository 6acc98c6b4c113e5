// tests/test_cli_scale.cpp: `glassbox scale`, run as a user runs it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/command.h"

namespace {

using glassbox::testing::contains;
using glassbox::testing::first_match;
using glassbox::testing::run_command;

const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);

TEST(CliScale, PredictsARowPerDeviceCountAndStatesItsAssumptions) {
  const auto r = run_command(kCli + " scale LeNet --gpus 1,2,4 --batch 8 --device cpu --steps 1 --warmup 0 "
                                    "--link infiniband");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "LeNet, batch 8 per device, fp32 (TF32 off): its train step measured on cpu"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "link: NDR InfiniBand, 50 GB/s per direction, 5 us per message")) << r.output;
  for (const char* row : {"\n      1 ", "\n      2 ", "\n      4 "}) EXPECT_TRUE(contains(r.output, row)) << row;
  EXPECT_TRUE(contains(r.output, "100.0%")) << r.output;  // one device is the measured step
  EXPECT_TRUE(contains(r.output, "Assumptions (optim/scale_model.h, docs/scaling.md)")) << r.output;
  EXPECT_TRUE(contains(r.output, "Not modelled: contention")) << r.output;
}

// A language model's throughput is in tokens, as time counts it: the batch's
// sequences times their 20 tokens, over the step.
TEST(CliScale, ALanguageModelCountsTokens) {
  const auto r = run_command(kCli + " scale LSTMSmall --gpus 1 --batch 2 --device cpu --steps 1 --warmup 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, " tokens/s ")) << r.output;
  const std::vector<std::string> row = first_match(r.output, "\n +1 +([0-9.]+) .* ([0-9.]+) +1, no all-reduce");
  ASSERT_FALSE(row.empty()) << r.output;
  const double step_ms = std::stod(row[1]), rate = std::stod(row[2]);
  EXPECT_NEAR(rate, 2 * 20 / (step_ms / 1e3), 0.06 * rate + 0.1) << r.output;
}

// The compile flags time the step as it would run.
TEST(CliScale, TakesTheCompileFlags) {
  const auto r = run_command(kCli + " scale LeNet --gpus 1,2 --batch 4 --device cpu --steps 1 --warmup 0 "
                                    "--precision bf16 --layout nchw");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "LeNet, batch 4 per device, bf16")) << r.output;
}

// A link's figures are printed as given, however small: 1e-6 GB/s is not 0.0.
TEST(CliScale, ACustomLinkIsPrintedAsGiven) {
  const auto r = run_command(kCli + " scale LeNet --gpus 1,2 --batch 4 --device cpu --steps 1 --warmup 0 "
                                    "--link custom --bandwidth-gbps 1e-6 --latency-us 0.25 --bucket-mb 0.5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "link: custom, 1e-06 GB/s per direction, 0.25 us per message; gradient buckets of "
                                 "0.5 MiB\n"))
      << r.output;
}

TEST(CliScale, BadValuesAreUsageErrorsNamingTheFlag) {
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--gpus 1,0", "glassbox: --gpus must be an integer from 1 to 1048576, got '0'"},
      {"--gpus 1,,2", "glassbox: --gpus must be an integer from 1 to 1048576, got ''"},
      {"--gpus 1,2,", "glassbox: --gpus must be an integer from 1 to 1048576, got ''"},
      {"--gpus 2,2", "glassbox: --gpus '2,2': device counts must grow from left to right (2 then 2)"},
      {"--link ethernet", "glassbox: --link: unknown link 'ethernet'; valid: nvlink, infiniband, custom"},
      {"--link custom", "glassbox: --link custom needs --bandwidth-gbps (and --latency-us)"},
      {"--link custom --bandwidth-gbps 100", "glassbox: --link custom needs --latency-us (and --bandwidth-gbps)"},
      {"--bandwidth-gbps 0", "glassbox: --bandwidth-gbps must be a number from 1e-06 to 1000000, got '0'"},
      {"--bucket-mb 0", "glassbox: --bucket-mb must be a number from 0.001 to 1048576, got '0'"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(kCli + " scale LeNet --device cpu " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << c.args << " printed:\n" << r.output;
  }
}

}  // namespace
