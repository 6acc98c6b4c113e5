// tests/test_bias_add_plan.cpp: the bias add as Glassbox's kernel runs it on
// a GPU (layers/bias_add_plan.h), checked here without one: the channel the
// kernel takes for each value of y, one value at a time and by packs (the
// first value's found, the rest stepped), is the channel of that value's
// place in (N, K, P) channels-first or (N, P, K) channels-last, at every edge
// of the shapes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "layers/bias_add_plan.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

// Each value's channel from its place in y.
std::vector<int64_t> channels_by_place(int64_t n, int64_t k, int64_t p, Layout layout) {
  std::vector<int64_t> channel(static_cast<size_t>(n * k * p), -1);
  for (int64_t image = 0; image < n; ++image) {
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t pixel = 0; pixel < p; ++pixel) {
        const int64_t i = layout == Layout::kNCHW ? (image * k + c) * p + pixel : (image * p + pixel) * k + c;
        channel[static_cast<size_t>(i)] = c;
      }
    }
  }
  return channel;
}

void expect_every_value_gets_its_channel(int64_t n, int64_t k, int64_t p, Layout layout, int64_t value_bytes) {
  SCOPED_TRACE(cat(n, " x ", k, " x ", p, layout == Layout::kNCHW ? " channels-first" : " channels-last", ", ",
                   value_bytes, "-byte values"));
  const BiasAddPlan plan = plan_bias_add(n, k, p, layout, value_bytes);
  ASSERT_EQ(plan.count, n * k * p);
  ASSERT_EQ(plan.channels, k);
  ASSERT_EQ(plan.pack, 16 / value_bytes);
  const std::vector<int64_t> want = channels_by_place(n, k, p, layout);
  int64_t wrong_each = 0, wrong_packed = 0;
  for (int64_t i = 0; i < plan.count; ++i) {
    wrong_each += bias_channel_of(i, plan.run, plan.channels) != want[static_cast<size_t>(i)] ? 1 : 0;
  }
  // The packed kernel over the whole packs, as launch_bias_add runs it.
  for (int64_t pack = 0; pack < plan.count / plan.pack; ++pack) {
    BiasCursor at = bias_cursor_at(pack * plan.pack, plan.run, plan.channels);
    for (int64_t j = 0; j < plan.pack; ++j) {
      wrong_packed += at.channel != want[static_cast<size_t>(pack * plan.pack + j)] ? 1 : 0;
      step_bias_cursor(at, plan.run, plan.channels);
    }
  }
  EXPECT_EQ(wrong_each, 0);
  EXPECT_EQ(wrong_packed, 0);
}

TEST(BiasAddPlan, EveryValueGetsItsChannelInEitherLayoutOneByOneAndByPacks) {
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    for (int64_t value_bytes : {4, 2}) {
      for (int64_t n : {1, 3}) {
        for (int64_t k : {1, 3, 4, 8, 16, 24}) {
          for (int64_t p : {1, 2, 7, 8, 16, 49}) expect_every_value_gets_its_channel(n, k, p, layout, value_bytes);
        }
      }
    }
  }
}

// A channels-first image's pixels of one channel are one run; channels-last,
// and a Linear's (N, O) rows, each value is a run of its own.
TEST(BiasAddPlan, ARunIsTheChannelsPixelsChannelsFirstAndOneValueChannelsLast) {
  EXPECT_EQ(plan_bias_add(64, 256, 56 * 56, Layout::kNCHW, 2),
            (BiasAddPlan{.count = 64 * 256 * 56 * 56, .channels = 256, .run = 56 * 56, .pack = 8}));
  EXPECT_EQ(plan_bias_add(64, 256, 7 * 7, Layout::kNHWC, 4),
            (BiasAddPlan{.count = 64 * 256 * 7 * 7, .channels = 256, .run = 1, .pack = 4}));
  EXPECT_EQ(plan_bias_add(32, 1000, 1, Layout::kNCHW, 2),
            (BiasAddPlan{.count = 32 * 1000, .channels = 1000, .run = 1, .pack = 8}));
}

TEST(BiasAddPlan, RefusesAnEmptyAxisAndValuesOfAnotherSize) {
  EXPECT_EQ(testing::message_of<ShapeError>([] { plan_bias_add(0, 4, 4, Layout::kNCHW, 4); }),
            "bias add: y of 0 images, 4 channels and 4 pixels (each at least 1)");
  EXPECT_THROW(plan_bias_add(2, 0, 4, Layout::kNHWC, 2), ShapeError);
  EXPECT_THROW(plan_bias_add(2, 4, -1, Layout::kNHWC, 2), ShapeError);
  EXPECT_EQ(testing::message_of<ShapeError>([] { plan_bias_add(2, 4, 4, Layout::kNCHW, 8); }),
            "bias add: values of 8 bytes (4 or 2)");
}

}  // namespace
}  // namespace glassbox
