// tests/test_loss_scale.cpp: dynamic loss scaling (optim/loss_scale.h): the
// state machine against torch.amp.GradScaler's rules, the CPU unscale and its
// inf/NaN flag, and the options' checks.
#include "optim/loss_scale.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tensor/error.h"
#include "tensor/parallel_for.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Seeded values in (-range, range), never zero.
std::vector<float> random_values(size_t count, float range, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(0.01f, 1.0f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> values(count);
  for (float& v : values) v = (negative(engine) ? -range : range) * uniform(engine);
  return values;
}

// Bitwise comparison, naming the first element that differs and how many do.
void expect_same_bits(const std::vector<float>& actual, const std::vector<float>& expected, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  }
  EXPECT_EQ(differ, 0u) << what << ": first at element " << first << ", " << actual[first] << " against "
                        << expected[first];
}

TEST(LossScale, StartsAtTheInitialScaleWithPyTorchsDefaults) {
  const LossScaleOptions defaults;
  EXPECT_EQ(defaults.initial, 65536.0f);
  EXPECT_EQ(defaults.growth_factor, 2.0f);
  EXPECT_EQ(defaults.backoff_factor, 0.5f);
  EXPECT_EQ(defaults.growth_interval, 2000);
  const LossScaleState state = start_loss_scale({.initial = 1024.0f});
  EXPECT_EQ(state.scale, 1024.0f);
  EXPECT_EQ(state.clean_steps, 0);
  EXPECT_EQ(state.skipped_steps, 0);
}

// The fp16 step's order with real buffers: unscale (the flag), advance, and
// the update applies or not. An inf in the gradients of step 3 skips exactly
// step 3.
TEST(LossScale, AForcedOverflowSkipsExactlyThatStepAndHalvesTheScale) {
  const LossScaleOptions options{.initial = 1024.0f};  // growth_interval 2000: no growth here
  LossScaleState state = start_loss_scale(options);
  constexpr int kOverflowStep = 3;
  constexpr size_t kCount = 1000;
  std::vector<float> weights = random_values(kCount, 1.0f, 1);
  for (int step = 1; step <= 6; ++step) {
    const float scale_before = state.scale;
    const int32_t clean_before = state.clean_steps;
    // Gradients as backward leaves them: multiplied by the scale.
    std::vector<float> grads = random_values(kCount, 1e-3f, 100 + step);
    for (float& g : grads) g *= scale_before;
    if (step == kOverflowStep) grads[kCount / 3] = kInf;
    const std::vector<float> weights_before = weights;

    const bool found_inf = unscale_gradients_cpu(grads, state.scale);
    const bool applies = advance_loss_scale(state, found_inf, options);
    if (applies) {
      for (size_t i = 0; i < kCount; ++i) weights[i] -= 0.1f * grads[i];
    }

    SCOPED_TRACE(::testing::Message() << "step " << step);
    EXPECT_EQ(found_inf, step == kOverflowStep);
    EXPECT_EQ(applies, step != kOverflowStep);
    if (step == kOverflowStep) {
      EXPECT_EQ(state.scale, scale_before / 2);
      EXPECT_EQ(state.clean_steps, 0);
      expect_same_bits(weights, weights_before, "the weights of the skipped step");
    } else {
      EXPECT_EQ(state.scale, scale_before);
      EXPECT_EQ(state.clean_steps, clean_before + 1);
      EXPECT_NE(weights, weights_before);
    }
    EXPECT_EQ(state.skipped_steps, step < kOverflowStep ? 0 : 1);
  }
  EXPECT_EQ(state.scale, 512.0f);
  EXPECT_EQ(state.clean_steps, 3);  // steps 4, 5 and 6
}

