// tests/test_epoch_report.cpp: what `glassbox train` prints and logs of an
// epoch's fp16 loss scaling (tools/cli/progress.h, tools/cli/training_log.h):
// the scale and the skipped updates, also once the scale has halved to 0,
// the state a run that overflows at every step reaches (optim/loss_scale.h);
// nothing of it for a run without loss scaling; a language model's line;
// columns that stay apart whatever their values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/data_files.h"
#include "tools/cli/progress.h"
#include "tools/cli/training_log.h"

namespace glassbox {
namespace {

using testing::contains;

EpochReport epoch_with_scale(std::optional<float> scale, int64_t overflows) {
  return {.epoch = 1, .epochs = 1, .steps = 200, .overflow_steps = overflows, .loss_scale = scale};
}

std::string printed_row(const EpochReport& epoch, cli::Progress::Units units = cli::Progress::Units::kImages) {
  std::FILE* out = std::tmpfile();
  cli::Progress progress(out, false, units);
  progress.epoch(epoch);
  std::fflush(out);
  std::rewind(out);
  std::string text;
  for (int c = std::fgetc(out); c != EOF; c = std::fgetc(out)) text += static_cast<char>(c);
  std::fclose(out);
  return text;
}

nlohmann::json logged_line(const EpochReport& epoch,
                           cli::TrainingLog::Units units = cli::TrainingLog::Units::kImages) {
  testing::TempDir dir;
  {
    cli::TrainingLog log(dir.file("log.jsonl"), 0, units);
    log.epoch(epoch);
  }
  std::ifstream in(dir.file("log.jsonl"));
  std::string line;
  std::getline(in, line);
  return nlohmann::json::parse(line);
}

// JSON holds UTF-8 text only (nlohmann::json's dump throws on other bytes),
// and a path is any bytes: the log's first line keeps such a setting escaped.
TEST(TrainingLog, ASettingThatIsNotUtf8IsLoggedEscaped) {
  testing::TempDir dir;
  {
    cli::TrainingLog log(dir.file("log.jsonl"), 0, cli::TrainingLog::Units::kImages);
    log.start({{"data", "folder:/img\xff" "dir"}, {"net", "LeNet"}});
  }
  std::ifstream in(dir.file("log.jsonl"));
  std::string text;
  std::getline(in, text);
  const nlohmann::json line = nlohmann::json::parse(text);
  EXPECT_EQ(line.at("data"), "folder:/img\\xffdir");
  EXPECT_EQ(line.at("net"), "LeNet");
}

TEST(EpochReport, AScaleHalvedToZeroIsStillReported) {
  const EpochReport zero = epoch_with_scale(0.0f, 200);
  EXPECT_TRUE(contains(printed_row(zero), "(loss scale 0, 200 overflowing steps skipped)")) << printed_row(zero);
  const nlohmann::json line = logged_line(zero);
  EXPECT_EQ(line.at("loss_scale"), 0.0);
  EXPECT_EQ(line.at("overflow_steps"), 200);

  const EpochReport clean = epoch_with_scale(65536.0f, 0);
  EXPECT_TRUE(contains(printed_row(clean), "(loss scale 65536)")) << printed_row(clean);
  EXPECT_EQ(logged_line(clean).at("loss_scale"), 65536.0);

  const EpochReport fp32 = epoch_with_scale(std::nullopt, 0);
  EXPECT_FALSE(contains(printed_row(fp32), "loss scale")) << printed_row(fp32);
  EXPECT_FALSE(logged_line(fp32).contains("loss_scale"));
}

// A language model's line counts tokens and gives perplexities, not accuracies.
TEST(EpochReport, ALanguageModelsLineCountsTokensAndHasNoAccuracy) {
  EpochReport epoch = epoch_with_scale(std::nullopt, 0);
  epoch.train_loss = std::log(50.0);
  epoch.images_per_second = 1234.0;
  const nlohmann::json lm = logged_line(epoch, cli::TrainingLog::Units::kTokens);
  EXPECT_EQ(lm.at("tokens_per_second"), 1234.0);
  EXPECT_NEAR(lm.at("train_perplexity").get<double>(), 50.0, 1e-9);
  EXPECT_FALSE(lm.contains("train_accuracy"));
  EXPECT_FALSE(lm.contains("images_per_second"));
  const nlohmann::json images = logged_line(epoch);
  EXPECT_EQ(images.at("images_per_second"), 1234.0);
  EXPECT_TRUE(images.contains("train_accuracy"));
  EXPECT_FALSE(images.contains("train_perplexity"));
}

// Every column keeps a space before it, whatever its value: a learning rate
// of 1000 or a perplexity of 1e69 (a diverged language model) once ran into
// the column before it as one long number.
TEST(EpochReport, ColumnsStaySeparateForAnyValue) {
  EpochReport epoch = epoch_with_scale(std::nullopt, 0);
  epoch.train_loss = 159.0;  // a perplexity of about 1e69
  epoch.images_per_second = 985.0;
  epoch.lr = 1000.0f;
  const std::string row = printed_row(epoch, cli::Progress::Units::kTokens);
  EXPECT_TRUE(contains(row, " 1.13e+69 ")) << row;  // e^159
  EXPECT_TRUE(contains(row, " 985 1000.0000")) << row;
  epoch.lr = 1e9f;
  EXPECT_TRUE(contains(printed_row(epoch, cli::Progress::Units::kTokens), "985     1e+09")) << printed_row(epoch);
  epoch.lr = 0.00048f;
  EXPECT_TRUE(contains(printed_row(epoch), "  0.000480")) << "small rates keep their six decimals";
}

}  // namespace
}  // namespace glassbox
