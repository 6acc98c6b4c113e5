// tests/test_bench_data.cpp: build/bench_data run as a user runs it (built
// only with the benchmarks): its refusal without --folder, and one short run
// on a small folder, with both names and the images/s counter.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "data/jpeg.h"
#include "tensor/error.h"
#include "tests/support/command.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::contains_match;

testing::CommandOutcome run(const std::string& arguments) {
  return testing::run_command(cat(testing::program_path(BENCH_DATA_PATH), " ", arguments));
}

TEST(BenchData, NeedsAFolder) {
  const testing::CommandOutcome r = run("--benchmark_min_time=0.01");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "bench_data: --folder=PATH is required: a folder of JPEGs PATH/<class>/*.jpg"))
      << r.output;
}

TEST(BenchData, TimesTheLoaderWithEachWorkerCount) {
  testing::TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a", "b"}, .per_class = 17, .width = 64, .height = 48});
  const testing::CommandOutcome r =
      run("--folder=" + dir.path() + " --workers=1,2 --benchmark_filter=loader --benchmark_min_time=0.01");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "ImageFolder/loader/3x224x224/training/workers:1")) << r.output;
  EXPECT_TRUE(contains(r.output, "ImageFolder/loader/3x224x224/training/workers:2")) << r.output;
  const testing::CommandOutcome bad = run("--folder=" + dir.path() + " --workers=");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(contains(bad.output, "bench_data: --workers= needs a list of worker counts, e.g. --workers=1,2"))
      << bad.output;
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--workers=1,", "bench_data: --workers must be an integer from 1 to 256, got ''"},
      {"--workers=1,1", "bench_data: --workers '1,1': worker counts must grow from left to right (1 then 1)"},
      {"--workers=1 --workers=2", "bench_data: --workers is given twice; give it once"},
      {"--folder=" + dir.path() + " --folder=/tmp", "bench_data: --folder is given twice; give it once"},
  };
  for (const auto& c : cases) {
    const testing::CommandOutcome r2 = run("--folder=" + dir.path() + " " + c.args);
    EXPECT_EQ(r2.exit_code, 2) << c.args << "\n" << r2.output;
    EXPECT_TRUE(contains(r2.output, c.message)) << c.args << "\n" << r2.output;
  }
}

TEST(BenchData, TimesBothModesOnAFolder) {
  testing::TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a", "b"}, .per_class = 2, .width = 300, .height = 260});
  const testing::CommandOutcome r = run("--folder=" + dir.path() + " --benchmark_min_time=0.01");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "ImageFolder/load/3x224x224/training")) << r.output;
  EXPECT_TRUE(contains(r.output, "ImageFolder/load/3x224x224/evaluation")) << r.output;
  EXPECT_TRUE(contains_match(r.output, "\nImageFolder/load/3x224x224/training +[0-9.]+ ms .* [0-9.]+k?/s"))
      << "a time and a rate:\n" << r.output;
  EXPECT_TRUE(contains(r.output, "bench_data: 4 images are fewer than one batch of 32: no Loader benchmarks"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "bench_data: 4 images in 2 classes, prepared to 3x224x224")) << r.output;
}

