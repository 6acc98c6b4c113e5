// tests/test_scale_model.cpp: the scaling model of `glassbox scale`
// (optim/scale_model.h), against values worked out by hand.
#include <gtest/gtest.h>

#include "optim/scale_model.h"
#include "tensor/error.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

// 10 GB/s and 10 us: round numbers to compute with.
const LinkModel kLink{"test", 10.0, 10.0};

TEST(ScaleModel, AllReduceCostsAreTheAlphaBetaFormulas) {
  // Ring, 4 ranks, 1 GB: 2*3*10us + 2*3/4 * 1e9/1e10 s = 60us + 150ms.
  EXPECT_DOUBLE_EQ(ring_seconds(1e9, 4, kLink), 60e-6 + 0.15);
  // Tree, 4 ranks: 2*2 levels*10us + 2*1e9/1e10 = 40us + 200ms; 5 ranks: 3 levels.
  EXPECT_DOUBLE_EQ(tree_seconds(1e9, 4, kLink), 40e-6 + 0.2);
  EXPECT_DOUBLE_EQ(tree_seconds(1e9, 5, kLink), 60e-6 + 0.2);
  // Large messages take the ring, small ones on many ranks the tree.
  EXPECT_EQ(allreduce_cost(1e9, 4, kLink).algorithm, AllReduceAlgorithm::kRing);
  EXPECT_EQ(allreduce_cost(1e3, 64, kLink).algorithm, AllReduceAlgorithm::kTree);
  EXPECT_DOUBLE_EQ(allreduce_cost(1e3, 64, kLink).seconds, tree_seconds(1e3, 64, kLink));
  // One rank: nothing to do.
  EXPECT_EQ(allreduce_cost(1e9, 1, kLink).seconds, 0.0);
  EXPECT_EQ(allreduce_cost(1e9, 1, kLink).algorithm, AllReduceAlgorithm::kNone);
}

// Backward order: loss (no parameters, 1 ms), fc3 (2 ms, 400 MB), relu
// (1 ms), fc2 (3 ms, 100 MB), fc1 (4 ms, 600 MB). Buckets of 450 MB close at
// fc2 (500 MB, ready at 7 ms) and after fc1 (600 MB, ready at 11 ms).
MeasuredStep hand_step() {
  MeasuredStep step{.forward_ms = 5.0, .optimizer_ms = 2.0};
  step.backward = {{"loss", 1.0, 0}, {"fc3", 2.0, 400'000'000}, {"relu", 1.0, 0}, {"fc2", 3.0, 100'000'000},
                   {"fc1", 4.0, 600'000'000}};
  return step;
}

TEST(ScaleModel, BucketsCloseAtLayerBoundariesInBackwardOrder) {
  const ScaledStep s = scale_step(hand_step(), 2, kLink, 450'000'000, true);
  ASSERT_EQ(s.buckets.size(), 2u);
  EXPECT_EQ(s.buckets[0].bytes, 500'000'000u);
  EXPECT_DOUBLE_EQ(s.buckets[0].ready_ms, 7.0);
  EXPECT_EQ(s.buckets[1].bytes, 600'000'000u);  // fc1 whole, never split
  EXPECT_DOUBLE_EQ(s.buckets[1].ready_ms, 11.0);
  // One byte per bucket: one bucket per layer with parameters.
  EXPECT_EQ(scale_step(hand_step(), 2, kLink, 1, true).buckets.size(), 3u);
}

// 2 ranks, ring: 20 us + n / 10 GB/s. Bucket 0 (500 MB): 50.02 ms from 7 ms
// to 57.02; bucket 1 (600 MB) waits for it: 57.02 to 117.04. Backward ends at
// 11 ms, so 106.04 ms are exposed; the step is 5 + 11 + 2 + 106.04.
TEST(ScaleModel, OverlapStartsEachBucketWhenReadyOneAtATime) {
  const ScaledStep s = scale_step(hand_step(), 2, kLink, 450'000'000, true);
  EXPECT_NEAR(s.buckets[0].start_ms, 7.0, 1e-9);
  EXPECT_NEAR(s.buckets[0].done_ms, 57.02, 1e-9);
  EXPECT_NEAR(s.buckets[1].start_ms, 57.02, 1e-9);
  EXPECT_NEAR(s.buckets[1].done_ms, 117.04, 1e-9);
  EXPECT_NEAR(s.allreduce_ms, 110.04, 1e-9);
  EXPECT_NEAR(s.compute_ms, 18.0, 1e-12);
  EXPECT_NEAR(s.exposed_ms, 106.04, 1e-9);
  EXPECT_NEAR(s.step_ms, 124.04, 1e-9);
  EXPECT_NEAR(s.efficiency, 18.0 / 124.04, 1e-12);

  // Without overlap every bucket waits for backward's end: 11 + 110.04.
  const ScaledStep late = scale_step(hand_step(), 2, kLink, 450'000'000, false);
  EXPECT_NEAR(late.buckets[0].start_ms, 11.0, 1e-9);
  EXPECT_NEAR(late.exposed_ms, 110.04, 1e-9);
  EXPECT_GT(late.step_ms, s.step_ms);
}

TEST(ScaleModel, OneDeviceIsTheMeasuredStepAndMoreDevicesNeverFaster) {
  const ScaledStep one = scale_step(hand_step(), 1, kLink, 450'000'000, true);
  EXPECT_EQ(one.allreduce_ms, 0.0);
  EXPECT_EQ(one.exposed_ms, 0.0);
  EXPECT_EQ(one.efficiency, 1.0);
  double previous = one.step_ms;
  for (int p : {2, 4, 8, 16, 64}) {
    const double step = scale_step(hand_step(), p, kLink, 450'000'000, true).step_ms;
    EXPECT_GE(step, previous) << p << " ranks";
    previous = step;
  }
}

TEST(ScaleModel, BadInputsAreConfigErrors) {
  EXPECT_EQ(testing::message_of<ConfigError>([] { link_model("ethernet"); }),
            "--link: unknown link 'ethernet'; valid: nvlink, infiniband, custom (with --bandwidth-gbps and "
            "--latency-us)");
  EXPECT_EQ(testing::message_of<ConfigError>([] { scale_step(hand_step(), 0, kLink, 1, true); }),
            "scale: a job has at least 1 rank, got 0");
  EXPECT_EQ(testing::message_of<ConfigError>([] { scale_step(hand_step(), 2, kLink, 0, true); }),
            "scale: the gradient bucket size must be at least 1 byte, got 0");
  EXPECT_EQ(link_model("nvlink").bandwidth_gbps, 450.0);
  EXPECT_EQ(link_model("infiniband").bandwidth_gbps, 50.0);
}

}  // namespace
}  // namespace glassbox
