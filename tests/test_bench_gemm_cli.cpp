// tests/test_bench_gemm_cli.cpp: bench_gemm run as a user runs it: the
// shapes it reads from the networks, a timed product's counter and label,
// and its errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/command.h"
#include "tests/support/data_files.h"

namespace {

using Outcome = glassbox::testing::CommandOutcome;
using glassbox::testing::contains;
using glassbox::testing::contains_match;
Outcome run(const std::string& command) { return glassbox::testing::run_command(command); }

const std::string kBench = glassbox::testing::program_path(BENCH_GEMM_PATH);

// Each shape is one image's im2col product of a convolution, K x P*Q x C*R*S,
// listed once with the layers that share it.
TEST(BenchGemm, ListsTheYardstickAndTheConvolutionsOwnShapes) {
  const Outcome r = run(kBench + " --list-shapes");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "2048,2048,2048 the 2048^3 yardstick\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "64,12544,147 ResNet50 conv1\n")) << "7x7 s2, 3 -> 64 at 112x112:\n" << r.output;
  EXPECT_TRUE(contains(r.output, "64,50176,27 VGG16 conv1_1\n")) << "3x3, 3 -> 64 at 224x224:\n" << r.output;
  EXPECT_TRUE(contains(r.output, "512,196,4608 VGG16 conv5_1 (+2 more)\n")) << "conv5_1 to 5_3 share it:\n"
                                                                            << r.output;
  const Outcome listed = run(kBench + " --nets=LeNet --benchmark_list_tests");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(listed.output, "GEMM/2048x2048x2048\nGEMM/6x784x25\nGEMM/16x100x150\n") << "the plain names";
  const Outcome lenet = run(kBench + " --list-shapes --nets=LeNet");
  ASSERT_EQ(lenet.exit_code, 0) << lenet.output;
  EXPECT_EQ(lenet.output, "2048,2048,2048 the 2048^3 yardstick\n6,784,25 LeNet conv1\n16,100,150 LeNet conv2\n");
}

TEST(BenchGemm, TimesAProductWithItsRateAndTheLibraryThatRanIt) {
  const Outcome r = run(kBench + " --nets=LeNet --threads=1 --benchmark_filter='^GEMM/16x100x150$' "
                                 "--benchmark_min_time=0.01 --benchmark_format=json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto doc = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  ASSERT_EQ(doc.at("benchmarks").size(), 1u) << r.output;
  const auto& row = doc.at("benchmarks")[0];
  EXPECT_GT(row.at("GFLOP/s").get<double>(), 0.0) << r.output;
  const std::string label = row.at("label");
  EXPECT_TRUE(label.starts_with("LeNet conv2; ")) << label;
  EXPECT_TRUE(label.ends_with("oneDNN sgemm") || label.ends_with("OpenBLAS") || label.ends_with("Eigen")) << label;
  EXPECT_EQ(doc.at("context").at("cpu_threads"), "1") << r.output;
}

// --serve answers each line: a product's rate, or an error for a malformed
// line (a window of nan seconds included) and for operands the host's memory
// cannot hold (here under a 3 GB address-space limit), and goes on serving.
TEST(BenchGemm, ServeAnswersEveryLineAndGoesOn) {
  const Outcome r = run("printf '8 8 8 nan\\n100000 100000 100000 0.01\\n8 8 8 0.01\\n' | "
                        "(ulimit -v 3000000; " + kBench + " --serve --threads=1)");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "error: expected 'm n k seconds' (sides from 1 to 1048576, seconds up to 3600), "
                                 "got '8 8 8 nan': seconds must be a number from "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "error: out of host memory for the operands of 100000 x 100000 x 100000")) << r.output;
  const std::string last = r.output.substr(r.output.rfind("error: out of host memory"));
  EXPECT_TRUE(contains_match(last, "\n[0-9]+\\.[0-9]{3} ")) << "no rate after the errors:\n" << r.output;
}

// Each request line gets one answer line, whatever it holds: extra words,
// a number past the limits, a line longer than any buffer, a control byte
// (quoted escaped, so the answer stays one line); a blank line gets none.
TEST(BenchGemm, ServeAnswersEachLineWithOneLine) {
  const std::string long_line(300, '7');
  const Outcome r = run("printf '8 8 8 0.01 extra\\n\\n  \\n" + long_line +
                        " 1 1 0.01\\n1 1 1 100000\\n8\\t8 8 0.01\\r\\n\\033[2J\\n8 8 8 0.01\\n' | " + kBench +
                        " --serve --threads=1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> lines;
  std::istringstream stream(r.output);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 7u) << "one banner and one answer per request:\n" << r.output;
  EXPECT_TRUE(contains(lines[1], "got '8 8 8 0.01 extra': 5 words where 4 are")) << lines[1];
  EXPECT_TRUE(contains(lines[2], ": m must be an integer from 1 to 1048576, got '7777")) << lines[2];
  EXPECT_TRUE(contains(lines[3], "got '1 1 1 100000': seconds must be a number from ")) << lines[3];
  EXPECT_TRUE(contains_match(lines[4], "^[0-9]+\\.[0-9]{3} ")) << "tabs and a CRLF end are a request\n" << lines[4];
  EXPECT_TRUE(contains(lines[5], "got '\\x1b[2J': 1 word where 4 are")) << lines[5];
  EXPECT_TRUE(contains_match(lines[6], "^[0-9]+\\.[0-9]{3} ")) << lines[6];
}

