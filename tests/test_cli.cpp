// tests/test_cli.cpp: the glassbox tool and bench_nets, run as a user runs
// them: exit codes and what they print.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Outcome run(const std::string& command) {
  Outcome result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const std::string kCli = GLASSBOX_CLI_PATH;

TEST(Cli, UsageErrorsListTheChoicesAndExitTwo) {
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"", "usage: glassbox <command> <network> [flags]"},
      {"sumary VGG16", "glassbox: unknown command 'sumary'; valid: summary, time"},
      {"summary vgg17", "glassbox: unknown network 'vgg17'; valid: LeNet, AlexNet, VGG11, VGG13, VGG16, VGG19"},
      {"summary", "glassbox: summary takes one network name (got 0); valid: LeNet, AlexNet"},
      {"summary VGG16 --bogus", "glassbox: unknown flag '--bogus' for 'summary'; valid: --batch"},
      {"time LeNet --batch 0", "glassbox: --batch must be an integer from 1 to 2147483647, got '0'"},
      {"time LeNet --steps", "glassbox: --steps needs a value (--steps N)"},
      {"time LeNet --device gpu", "glassbox: --device: unknown device 'gpu'; valid: cpu, cuda, cuda:N"},
      {"time LeNet --precision fp16", "glassbox: unknown precision 'fp16'; valid: fp32, tf32"},
  };
  for (const auto& c : cases) {
    const Outcome r = run(kCli + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << "glassbox " << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << "glassbox " << c.args << " printed:\n" << r.output;
  }
}

TEST(Cli, SummaryPrintsTheLayerTableAndTotals) {
  const Outcome r = run(kCli + " summary VGG16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"conv5_3", "Conv2d", "(1, 512, 14, 14)", "3x3 s1 p1, 512 -> 512", "2,359,808",
                               "138,357,544", "15.470 GMAC", "30.941 GFLOP"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
}

TEST(Cli, TimePrintsLayersAgainstTheMeasuredStep) {
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 8 --steps 2 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"LeNet on cpu", "conv1", "fwd ms", "bwd ms", "sum of layers: forward",
                               "measured step:", "images/s", "memory: peak"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
}

#ifdef BENCH_NETS_PATH
const std::string kBench = BENCH_NETS_PATH;

TEST(BenchNets, RunsAFilteredBenchmarkWithCountersAndContext) {
  const Outcome r = run(kBench + " --device=cpu --benchmark_filter='^LeNet/forward/' --benchmark_min_time=0.01 "
                             "--benchmark_format=json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"\"name\": \"LeNet/forward/batch:64\"", "\"images/s\"", "\"TFLOP/s\"",
                               "\"peak_memory\"", "\"device\": \"cpu\"", "\"commit\"", "\"protocol\""}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing " << expected << " in:\n" << r.output;
  }
  EXPECT_FALSE(contains(r.output, "LeNet/train_step")) << "the filter selects forward only";
}

TEST(BenchNets, AFilterThatMatchesNothingIsAnError) {
  const Outcome r = run(kBench + " --device=cpu --benchmark_filter=NoSuchNet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "bench_nets: no benchmark matches --benchmark_filter='NoSuchNet'")) << r.output;
}

TEST(BenchNets, BadFlagsAreErrors) {
  Outcome r = run(kBench + " --device=gpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "bench_nets: --device: unknown device 'gpu'; valid: cpu, cuda, cuda:N")) << r.output;
  r = run(kBench + " --batch=-3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "bench_nets: --batch must be an integer from 1 to 2147483647, got '-3'")) << r.output;
  r = run(kBench + " --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--bogus")) << r.output;
}
#endif

}  // namespace