TEST(LossScale, GrowsAfterExactlyGrowthIntervalCleanStepsAndASkipRestartsTheCount) {
  const LossScaleOptions options{.initial = 100.0f, .growth_interval = 3};
  LossScaleState state = start_loss_scale(options);
  EXPECT_TRUE(advance_loss_scale(state, false, options));
  EXPECT_TRUE(advance_loss_scale(state, false, options));
  EXPECT_EQ(state.scale, 100.0f) << "not before 3 clean steps";
  EXPECT_EQ(state.clean_steps, 2);
  EXPECT_TRUE(advance_loss_scale(state, false, options));
  EXPECT_EQ(state.scale, 200.0f) << "at the third clean step";
  EXPECT_EQ(state.clean_steps, 0);

  EXPECT_TRUE(advance_loss_scale(state, false, options));
  EXPECT_TRUE(advance_loss_scale(state, false, options));
  EXPECT_FALSE(advance_loss_scale(state, true, options));  // two clean, then a skip
  EXPECT_EQ(state.scale, 100.0f);
  EXPECT_EQ(state.clean_steps, 0);
  EXPECT_TRUE(advance_loss_scale(state, false, options));
  EXPECT_TRUE(advance_loss_scale(state, false, options));
  EXPECT_EQ(state.scale, 100.0f) << "the skip restarted the count: 2 clean steps since";
  EXPECT_TRUE(advance_loss_scale(state, false, options));
  EXPECT_EQ(state.scale, 200.0f);
  EXPECT_EQ(state.skipped_steps, 1);

  // growth_interval 1 grows at every clean step.
  LossScaleState every = start_loss_scale({.initial = 1.0f, .growth_interval = 1});
  for (int step = 1; step <= 4; ++step) advance_loss_scale(every, false, 2.0f, 0.5f, 1);
  EXPECT_EQ(every.scale, 16.0f);
  EXPECT_EQ(every.clean_steps, 0);
}

// A state restored under a smaller growth_interval than it was saved with
// still grows (Note [Advancing the loss scale]).
TEST(LossScale, ACountPastTheIntervalGrowsAtTheNextCleanStep) {
  LossScaleState state{.scale = 8.0f, .clean_steps = 10, .skipped_steps = 0};
  EXPECT_TRUE(advance_loss_scale(state, false, 2.0f, 0.5f, 4));
  EXPECT_EQ(state.scale, 16.0f);
  EXPECT_EQ(state.clean_steps, 0);
}

TEST(LossScale, NeverGrowsPastTheLargestFloat) {
  // FLT_MAX / 2 doubles to exactly FLT_MAX, which is finite: that growth applies.
  LossScaleState state{.scale = FLT_MAX / 2, .clean_steps = 0, .skipped_steps = 0};
  EXPECT_TRUE(advance_loss_scale(state, false, 2.0f, 0.5f, 1));
  EXPECT_EQ(state.scale, FLT_MAX);
  // From FLT_MAX, growing would be inf: the scale stays and the count restarts.
  for (int step = 0; step < 3; ++step) {
    EXPECT_TRUE(advance_loss_scale(state, false, 2.0f, 0.5f, 1));
    EXPECT_EQ(state.scale, FLT_MAX);
    EXPECT_EQ(state.clean_steps, 0);
  }
  // The same from 2^127, and with a factor whose product is far past float's range.
  state.scale = 0x1p127f;
  advance_loss_scale(state, false, 2.0f, 0.5f, 1);
  EXPECT_EQ(state.scale, 0x1p127f);
  state.scale = 2.0f;
  advance_loss_scale(state, false, FLT_MAX, 0.5f, 1);
  EXPECT_EQ(state.scale, 2.0f);
  EXPECT_TRUE(std::isfinite(state.scale));
  // A skip from FLT_MAX backs off as usual.
  state.scale = FLT_MAX;
  EXPECT_FALSE(advance_loss_scale(state, true, 2.0f, 0.5f, 1));
  EXPECT_EQ(state.scale, FLT_MAX / 2);
}

// Products are rounded once, as a float multiply rounds them, so a factor
// that is not a power of two gives the float product.
TEST(LossScale, FactorsThatAreNotPowersOfTwoRoundOnce) {
  const float growth = 1.1f, backoff = 0.3f, start = 1000.0f;
  LossScaleState state{.scale = start, .clean_steps = 0, .skipped_steps = 0};
  advance_loss_scale(state, false, growth, backoff, 1);
  const float grown = start * growth;
  EXPECT_EQ(state.scale, grown);
  advance_loss_scale(state, true, growth, backoff, 1);
  EXPECT_EQ(state.scale, grown * backoff);
}

