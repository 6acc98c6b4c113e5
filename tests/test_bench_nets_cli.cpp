// tests/test_bench_nets_cli.cpp: bench_nets run as a user runs it: its
// flags, names, counters, output file and exit codes.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tensor/machine_load.h"
#include "tests/support/command.h"
#include "tests/support/temp_dir.h"

namespace {

using Outcome = glassbox::testing::CommandOutcome;
using glassbox::testing::contains;
Outcome run(const std::string& command) { return glassbox::testing::run_command(command); }

const std::string kBench = glassbox::testing::program_path(BENCH_NETS_PATH);
// A build configured with -DGLASSBOX_DETERMINISTIC=ON names every benchmark so (Note [Benchmark names]).
const std::string kLeNetForward =
    std::string("\"name\": \"LeNet/forward/batch:64") + (GLASSBOX_DETERMINISTIC ? "/deterministic" : "") + "\"";

TEST(BenchNets, RunsAFilteredBenchmarkWithCountersAndContext) {
  const Outcome r = run(kBench + " --device=cpu --benchmark_filter='^LeNet/forward/' --benchmark_min_time=0.01s "
                             "--benchmark_format=json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {kLeNetForward.c_str(), "\"images/s\"", "\"TFLOP/s\"",
                               "\"peak_memory\"", "\"device\": \"cpu\"", "\"commit\"", "\"protocol\""}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing " << expected << " in:\n" << r.output;
  }
  EXPECT_FALSE(contains(r.output, "LeNet/train_step")) << "the filter selects forward only";
}

// Note [Benchmark names] in bench/bench_nets.cpp.
TEST(BenchNets, DeterministicRunsAreNamedSo) {
  const Outcome r = run(kBench + " --device=cpu --deterministic --precision=tf32 --benchmark_list_tests "
                                 "--benchmark_filter='^LeNet/forward/'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "LeNet/forward/batch:64/tf32/deterministic")) << r.output;
  const Outcome plain = run(kBench + " --device=cpu --benchmark_list_tests --benchmark_filter='^LeNet/forward/'");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(contains(plain.output, "/deterministic"), GLASSBOX_DETERMINISTIC != 0) << plain.output;
}

// --warmup=N: N untimed steps per mode, said in the context's protocol.
TEST(BenchNets, WarmupStepsAreAFlagAndSaidInTheProtocol) {
  const Outcome r = run(kBench + " --device=cpu --warmup=0 --benchmark_filter='^LeNet/forward/' "
                                 "--benchmark_min_time=0.01 --benchmark_format=json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\"protocol\": \"0 warm-up steps per mode")) << r.output;
  const Outcome plain = run(kBench + " --device=cpu --benchmark_filter='^LeNet/forward/' "
                                     "--benchmark_min_time=0.01 --benchmark_format=json");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_TRUE(contains(plain.output, "\"protocol\": \"10 warm-up steps per mode")) << plain.output;
}

// --steps=N fixes the iterations; the row keeps its plain name (no
// "/iterations:N"), which bench/compare.py pairs with PyTorch's, and records
// the iterations it ran.
TEST(BenchNets, FixedStepsKeepThePlainName) {
  const Outcome r = run(kBench + " --device=cpu --warmup=0 --steps=2 --benchmark_filter='^LeNet/forward/' "
                                 "--benchmark_format=json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, kLeNetForward)) << r.output;
  EXPECT_FALSE(contains(r.output, "/iterations:")) << r.output;
  EXPECT_TRUE(contains(r.output, "\"iterations\": 2,")) << r.output;
}

// Note [Threads on a shared machine]: --fixed-threads runs the count asked
// for, even above the cores; the context says what was fitted.
TEST(BenchNets, FixedThreadsRunsTheCountAskedFor) {
  const int asked = glassbox::usable_cores() + 2;
  const Outcome r = run(kBench + " --device=cpu --warmup=0 --benchmark_filter='^LeNet/forward/' --fixed-threads "
                                 "--benchmark_min_time=0.01 --benchmark_format=json --threads=" + std::to_string(asked));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\"cpu_threads\": \"" + std::to_string(asked) + "\"")) << r.output;
  EXPECT_TRUE(contains(r.output, "\"cpu_threads_fit\": \"the threads asked for (--fixed-threads)\"")) << r.output;
  const Outcome fitted = run(kBench + " --device=cpu --warmup=0 --benchmark_filter='^LeNet/forward/' "
                                      "--benchmark_min_time=0.01 --benchmark_format=json --threads=" +
                             std::to_string(asked));
  ASSERT_EQ(fitted.exit_code, 0) << fitted.output;
  EXPECT_TRUE(contains(fitted.output, "running ")) << fitted.output;
  EXPECT_TRUE(contains(fitted.output, " instead of " + std::to_string(asked))) << fitted.output;
}

