// tests/test_lr_schedule.cpp: learning-rate schedules, step by step, and
// their parsing.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "optim/lr_schedule.h"
#include "tensor/error.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

TEST(LrSchedule, ConstantStepAndCosine) {
  const LrSchedule constant{};
  EXPECT_FLOAT_EQ(constant.at(0.1f, 0, 100, 10), 0.1f);
  EXPECT_FLOAT_EQ(constant.at(0.1f, 99, 100, 10), 0.1f);

  const LrSchedule step = parse_lr_schedule("step:3:0.5", "--schedule");  // halve every 3 epochs of 10 steps
  EXPECT_FLOAT_EQ(step.at(0.2f, 29, 100, 10), 0.2f);  // epoch 2
  EXPECT_FLOAT_EQ(step.at(0.2f, 30, 100, 10), 0.1f);  // epoch 3
  EXPECT_FLOAT_EQ(step.at(0.2f, 65, 100, 10), 0.05f);  // epoch 6

  const LrSchedule cosine = parse_lr_schedule("cosine", "--schedule");
  EXPECT_FLOAT_EQ(cosine.at(0.1f, 0, 100, 10), 0.1f);
  EXPECT_NEAR(cosine.at(0.1f, 50, 100, 10), 0.05f, 1e-7);
  EXPECT_NEAR(cosine.at(0.1f, 25, 100, 10), 0.1 * (1 + std::cos(std::numbers::pi / 4)) / 2, 1e-7);
  EXPECT_NEAR(cosine.at(0.1f, 100, 100, 10), 0.0f, 1e-7);
}

TEST(LrSchedule, LinearWarmUpThenTheSchedule) {
  LrSchedule cosine = parse_lr_schedule("cosine", "--schedule");
  cosine.warmup_steps = 4;
  EXPECT_FLOAT_EQ(cosine.at(0.4f, 0, 104, 10), 0.1f);
  EXPECT_FLOAT_EQ(cosine.at(0.4f, 3, 104, 10), 0.4f);
  EXPECT_FLOAT_EQ(cosine.at(0.4f, 4, 104, 10), 0.4f);  // the cosine starts after the warm-up
  EXPECT_NEAR(cosine.at(0.4f, 54, 104, 10), 0.2f, 1e-7);
}

// A step schedule counts epochs from the run's first step, warm-up included
// (Goyal et al.'s decays at epochs 30, 60, 80 of the run).
TEST(LrSchedule, AStepScheduleCountsTheWarmUpEpochs) {
  LrSchedule step = parse_lr_schedule("step:2:0.5", "--schedule");
  step.warmup_steps = 10;  // one epoch of 10 steps
  EXPECT_FLOAT_EQ(step.at(0.4f, 9, 100, 10), 0.4f);    // the warm-up's last step
  EXPECT_FLOAT_EQ(step.at(0.4f, 10, 100, 10), 0.4f);   // epoch 1
  EXPECT_FLOAT_EQ(step.at(0.4f, 20, 100, 10), 0.2f);   // epoch 2: the first decay
}

// A schedule built in code, not parsed, is checked before a run follows it.
TEST(LrSchedule, AStepScheduleThatCannotDecayIsRefused) {
  EXPECT_NO_THROW(check_lr_schedule(parse_lr_schedule("step:30:0.1", "--schedule")));
  EXPECT_NO_THROW(check_lr_schedule(LrSchedule{}));
  const char* const why = ": a step schedule decays every 1 or more epochs by a gamma in (0, 1]";
  try {
    check_lr_schedule({.kind = LrSchedule::Kind::kStep});  // step_epochs 0: a division by zero in at()
    ADD_FAILURE() << "accepted step_epochs 0";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), std::string("learning-rate schedule step:0:0.1") + why);
  }
  EXPECT_THROW(check_lr_schedule({.kind = LrSchedule::Kind::kStep, .step_epochs = 3, .gamma = 1.5f}), ConfigError);
  // A negative warm-up would make at() divide by it: rates of the wrong sign.
  EXPECT_EQ(testing::message_of<ConfigError>(
                [] { check_lr_schedule({.kind = LrSchedule::Kind::kCosine, .warmup_steps = -4}); }),
            "learning-rate schedule cosine: -4 warm-up steps; there are 0 or more");
  EXPECT_NO_THROW(check_lr_schedule({.warmup_steps = 0}));
}

// Steps count from 0: a negative one has no rate (a warm-up would give it -inf).
TEST(LrSchedule, ANegativeStepHasNoRate) {
  const LrSchedule warm{.warmup_steps = 5};
  EXPECT_EQ(testing::message_of<ConfigError>([&] { (void)warm.at(0.1f, -1, 100, 10); }),
            "learning-rate schedule: step -1: steps count from 0");
  EXPECT_FLOAT_EQ(warm.at(0.1f, 0, 100, 10), 0.02f);
}

TEST(LrSchedule, NamesRoundTrip) {
  for (const char* text : {"constant", "cosine", "step:30:0.1", "step:1:0.12345678"}) {
    EXPECT_EQ(parse_lr_schedule(text, "--schedule").str(), text);
  }
  // A gamma keeps every digit it needs to read back as the same float; the
  // text is rounded once, to float (through double, this one lands a float
  // off: 7.038531e-26 read as 0x1.5c87fcp-84).
  for (const char* text : {"step:2:0.987654321", "step:1:7.0385306e-26"}) {
    const LrSchedule odd = parse_lr_schedule(text, "--schedule");
    EXPECT_EQ(parse_lr_schedule(odd.str(), "--schedule").gamma, odd.gamma) << text;
    EXPECT_EQ(parse_lr_schedule(odd.str(), "--schedule").str(), odd.str()) << text;
  }
}

TEST(LrSchedule, BadSchedulesNameTheFlagAndTheForms) {
  auto message = [](const char* text) {
    try {
      parse_lr_schedule(text, "--schedule");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("linear"),
            "--schedule: unknown schedule 'linear'; valid: constant, cosine, step:EPOCHS:GAMMA (e.g. step:30:0.1)");
  EXPECT_EQ(message("step:30"),
            "--schedule: unknown schedule 'step:30'; valid: constant, cosine, step:EPOCHS:GAMMA (e.g. step:30:0.1)");
  EXPECT_EQ(message("step:0:0.1"), "--schedule step:EPOCHS must be an integer from 1 to 2147483647, got '0'");
  EXPECT_EQ(message("step:30:2"), "--schedule step:EPOCHS:GAMMA must be a number from 0 to 1, got '2'");
  EXPECT_EQ(message("step:30:0"), "--schedule step:EPOCHS:GAMMA must be above 0: a gamma of 0 would leave a rate of 0 "
                                  "after the first step, which trains nothing");
}

}  // namespace
}  // namespace glassbox
