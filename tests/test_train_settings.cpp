// tests/test_train_settings.cpp: train's settings from its flags and from a
// checkpoint's saved settings (tools/cli/train_settings.h): what a new run
// saves, and that a resume gets back the run it continues.
#include <gtest/gtest.h>

#include "tests/support/data_files.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/train_settings.h"

namespace glassbox {
namespace {

cli::TrainSettings settings_of(const std::vector<std::string>& words, const cli::SavedSettings& saved = {}) {
  const cli::Args args("train", cli::train_flags(), words);
  return cli::train_settings(args, find_net(words.at(0)), Device::cpu(), /*ranks=*/1, saved);
}

TEST(TrainSettings, ANewRunSavesEverySettingInItsOneText) {
  const cli::TrainSettings run =
      settings_of({"LeNet", "--data", "synthetic:64", "--batch", "016", "--lr", "0.050", "--schedule", "step:30:0.10"});
  const std::map<std::string, std::string> expected = {
      {"net", "LeNet"}, {"data", "synthetic:64"}, {"batch", "16"}, {"lr", "0.05"}, {"schedule", "step:30:0.1"},
      {"warmup_epochs", "0"}, {"momentum", "0.9"}, {"nesterov", "false"}, {"weight_decay", "5e-04"}, {"clip", "0"},
      {"seed", "1"}, {"steps_per_epoch", "0"}, {"precision", "fp32"}, {"epochs", "10"}, {"ranks", "1"}};
  EXPECT_EQ(run.options.config, expected);
  EXPECT_EQ(run.batch, 16);
  EXPECT_FLOAT_EQ(run.options.sgd.lr, 0.05f);
}

TEST(TrainSettings, AResumeGetsBackTheRunItContinues) {
  const std::vector<std::string> flags = {"LeNet", "--data", "synthetic:64", "--batch", "016", "--precision", "fp16",
                                          "--loss-scale-init", "1e3", "--epochs", "3", "--nesterov"};
  const cli::TrainSettings first = settings_of(flags);
  EXPECT_EQ(first.options.config.at("loss_scale_init"), "1000");
  const cli::SavedSettings saved{.config = first.options.config, .file = "run/epoch-0001.train.safetensors"};
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"LeNet", "--resume", "run"},
        std::vector<std::string>{"LeNet", "--resume", "run", "--batch", "16", "--loss-scale-init", "1000.0"}}) {
    const cli::TrainSettings resumed = settings_of(words, saved);
    EXPECT_EQ(resumed.options.config, first.options.config);
    EXPECT_EQ(resumed.batch, 16);
    EXPECT_EQ(resumed.precision, Precision::kFp16);
    EXPECT_EQ(resumed.options.loss_scale.initial, 1000.0f);
    EXPECT_TRUE(resumed.options.sgd.nesterov);
    EXPECT_EQ(resumed.options.checkpoint_dir, "run") << "a resume keeps writing checkpoints where it resumed";
  }
}

TEST(TrainSettings, ALanguageModelHasItsOwnDefaultsAndNoImageFlags) {
  const cli::TrainSettings lm = settings_of({"LSTMSmall", "--data", "fortunes"});
  EXPECT_EQ(lm.options.config.at("lr"), "1");
  EXPECT_EQ(lm.options.config.at("clip"), "5");
  EXPECT_EQ(lm.options.config.at("schedule"), "constant");
  EXPECT_EQ(testing::message_of<ConfigError>(
                [] { settings_of({"LSTMSmall", "--data", "fortunes", "--on-bad-sample", "skip"}); }),
            "--on-bad-sample is for image data; LSTMSmall reads a text corpus, which has no samples to skip");
}

TEST(TrainSettings, ASavedSettingThatIsMissingOrBadIsTheFilesError) {
  const cli::TrainSettings first = settings_of({"LeNet", "--data", "synthetic:64"});
  cli::SavedSettings saved{.config = first.options.config, .file = "run/epoch-0001.train.safetensors"};
  saved.config.erase("momentum");
  EXPECT_EQ(testing::message_of<DataError>([&] { settings_of({"LeNet", "--resume", "run"}, saved); }),
            "run/epoch-0001.train.safetensors: no \"config.momentum\" in its __metadata__ (every setting of the run "
            "is saved with it)");
  EXPECT_NO_THROW(settings_of({"LeNet", "--resume", "run", "--momentum", "0.9"}, saved)) << "the flag gives it";
  saved.config["momentum"] = "2";
  EXPECT_EQ(testing::message_of<DataError>([&] { settings_of({"LeNet", "--resume", "run"}, saved); }),
            "run/epoch-0001.train.safetensors: __metadata__ \"config.momentum\" must be a number from 0 to 1, got "
            "'2'");
}

TEST(TrainSettings, ASavedSettingThisRunDoesNotHaveIsTheFilesError) {
  const cli::TrainSettings first = settings_of({"LeNet", "--data", "synthetic:64", "--precision", "bf16"});
  cli::SavedSettings saved{.config = first.options.config, .file = "run/epoch-0001.train.safetensors"};
  EXPECT_NO_THROW(settings_of({"LeNet", "--resume", "run"}, saved));
  saved.config["loss_scale_init"] = "1024";  // fp16's, in a bf16 run
  EXPECT_EQ(testing::message_of<DataError>([&] { settings_of({"LeNet", "--resume", "run"}, saved); }),
            "run/epoch-0001.train.safetensors: __metadata__ \"config.loss_scale_init\" = '1024' is not a setting of "
            "this bf16 run of glassbox train, which cannot continue it as it started");
  saved.config.erase("loss_scale_init");
  saved.config["dropout"] = "0.5";
  EXPECT_THROW(settings_of({"LeNet", "--resume", "run", "--data", "synthetic:64"}, saved), DataError)
      << "a flag for every setting the run has still leaves the one it has not";
  EXPECT_NO_THROW(settings_of({"LeNet", "--data", "synthetic:64"}, saved)) << "a new run has no saved settings";
}

}  // namespace
}  // namespace glassbox
