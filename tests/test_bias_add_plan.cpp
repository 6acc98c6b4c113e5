// tests/test_bias_add_plan.cpp: the bias add as Glassbox's kernel runs it on
// a GPU (layers/bias_add_plan.h), checked here without one: the channel the
// kernel takes for each value of y, one value at a time and by packs, is the
// channel of that value's place in (N, K, P) channels-first or (N, P, K)
// channels-last, at every edge of the shapes.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "layers/bias_add_plan.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

// The channel of every value of y, from its place: value i of (N, K, P)
// channels-first or (N, P, K) channels-last, and what the plan's kernel takes
// for it, agree.
void expect_every_value_gets_its_channel(int64_t n, int64_t k, int64_t p, Layout layout, int64_t value_bytes) {
  SCOPED_TRACE(cat(n, " x ", k, " x ", p, layout == Layout::kNCHW ? " channels-first" : " channels-last", ", ",
                   value_bytes, "-byte values"));
  const BiasAddPlan plan = plan_bias_add(n, k, p, layout, value_bytes);
  ASSERT_EQ(plan.count, n * k * p);
  ASSERT_EQ(plan.channels, k);
  ASSERT_EQ(plan.pack, 16 / value_bytes);
  int64_t wrong = 0;
  for (int64_t image = 0; image < n; ++image) {
    for (int64_t channel = 0; channel < k; ++channel) {
      for (int64_t pixel = 0; pixel < p; ++pixel) {
        const int64_t i =
            layout == Layout::kNCHW ? (image * k + channel) * p + pixel : (image * p + pixel) * k + channel;
        wrong += bias_channel_of(i, plan.run, plan.channels) != channel ? 1 : 0;
        if (plan.packing != BiasPacking::kEachValue) {
          const int64_t taken =
              bias_pack_channel(plan.packing, plan.pack, i / plan.pack, i % plan.pack, plan.run, plan.channels);
          wrong += taken != channel ? 1 : 0;
        }
      }
    }
  }
  EXPECT_EQ(wrong, 0);
  if (plan.packing != BiasPacking::kEachValue) {
    EXPECT_EQ(plan.count % plan.pack, 0) << "a packed plan leaves a tail";
  }
}

TEST(BiasAddPlan, EveryValueGetsItsChannelInEitherLayoutAndEveryPacking) {
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    for (int64_t value_bytes : {4, 2}) {
      for (int64_t n : {1, 3}) {
        for (int64_t k : {1, 3, 4, 8, 16, 24}) {
          for (int64_t p : {1, 7, 8, 16, 49}) expect_every_value_gets_its_channel(n, k, p, layout, value_bytes);
        }
      }
    }
  }
}

// The packing follows the layout: a channels-first image's pixels of one
// channel pack together where their count allows, a channels-last pixel's
// channels where theirs does, and a Linear's (N, O) rows like channels-last.
TEST(BiasAddPlan, PacksOneChannelOrConsecutiveChannelsWhereTheShapeAllows) {
  EXPECT_EQ(plan_bias_add(64, 256, 56 * 56, Layout::kNCHW, 2).packing, BiasPacking::kOneChannel);
  EXPECT_EQ(plan_bias_add(64, 256, 56 * 56, Layout::kNCHW, 4).packing, BiasPacking::kOneChannel);
  EXPECT_EQ(plan_bias_add(64, 256, 7 * 7, Layout::kNCHW, 2).packing, BiasPacking::kEachValue);
  EXPECT_EQ(plan_bias_add(64, 256, 7 * 7, Layout::kNHWC, 2).packing, BiasPacking::kConsecutiveChannels);
  EXPECT_EQ(plan_bias_add(64, 3, 7 * 7, Layout::kNHWC, 2).packing, BiasPacking::kEachValue);
  EXPECT_EQ(plan_bias_add(32, 1000, 1, Layout::kNCHW, 2).packing, BiasPacking::kConsecutiveChannels);
  EXPECT_EQ(plan_bias_add(32, 10, 1, Layout::kNCHW, 4).packing, BiasPacking::kEachValue);
  EXPECT_EQ(plan_bias_add(32, 10, 1, Layout::kNCHW, 4).run, 1);
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