// Consecutive overflows halve the scale without a floor (as PyTorch): to
// subnormals and then to 0, where every step is skipped and counted.
TEST(LossScale, BacksOffWithoutAFloorAndCountsEverySkip) {
  LossScaleState state = start_loss_scale({});
  for (int step = 1; step <= 16 + 149; ++step) advance_loss_scale(state, true, 2.0f, 0.5f, 2000);
  EXPECT_EQ(state.scale, 0x1p-149f) << "2^16 halved 165 times: the least subnormal";
  advance_loss_scale(state, true, 2.0f, 0.5f, 2000);
  EXPECT_EQ(state.scale, 0.0f);
  EXPECT_EQ(state.skipped_steps, 166);
  // At scale 0 every gradient, even 0, unscales to inf or NaN.
  std::vector<float> grads = {0.0f, 1e-30f, -3.0f};
  EXPECT_TRUE(unscale_gradients_cpu(grads, state.scale));
}

// A fixed pattern of flags, and the whole trajectory written out by hand
// from the rules (growth_interval 2, factors 2 and 0.5).
TEST(LossScale, FollowsAHandWrittenTrajectory) {
  const LossScaleOptions options{.initial = 8.0f, .growth_factor = 2.0f, .backoff_factor = 0.5f,
                                 .growth_interval = 2};
  const struct {
    bool found_inf;
    bool applies;
    float scale;
    int32_t clean_steps;
    int64_t skipped_steps;
  } steps[] = {
      // found_inf  applies  scale  clean  skipped
      {false, true, 8.0f, 1, 0},    // 1
      {false, true, 16.0f, 0, 0},   // 2: second clean step, grows
      {false, true, 16.0f, 1, 0},   // 3
      {true, false, 8.0f, 0, 1},    // 4: skip, backs off, count restarts
      {true, false, 4.0f, 0, 2},    // 5: skip again
      {false, true, 4.0f, 1, 2},    // 6
      {false, true, 8.0f, 0, 2},    // 7: grows
      {false, true, 8.0f, 1, 2},    // 8
      {true, false, 4.0f, 0, 3},    // 9: skip after one clean step
      {false, true, 4.0f, 1, 3},    // 10
      {false, true, 8.0f, 0, 3},    // 11: grows
      {false, true, 8.0f, 1, 3},    // 12
      {false, true, 16.0f, 0, 3},   // 13: grows
      {true, false, 8.0f, 0, 4},    // 14
  };
  LossScaleState state = start_loss_scale(options);
  int number = 0;
  for (const auto& expected : steps) {
    ++number;
    const bool applies = advance_loss_scale(state, expected.found_inf, options);
    EXPECT_EQ(applies, expected.applies) << "step " << number;
    EXPECT_EQ(state.scale, expected.scale) << "step " << number;
    EXPECT_EQ(state.clean_steps, expected.clean_steps) << "step " << number;
    EXPECT_EQ(state.skipped_steps, expected.skipped_steps) << "step " << number;
  }
}

// A buffer of several parallel chunks, so that a value in any chunk is seen.
constexpr size_t kLarge = size_t{1} << 20;
static_assert(kLarge > 4 * kElementwiseGrain, "the buffer spans several chunks");

TEST(UnscaleGradients, FindsInfAndNanAnywhere) {
  const std::vector<float> clean = random_values(kLarge, 1000.0f, 7);
  const float scale = 1024.0f;
  std::vector<float> expected(kLarge);
  for (size_t i = 0; i < kLarge; ++i) expected[i] = clean[i] * (1.0f / 1024.0f);
  for (float bad : {kInf, -kInf, kNaN}) {
    for (size_t at : {size_t{0}, kLarge / 2 + 12345, kLarge - 1}) {
      SCOPED_TRACE(::testing::Message() << bad << " at element " << at);
      std::vector<float> grads = clean;
      grads[at] = bad;
      EXPECT_TRUE(unscale_gradients_cpu(grads, scale));
      // The pass still unscales every other element.
      if (std::isnan(bad)) {
        EXPECT_TRUE(std::isnan(grads[at]));
      } else {
        EXPECT_EQ(grads[at], bad);
      }
      grads[at] = expected[at];
      expect_same_bits(grads, expected, "the other gradients");
    }
  }
}