TEST(BenchNets, AFilterThatMatchesNothingIsAnError) {
  const Outcome r = run(kBench + " --device=cpu --benchmark_filter=NoSuchNet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "bench_nets: no benchmark matches --benchmark_filter='NoSuchNet'")) << r.output;
}

TEST(BenchNets, EveryBadFlagIsAUsageErrorNamingIt) {
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--device=cuda:99999999999",
       "bench_nets: --device index in 'cuda:99999999999' must be an integer from 0 to 2147483647, got '99999999999'"},
      {"--batch=1e3", "bench_nets: --batch must be an integer from 1 to 2147483647, got '1e3'"},
      {"--batch=8abc", "bench_nets: --batch must be an integer from 1 to 2147483647, got '8abc'"},
      {"--batch=99999999999", "bench_nets: --batch must be an integer from 1 to 2147483647, got '99999999999'"},
      {"--batch=", "bench_nets: --batch= needs a value, got an empty one"},
      {"--device=", "bench_nets: --device= needs a value, got an empty one"},
      {"--device cpu", "bench_nets: --device needs a value: --device=VALUE (bench_nets' flags are written --flag=value)"},
      {"--device=cpu --device=cpu", "bench_nets: --device is given twice; give it once"},
      {"--benchmark_filter=a --benchmark_filter=b", "bench_nets: --benchmark_filter is given twice; give it once"},
      {"--benchmark_format=xml", "bench_nets: --benchmark_format: unknown format 'xml'; valid: console, json"},
      {"--benchmark_out_format=csv", "bench_nets: --benchmark_out_format: unknown format 'csv'; valid: console, json"},
      {"--benchmark_min_time=abc", "bench_nets: --benchmark_min_time must be a number from 0 to 1000000, got 'abc'"},
      {"--benchmark_repetitions=0", "bench_nets: --benchmark_repetitions must be an integer from 1 to 1000000, got '0'"},
      {"--benchmark_time_unit=h", "bench_nets: --benchmark_time_unit: unknown unit 'h'; valid: ns, us, ms, s"},
      {"--cudnn-search=yes", "bench_nets: --cudnn-search takes no value"},
      {"--deterministic=yes", "bench_nets: --deterministic takes no value"},
      {"--deterministic --deterministic", "bench_nets: --deterministic is given twice; give it once"},
      {"--benchmark_out=", "bench_nets: --benchmark_out needs a value: --benchmark_out=VALUE"},
      {"--benchmark_filter", "bench_nets: --benchmark_filter needs a value: --benchmark_filter=VALUE"},
      {"'--benchmark_filter=('", "bench_nets: --benchmark_filter='(' is not a regular expression (POSIX extended, as "
                               "Google Benchmark reads it): "},
      {"--benchmark_filter=" + std::string(1001, 'a'),
       "bench_nets: --benchmark_filter is 1001 characters long; at most 1000 are taken"},
      {"--benchmark_list_tests=flase",
       "bench_nets: --benchmark_list_tests=flase: give true or false (or yes, no, on, off, 1, 0)"},
      {"--benchmark_color=", "bench_nets: --benchmark_color needs a value: --benchmark_color=VALUE"},
      {"--benchmark_color=sometimes", "bench_nets: --benchmark_color=sometimes: give auto, true or false"},
      {"--benchmark_context=where=\xff", "bench_nets: --benchmark_context=where=\\xff: not UTF-8 text, which the "
                                         "results (JSON) must be"},
      {"--device=cpu --cudnn-search --autotune-cache=/tmp/x.json --benchmark_out=/tmp/x.json",
       "bench_nets: --autotune-cache /tmp/x.json is also --benchmark_out: the run would write both to one file"},
      {"--no-overlap=yes", "bench_nets: --no-overlap takes no value"},
      {"--no-nvtx=1", "bench_nets: --no-nvtx takes no value"},
      {"--no-winograd=1", "bench_nets: --no-winograd takes no value"},
      {"--data-parallel=1", "bench_nets: --data-parallel takes no value"},
      {"--cuda-graph=1", "bench_nets: --cuda-graph takes no value"},
      {"--device=cpu --cuda-graph",
       "bench_nets: --cuda-graph needs a CUDA device: a step is replayed as a CUDA graph; the device is cpu"},
      {"--device=cpu --cuda-graph --data-parallel",
       "bench_nets: --cuda-graph replays the steps of one process; a data-parallel step waits on the host between "
       "its all-reduce buckets and is not replayed (run without mpirun or --data-parallel)"},
      {"--bucket-mb=0", "bench_nets: --bucket-mb must be a number from 0.001 to 1048576, got '0'"},
      {"--steps=0", "bench_nets: --steps must be an integer from 1 to 1000000, got '0'"},
      {"--threads=0", "bench_nets: --threads must be an integer from 1 to 1024, got '0'"},
      {"--warmup=-1", "bench_nets: --warmup must be an integer from 0 to 1000000, got '-1'"},
      {"--warmup", "bench_nets: --warmup needs a value: --warmup=VALUE (bench_nets' flags are written --flag=value)"},
      {"VGG16", "bench_nets: unexpected argument 'VGG16': bench_nets takes only flags; choose networks with "
                "--benchmark_filter=REGEX (e.g. --benchmark_filter=VGG16)"},
      {"--device=cpu --benchmark_out=/nonexistent-dir/r.json --benchmark_filter=LeNet",
       "bench_nets: --benchmark_out: cannot write '/nonexistent-dir/r.json': No such file or directory"},
  };
  for (const auto& c : cases) {
    const Outcome r = run(kBench + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << "bench_nets " << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << "bench_nets " << c.args << " printed:\n" << r.output;
  }
}

