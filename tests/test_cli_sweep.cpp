// tests/test_cli_sweep.cpp: `glassbox sweep`, run as a user runs it: a point
// per batch until memory runs out (--memory-limit makes that happen on the
// CPU), the JSON it writes, and its usage errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/command.h"
#include "tests/support/temp_dir.h"

namespace {

using glassbox::testing::contains;
using glassbox::testing::run_command;

const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);

nlohmann::json read_json(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return nlohmann::json::parse(text.str());
}

TEST(CliSweep, TimesEachBatchUntilOneDoesNotFitAndStops) {
  const glassbox::testing::TempDir dir;
  const std::string out = dir / "lenet.sweep.json";
  // LeNet's plan at batch 32 needs 2.76 MiB on Glassbox's own convolutions,
  // where 16 fits in 2 MiB; oneDNN's blocked copies in the workspace make them
  // 6.08 and 3.41 MiB (layers/conv2d/conv2d_onednn.h), so 16 fits in 4 MiB. Two
  // threads: the CPU workspace grows with them (on 16 threads, only batch 4
  // fits in 2 MiB).
  const int limit_mib = GLASSBOX_WITH_ONEDNN ? 4 : 2;
  const auto r = run_command(kCli + " sweep LeNet --device cpu --threads 2 --batches 1,2,...,64 --steps 1 --warmup 0 " +
                             "--memory-limit " + std::to_string(limit_mib) + "MiB --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "does not fit: cpu: out of memory")) << r.output;
  const nlohmann::json doc = read_json(out);
  EXPECT_EQ(doc["kind"], "glassbox.sweep");
  EXPECT_EQ(doc["network"], "LeNet");
  const auto& points = doc["points"];
  ASSERT_EQ(points.size(), 6u);  // 1, 2, 4, 8, 16 fit; 32 does not; 64 is not tried
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    EXPECT_EQ(points[i]["batch"], 1 << i);
    EXPECT_GT(points[i]["images_per_s"].get<double>(), 0.0);
    EXPECT_LE(points[i]["peak_bytes"].get<int64_t>(), int64_t{limit_mib} << 20);
    EXPECT_GT(points[i]["memory"]["activations"].get<int64_t>(), 0);
    if (i > 0) {
      EXPECT_GT(points[i]["peak_bytes"], points[i - 1]["peak_bytes"]);
    }
  }
  EXPECT_EQ(doc["largest"]["kind"], "glassbox.time");  // the per-layer document of batch 16
  EXPECT_EQ(doc["largest"]["batch"], 16);
  EXPECT_EQ(doc["largest"]["layers"].size(), 13u);
  EXPECT_EQ(points[5]["batch"], 32);
  EXPECT_TRUE(contains(points[5]["error"].get<std::string>(), "limit of " + std::to_string(limit_mib) + ".00 MiB"))
      << points[5];
}

TEST(CliSweep, BadBatchListsAreUsageErrorsNamingTheFlag) {
  const struct {
    std::string list;
    std::string message;
  } cases[] = {
      {"0,1", "glassbox: --batches must be an integer from 1 to 2147483647, got '0'"},
      {"1,...,8", "glassbox: --batches 1,...,8: '...' needs two batches before it and the last one after it, "
                  "as in 1,2,4,...,256"},
      {"1,2,...", "glassbox: --batches 1,2,...: '...' needs two batches before it and the last one after it"},
      {"2,3,...,9", "glassbox: --batches 2,3,...,9: before '...', 3 must be a multiple of 2 greater than it"},
      {"4,2", "glassbox: --batches 4,2: batches must grow from left to right (4 then 2)"},
      {",", "glassbox: --batches must be an integer from 1 to 2147483647, got ''"},
      {"1,2,", "glassbox: --batches must be an integer from 1 to 2147483647, got ''"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(kCli + " sweep LeNet --device cpu --batches '" + c.list + "'");
    EXPECT_EQ(r.exit_code, 2) << c.list << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << c.list << "\n" << r.output;
  }
}

// A batch too large for the network's shapes is refused before any batch is
// measured: found last, it would have ended the sweep with nothing written.
TEST(CliSweep, ABatchTooLargeForTheShapesIsRefusedBeforeAnyIsMeasured) {
  const glassbox::testing::TempDir dir;
  const std::string out = dir / "alexnet.sweep.json";
  const auto r = run_command(kCli + " sweep AlexNet --device cpu --steps 1 --warmup 0 --batches 1,2147483647 --out " +
                             out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: AlexNet at batch 2147483647 is too large: ")) << r.output;
  EXPECT_FALSE(contains(r.output, "train steps")) << "the sweep began before the batches were checked:\n" << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// The document and the header name the precision the steps ran in.
TEST(CliSweep, RecordsThePrecisionItsStepsRanIn) {
  const glassbox::testing::TempDir dir;
  const std::string out = dir / "bf16.sweep.json";
  const auto r = run_command(kCli + " sweep LeNet --device cpu --threads 1 --batches 1,2 --steps 1 --warmup 0 " +
                             "--precision bf16 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, ", bf16 (mixed")) << r.output;
  const nlohmann::json doc = read_json(out);
  EXPECT_TRUE(contains(doc["runtime"]["precision"].get<std::string>(), "bf16")) << doc["runtime"];
  EXPECT_EQ(doc["runtime"]["precision"], doc["largest"]["runtime"]["precision"]);
}

}  // namespace