// Google Benchmark reads its flags from the environment too: they are taken
// as the flags, checked, and the output file is written here, whole, under
// the plain names.
TEST(BenchGemm, GoogleBenchmarksEnvironmentIsTakenAsItsFlags) {
  glassbox::testing::TempDir dir;
  const Outcome r = run("BENCHMARK_OUT=" + dir / "env.json" + " BENCHMARK_OUT_FORMAT=json " + kBench +
                        " --nets=LeNet '--benchmark_filter=^GEMM/6x784x25$' --benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto doc = nlohmann::json::parse(glassbox::testing::read_whole_file(dir / "env.json"));
  ASSERT_EQ(doc.at("benchmarks").size(), 1u) << doc.dump();
  EXPECT_EQ(doc.at("benchmarks")[0].at("name"), "GEMM/6x784x25");
  const Outcome listing = run("BENCHMARK_OUT=" + dir / "list.json" + " " + kBench + " --list-shapes");
  EXPECT_EQ(listing.exit_code, 2) << "the variable counts as the flag, refused beside --list-shapes: "
                                  << listing.output;
  const Outcome bad = run("BENCHMARK_FORMAT=xml " + kBench + " --nets=LeNet --benchmark_list_tests");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(contains(bad.output, "bench_gemm: the environment's BENCHMARK_FORMAT: --benchmark_format: unknown "
                                   "format 'xml'; valid: console, json"))
      << bad.output;
}

TEST(BenchGemm, BadFlagsAreUsageErrorsNamingThem) {
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--threads=0", "bench_gemm: --threads must be an integer from 1 to 1024, got '0'"},
      {"--nets=", "bench_gemm: --nets=: an empty network name; give one network or more, comma-separated ("},
      {"--nets=LeNet,,VGG16", "bench_gemm: --nets=LeNet,,VGG16: an empty network name;"},
      {"--nets=LeNet, --list-shapes", "bench_gemm: --nets=LeNet,: an empty network name;"},
      {"--nets=LeNet,MLP:784,256,10 --list-shapes",
       "bench_gemm: --nets: MLP:784,256,10 has no ungrouped convolution, whose products bench_gemm times"},
      {"--nets=mlp:784,10,LeNet --list-shapes", "bench_gemm: --nets: MLP:784,10 has no ungrouped convolution"},
      {"--nets=MLP:784,abc --list-shapes",
       "bench_gemm: --nets: network 'MLP:784,abc': classes must be an integer from 2 to 65536, got 'abc'"},
      {"--benchmark_filter=NoSuchShape --benchmark_min_time=0.01",
       "bench_gemm: no benchmark matches --benchmark_filter='NoSuchShape'; --list-shapes lists them"},
      {"--no-such-flag", "bench_gemm: unknown flag '--no-such-flag'; --help lists the flags"},
      {"--benchmark_no_such_flag=1", "unrecognized command-line flag: --benchmark_no_such_flag=1"},
      {"--threads=1 --threads=2 --list-shapes", "bench_gemm: --threads is given twice; give it once"},
      {"--threads --list-shapes", "bench_gemm: --threads needs a value: --threads=VALUE"},
      {"--list-shapes --benchmark_filter=GEMM",
       "bench_gemm: --list-shapes runs no benchmark, so it takes no Google Benchmark flag (given: "
       "--benchmark_filter=GEMM)"},
      {"--list-shapes --serve", "bench_gemm: --list-shapes and --serve: give one of them"},
      {"--serve=1", "bench_gemm: --serve takes no value"},
      {"--list-shapes --benchmark_out=x.json",
       "bench_gemm: --list-shapes runs no benchmark, so it takes no Google Benchmark flag (given: --benchmark_out)"},
      {"--nets=LeNet,lenet --list-shapes", "bench_gemm: --nets: LeNet is given twice; give it once"},
      {"--nets=NoSuchNet --list-shapes", "bench_gemm: --nets: unknown network 'NoSuchNet'"},
      {"--benchmark_format=csv", "bench_gemm: --benchmark_format: unknown format 'csv'; valid: console, json"},
  };
  for (const auto& c : cases) {
    const Outcome r = run(kBench + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << "bench_gemm " << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << "bench_gemm " << c.args << " printed:\n" << r.output;
  }
}

}  // namespace