// Unreadable files: a folder whose first file is broken still times the
// rest, counting only the images prepared, and names the files that cannot
// be read; a folder of nothing readable fails each benchmark by name, the
// loader's too, and the run says so with its exit code; a filter that
// matches nothing is a usage error.
TEST(BenchData, UnreadableFilesAreSkippedOrFailTheirBenchmarkByName) {
  testing::TempDir dir;
  testing::make_jpeg_folder(dir / "some", {.classes = {"a"}, .per_class = 4, .width = 64, .height = 48});
  testing::write_file(dir / "some/a/0.jpg", "not a JPEG");
  // A pipe named as an image is named and skipped, never waited on.
  ASSERT_EQ(::mkfifo((dir / "some/a/9.jpg").c_str(), 0600), 0);
  const testing::CommandOutcome some =
      run("--folder=" + dir / "some" + " --benchmark_filter=evaluation --benchmark_min_time=0.01");
  EXPECT_EQ(some.exit_code, 0) << some.output;
  EXPECT_TRUE(contains(some.output, "bench_data: 1 of 5 files cannot be read, counted as skipped; the first: " +
                                        dir / "some/a/9.jpg: Is a named pipe, not a regular file\n"))
      << some.output;
  EXPECT_TRUE(contains_match(some.output, " images/s +skipped\n")) << some.output;
  EXPECT_FALSE(contains(some.output, "ERROR OCCURRED")) << some.output;

  for (int i = 0; i < 32; ++i) testing::write_file(cat(dir / "none/a/", i, ".jpg"), "not a JPEG");
  const testing::CommandOutcome none =
      run("--folder=" + dir / "none" + " --workers=1 --benchmark_min_time=0.01 --benchmark_out=" + dir / "none.json");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_TRUE(contains(none.output, "every file failed to load, the first: ")) << none.output;
  EXPECT_TRUE(contains(none.output, "ImageFolder/loader/3x224x224/training/workers:1")) << none.output;
  EXPECT_TRUE(contains(none.output, "all 32 samples are unreadable")) << none.output;
  const std::string json = testing::read_whole_file(dir / "none.json");
  EXPECT_TRUE(json.ends_with("}\n") || json.ends_with("}")) << "the results file is not whole:\n" << json;

  const testing::CommandOutcome nothing = run("--folder=" + dir / "some" + " --benchmark_filter=NOMATCH");
  EXPECT_EQ(nothing.exit_code, 2) << nothing.output;
  EXPECT_TRUE(contains(nothing.output, "bench_data: no benchmark matches --benchmark_filter")) << nothing.output;
}

// Google Benchmark's own flags, checked before anything runs
// (bench/support/google_benchmark.h): Google Benchmark 1.7.1 would print its
// usage and exit 0 for a bad format, and say only "invalid file name" for an
// output in a missing folder.
TEST(BenchData, BadGoogleBenchmarkFlagsAreUsageErrorsNamingThem) {
  testing::TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a"}, .per_class = 2, .width = 64, .height = 48});
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--benchmark_format=xml", "bench_data: --benchmark_format: unknown format 'xml'; valid: console, json"},
      {"--benchmark_out=" + dir / "missing/out.json", "bench_data: --benchmark_out: "},
      {"--benchmark_repetitions=0", "bench_data: --benchmark_repetitions must be an integer from 1 to 1000000"},
      {"--benchmark_filter=a --benchmark_filter=b", "bench_data: --benchmark_filter is given twice; give it once"},
      {"--workers", "bench_data: --workers needs a value: --workers=VALUE"},
      {"--benchmark_out=" + dir / "a/1.jpg",
       "bench_data: --benchmark_out=" + dir / "a/1.jpg" + " is one of --folder's images; write the results elsewhere"},
  };
  for (const auto& c : cases) {
    const testing::CommandOutcome r = run("--folder=" + dir.path() + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << c.args << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "ImageFolder/load")) << "nothing runs: " << c.args << "\n" << r.output;
  }
}

// Note [Filters match the printed names]: an anchored filter copied from the
// output matches, although the registered name ends in /real_time. Note [No
// NaN in the JSON]: with repetitions, the "skipped" counter, 0 every time,
// has no coefficient of variation, and the file is JSON that a strict
// reader takes.
TEST(BenchData, AnAnchoredFilterMatchesAndRepetitionsWriteStrictJson) {
  testing::TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a", "b"}, .per_class = 16, .width = 64, .height = 48});
  const std::string loader = "ImageFolder/loader/3x224x224/training/workers:1";
  const testing::CommandOutcome r =
      run("--folder=" + dir.path() + " '--benchmark_filter=^" + loader + "$' --workers=1 "
          "--benchmark_min_time=0.01 --benchmark_repetitions=2 --benchmark_out=" + dir / "out.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = testing::read_whole_file(dir / "out.json");
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(text)) << text;
  std::set<std::string> names;
  for (const auto& row : doc.at("benchmarks")) {
    names.insert(row.at("name").get<std::string>());
    if (row.value("aggregate_name", "") == "cv") {
      EXPECT_FALSE(row.contains("skipped")) << row.dump();
    }
    if (row.value("aggregate_name", "") == "mean") {
      EXPECT_EQ(row.at("skipped"), 0.0) << row.dump();
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{loader, loader + "_mean", loader + "_median", loader + "_stddev",
                                          loader + "_cv"}))
      << text;
}

}  // namespace
}  // namespace glassbox
