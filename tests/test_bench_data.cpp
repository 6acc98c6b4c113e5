// tests/test_bench_data.cpp: build/bench_data run as a user runs it (built
// only with the benchmarks): its refusal without --folder, and one short run
// on a small folder, with both names and the images/s counter.
#include <gtest/gtest.h>

#include "data/jpeg.h"
#include "tensor/error.h"
#include "tests/support/command.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using testing::contains;

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
  EXPECT_TRUE(contains(r.output, "images/s=")) << r.output;
  EXPECT_TRUE(contains(r.output, "bench_data: 4 images are fewer than one batch of 32: no Loader benchmarks"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "bench_data: 4 images in 2 classes, prepared to 3x224x224")) << r.output;
}

// Unreadable files: a folder whose first file is broken still times the
// rest, counting only the images prepared; a folder of nothing readable
// fails each benchmark by name, the loader's too, and the run says so with
// its exit code; a filter that matches nothing is a usage error.
TEST(BenchData, UnreadableFilesAreSkippedOrFailTheirBenchmarkByName) {
  testing::TempDir dir;
  testing::make_jpeg_folder(dir / "some", {.classes = {"a"}, .per_class = 4, .width = 64, .height = 48});
  testing::write_file(dir / "some/a/0.jpg", "not a JPEG");
  const testing::CommandOutcome some =
      run("--folder=" + dir / "some" + " --benchmark_filter=evaluation --benchmark_min_time=0.01");
  EXPECT_EQ(some.exit_code, 0) << some.output;
  EXPECT_TRUE(contains(some.output, "images/s=")) << some.output;
  EXPECT_TRUE(contains(some.output, "skipped=")) << some.output;
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

}  // namespace
}  // namespace glassbox