TEST(BenchNets, WritesTheOutputFileWholeWithTheLossesAndNothingElse) {
  char folder[] = "/tmp/glassbox-bench-out-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  const std::string path = std::string(folder) + "/r.json";
  const Outcome r = run(kBench + " --device=cpu --benchmark_filter='^LeNet/forward/' --benchmark_min_time=0.01 "
                                 "--cudnn-search --benchmark_out=" + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "bench_nets: --cudnn-search chooses cuDNN algorithms; it has no effect on the CPU"))
      << r.output;
  std::FILE* file = std::fopen(path.c_str(), "r");
  ASSERT_NE(file, nullptr) << path << " was not written";
  std::string json;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) json.append(buffer, n);
  std::fclose(file);
  for (const char* expected : {kLeNetForward.c_str(), "\"first_loss\"", "\"last_loss\"",
                               "\"images/s\"", "\"protocol\"", "\"cpu_threads_fit\""}) {
    EXPECT_TRUE(contains(json, expected)) << "missing " << expected << " in:\n" << json;
  }
  EXPECT_TRUE(json.ends_with("  ]\n}\n")) << "the JSON is not complete:\n" << json;
  const Outcome listing = run(std::string("ls -A ") + folder);
  EXPECT_EQ(listing.output, "r.json\n") << "temporary files left behind";
  run(std::string("rm -rf ") + folder);
}

TEST(BenchNets, OutputThatCannotBeWrittenIsAFailure) {
  const Outcome r = run("{ " + kBench + " --device=cpu --benchmark_filter='^LeNet/forward/' "
                                        "--benchmark_min_time=0.01 > /dev/full; }");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "bench_nets: standard output is incomplete: writing it failed")) << r.output;
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

// ---- Networks by name that the registry does not list: MLP specs ----
TEST(BenchNets, NetRegistersOneNetworkAnMlpSpecToo) {
  const Outcome r = run(kBench + " --device=cpu --net=mlp:784,32,10 --benchmark_filter=/forward/ "
                                 "--benchmark_min_time=0.01 --benchmark_format=json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\"name\": \"MLP:784,32,10/forward/batch:64\"")) << r.output;
  EXPECT_FALSE(contains(r.output, "LeNet/")) << "--net registers that network alone";
  const struct {
    std::string args, message;
  } refused[] = {
      {"--net=VGG17", "bench_nets: --net: unknown network 'VGG17'; valid: LeNet, AlexNet"},
      {"--net=MLP:784,0,10",
       "bench_nets: --net: network 'MLP:784,0,10': hidden size 1 must be an integer from 1 to 65536, got '0'"},
  };
  for (const auto& c : refused) {
    const Outcome bad = run(kBench + " " + c.args);
    EXPECT_EQ(bad.exit_code, 2) << "bench_nets " << c.args << "\n" << bad.output;
    EXPECT_TRUE(contains(bad.output, c.message)) << "bench_nets " << c.args << " printed:\n" << bad.output;
  }
}

// The seed studies' comparison: train_step on real data beside the synthetic
// batch, with the wait for data apart.
TEST(BenchNets, RealDataTrainStepBesideTheSyntheticOne) {
  const Outcome r = run(kBench + " --device=cpu --net=LeNet --data=synthetic:256 --workers=1 --batch=32 "
                                 "--benchmark_filter=LeNet/train_step --benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "LeNet/train_step/batch:32 ")) << r.output;
  EXPECT_TRUE(contains(r.output, "LeNet/train_step/batch:32/real_data")) << r.output;
  for (const char* counter : {"data_wait_ms", "compute_ms", "data_share"}) {  // columns of the real-data table
    EXPECT_TRUE(contains(r.output, counter)) << counter << " missing in:\n" << r.output;
  }
  const Outcome bad = run(kBench + " --device=cpu --net=LeNet --data=imagenet --benchmark_filter=real_data");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(contains(bad.output, "unknown data 'imagenet'")) << bad.output;
}

}  // namespace
