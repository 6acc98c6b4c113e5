// tests/test_bench_allreduce.cpp: build/bench_allreduce run as a user runs it
// (built only with the benchmarks), in a job of one on the CPU: the sizes up
// to --max-bytes with their counters, the results file written whole, and
// its errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tensor/error.h"
#include "tests/support/command.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using testing::contains;

testing::CommandOutcome run(const std::string& arguments) {
  return testing::run_command(cat(testing::program_path(BENCH_ALLREDUCE_PATH), " ", arguments));
}

TEST(BenchAllreduce, TimesEachSizeUpToTheLimitUnderItsPlainName) {
  testing::TempDir dir;
  const testing::CommandOutcome r = run("--device=cpu --max-bytes=16384 '--benchmark_filter=bytes:(4096|16384)$' "
                                        "--benchmark_out=" + dir / "out.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto doc = nlohmann::json::parse(testing::read_whole_file(dir / "out.json"));
  std::vector<std::string> names;
  for (const auto& row : doc.at("benchmarks")) {
    names.push_back(row.at("name"));
    EXPECT_GT(row.at("algbw_GB/s").get<double>(), 0.0) << row.dump();
    EXPECT_EQ(row.at("busbw_GB/s").get<double>(), 0.0) << "nothing crosses a link in a job of one: " << row.dump();
    EXPECT_EQ(row.at("ranks").get<double>(), 1.0) << row.dump();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"allreduce/single/ranks:1/bytes:4096",
                                             "allreduce/single/ranks:1/bytes:16384"}));
  EXPECT_EQ(doc.at("context").at("communicator"), "single, 1 ranks");
}

TEST(BenchAllreduce, BadFlagsAreUsageErrorsNamingThem) {
  testing::TempDir dir;
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--max-bytes=100", "bench_allreduce: --max-bytes must be an integer from 4096 to 1073741824, got '100'"},
      {"--max-bytes=4096 --max-bytes=8192", "bench_allreduce: --max-bytes is given twice; give it once"},
      {"--device=cpu --device", "bench_allreduce: --device is given twice; give it once"},
      {"--max-bytes", "bench_allreduce: --max-bytes needs a value: --max-bytes=VALUE"},
      {"--benchmark_filter=nothing",
       "bench_allreduce: no benchmark matches --benchmark_filter='nothing'; the benchmarks: "
       "allreduce/single/ranks:1/bytes:B for B = 4096, 4 times that, ... up to 4096"},
      {"--benchmark_out=" + dir / "missing/out.json", "bench_allreduce: --benchmark_out: "},
      {"--benchmark_time_unit=h", "bench_allreduce: --benchmark_time_unit: unknown unit 'h'; valid: ns, us, ms, s"},
  };
  for (const auto& c : cases) {
    const bool sized = contains(c.args, "--max-bytes");
    const testing::CommandOutcome r = run("--device=cpu " + c.args + (sized ? "" : " --max-bytes=4096"));
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace glassbox