TEST(UnscaleGradients, MultipliesByExactlyTheReciprocalAndAFiniteBufferIsClean) {
  for (float scale : {65536.0f, 3.0f, 1.0f, 0.375f}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale);
    const std::vector<float> before = random_values(kLarge + 3, 1e4f, 11);
    // GradScaler's inv_scale: the reciprocal in double, rounded once.
    const float inv_scale = static_cast<float>(1.0 / static_cast<double>(scale));
    EXPECT_EQ(inverse_loss_scale(scale), inv_scale);
    std::vector<float> expected(before.size());
    for (size_t i = 0; i < before.size(); ++i) expected[i] = before[i] * inv_scale;
    std::vector<float> grads = before;
    EXPECT_FALSE(unscale_gradients_cpu(grads, scale));
    expect_same_bits(grads, expected, "the unscaled gradients");
  }
  std::vector<float> none;
  EXPECT_FALSE(unscale_gradients_cpu(none, 2.0f));
}

// Below scale 1, unscaling multiplies: a finite gradient can become inf, and
// that is flagged as well (PyTorch checks only the scaled values).
TEST(UnscaleGradients, FlagsAFiniteGradientThatOverflowsWhenUnscaled) {
  std::vector<float> grads(3 * kElementwiseGrain, 1.0f);
  grads[2 * kElementwiseGrain + 5] = FLT_MAX;
  EXPECT_TRUE(unscale_gradients_cpu(grads, 0.25f));
  EXPECT_EQ(grads[2 * kElementwiseGrain + 5], kInf);
  EXPECT_EQ(grads[0], 4.0f);
}

TEST(LossScaleOptions, ChecksEveryFieldNamingItAndItsValue) {
  EXPECT_NO_THROW(check_loss_scale_options(LossScaleOptions{}));
  const struct {
    LossScaleOptions options;
    const char* message;
  } cases[] = {
      {{.initial = 0.0f}, "loss scaling: initial must be finite and positive, got 0"},
      {{.initial = -1.0f}, "loss scaling: initial must be finite and positive, got -1"},
      {{.initial = kInf}, "loss scaling: initial must be finite and positive, got inf"},
      {{.initial = kNaN}, "loss scaling: initial must be finite and positive, got nan"},
      {{.growth_factor = 1.0f}, "loss scaling: growth_factor must be finite and greater than 1, got 1"},
      {{.growth_factor = 0.5f}, "loss scaling: growth_factor must be finite and greater than 1, got 0.5"},
      {{.growth_factor = kInf}, "loss scaling: growth_factor must be finite and greater than 1, got inf"},
      {{.growth_factor = kNaN}, "loss scaling: growth_factor must be finite and greater than 1, got nan"},
      {{.backoff_factor = 0.0f}, "loss scaling: backoff_factor must be in (0, 1), got 0"},
      {{.backoff_factor = 1.0f}, "loss scaling: backoff_factor must be in (0, 1), got 1"},
      {{.backoff_factor = -0.5f}, "loss scaling: backoff_factor must be in (0, 1), got -0.5"},
      {{.backoff_factor = kNaN}, "loss scaling: backoff_factor must be in (0, 1), got nan"},
      {{.growth_interval = 0}, "loss scaling: growth_interval must be at least 1, got 0"},
      {{.growth_interval = -5}, "loss scaling: growth_interval must be at least 1, got -5"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(testing::message_of<ConfigError>([&] { check_loss_scale_options(c.options); }), c.message);
    EXPECT_EQ(testing::message_of<ConfigError>([&] { start_loss_scale(c.options); }), c.message);
  }
}

}  // namespace
}  // namespace glassbox
