// tests/test_loader.cpp: the Loader's reproducibility rule (data/loader.h):
// epoch e's order depends on (seed, e), sample i's augmentation on (seed, e,
// i), and nothing depends on the worker count, the prefetch depth, timing,
// restarts or resuming; padding of the last batch; the copy to each device;
// the data-wait statistics. Errors are in test_loader_errors.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "data/loader_order.h"
#include "tests/support/devices.h"
#include "tests/support/fake_dataset.h"

namespace glassbox {
namespace {

using testing::FakeDataset;
using testing::LoadedBatch;
using testing::indices_of;
using testing::load_epoch;

std::shared_ptr<FakeDataset> fake(testing::FakeDatasetOptions options = {}) {
  return std::make_shared<FakeDataset>(std::move(options));
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

TEST(LoaderOrder, EachEpochIsAPermutationOfItsOwnAndLabelsFollowTheSamples) {
  Context ctx = Context::cpu();
  Loader loader(ctx, fake({.size = 50}), {.batch = 5, .workers = 2, .seed = 3});
  EXPECT_EQ(loader.batches_per_epoch(), 10);
  std::vector<std::vector<int64_t>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const std::vector<LoadedBatch> batches = load_epoch(ctx, loader, epoch);
    ASSERT_EQ(batches.size(), 10u);
    for (const LoadedBatch& b : batches) {
      for (int row = 0; row < 5; ++row) EXPECT_EQ(b.labels[static_cast<size_t>(row)], b.index(row) % 7);
    }
    std::vector<int64_t> order = indices_of(batches);
    EXPECT_EQ(order, loader_order::epoch_order(50, 3, epoch, true)) << "epoch " << epoch;
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(50)) << "epoch " << epoch << " is not a permutation";
    orders.push_back(std::move(order));
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  EXPECT_NE(orders[0], iota(50));
  // Another seed, another order.
  EXPECT_NE(loader_order::epoch_order(50, 4, 0, true), orders[0]);
}

TEST(LoaderOrder, WithoutShuffleEveryEpochVisitsTheSamplesInIndexOrder) {
  Context ctx = Context::cpu();
  Loader loader(ctx, fake({.size = 12}), {.batch = 4, .workers = 3, .shuffle = false});
  for (int epoch = 0; epoch < 2; ++epoch) EXPECT_EQ(indices_of(load_epoch(ctx, loader, epoch)), iota(12));
}

// The shuffle is our own Fisher-Yates on std::mt19937_64 (Note [Our own
// Fisher-Yates]): pinned here, so that a change to it, or a standard library
// that would shuffle differently, shows.
TEST(LoaderOrder, ThePermutationOfASeedAndEpochIsFixed) {
  EXPECT_EQ(loader_order::epoch_order(8, 1, 0, true), loader_order::epoch_order(8, 1, 0, true));
  std::vector<int64_t> expected = iota(8);
  std::mt19937_64 rng(loader_order::order_seed(1, 0));
  for (int64_t i = 7; i > 0; --i) {
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    uint64_t draw = rng();
    while (draw >= UINT64_MAX - UINT64_MAX % bound) draw = rng();
    std::swap(expected[static_cast<size_t>(i)], expected[static_cast<size_t>(draw % bound)]);
  }
  EXPECT_EQ(loader_order::epoch_order(8, 1, 0, true), expected);
  EXPECT_EQ(loader_order::epoch_order(1, 1, 0, true), iota(1));
  EXPECT_TRUE(loader_order::epoch_order(0, 1, 0, true).empty());
}

TEST(LoaderAugmentation, EachSampleDrawsFromTheRngOfSeedEpochAndIndex) {
  Context ctx = Context::cpu();
  const uint64_t seed = 11;
  Loader loader(ctx, fake({.size = 30}), {.batch = 6, .workers = 2, .seed = seed});
  std::vector<float> first_draws(30);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const LoadedBatch& b : load_epoch(ctx, loader, epoch)) {
      for (int row = 0; row < b.count; ++row) {
        const int64_t i = b.index(row);
        std::mt19937_64 rng(loader_order::sample_seed(seed, epoch, i));
        EXPECT_EQ(b.draw(row), static_cast<float>(rng() >> 40)) << "epoch " << epoch << " sample " << i;
        if (epoch == 0) first_draws[static_cast<size_t>(i)] = b.draw(row);
        if (epoch == 1) {
          EXPECT_NE(b.draw(row), first_draws[static_cast<size_t>(i)]) << "sample " << i;
        }
      }
    }
  }
  EXPECT_NE(loader_order::sample_seed(seed, 0, 1), loader_order::sample_seed(seed, 1, 0));
  EXPECT_NE(loader_order::sample_seed(seed, 0, 0), loader_order::sample_seed(seed + 1, 0, 0));
}

// Loads that take a little time, unevenly, so that workers finish out of order.
TEST(LoaderInvariance, TheBatchesAreTheSameForAnyWorkerCountAndPrefetch) {
  Context ctx = Context::cpu();
  auto dataset = fake({.size = 26, .delay = std::chrono::milliseconds(1)});
  std::map<bool, std::vector<std::vector<LoadedBatch>>> reference;  // by drop_last: two epochs
  for (bool drop_last : {true, false}) {
    for (int workers : {1, 2, 4}) {
      for (int prefetch : {1, 3}) {
        Loader loader(ctx, dataset,
                      {.batch = 4, .workers = workers, .seed = 5, .drop_last = drop_last, .prefetch = prefetch});
        std::vector<std::vector<LoadedBatch>> epochs{load_epoch(ctx, loader, 0), load_epoch(ctx, loader, 1)};
        std::vector<std::vector<LoadedBatch>>& expected = reference[drop_last];
        if (expected.empty()) {
          expected = std::move(epochs);  // 1 worker, prefetch 1
          continue;
        }
        EXPECT_EQ(epochs, expected) << workers << " workers, prefetch " << prefetch << ", drop_last " << drop_last;
      }
    }
  }
  // drop_last changes nothing but the last batch.
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<LoadedBatch> padded = reference[false][static_cast<size_t>(epoch)];
    ASSERT_EQ(padded.size(), 7u);
    EXPECT_EQ(padded.back().count, 2);
    padded.pop_back();
    EXPECT_EQ(padded, reference[true][static_cast<size_t>(epoch)]);
  }
}

TEST(LoaderResume, ALoaderStartedAtEpochEGivesTheBatchesOfEpochE) {
  Context ctx = Context::cpu();
  auto dataset = fake({.size = 40});
  const LoaderOptions options{.batch = 8, .workers = 2, .seed = 9};
  Loader first(ctx, dataset, options);
  std::vector<std::vector<LoadedBatch>> epochs;
  for (int epoch = 0; epoch < 3; ++epoch) epochs.push_back(load_epoch(ctx, first, epoch));
  Loader resumed(ctx, dataset, options);
  EXPECT_EQ(load_epoch(ctx, resumed, 2), epochs[2]);
  EXPECT_EQ(load_epoch(ctx, resumed, 1), epochs[1]);
}

TEST(LoaderRestart, StartEpochMidEpochAbandonsItAndStartsCleanly) {
  Context ctx = Context::cpu();
  auto dataset = fake({.size = 60, .delay = std::chrono::milliseconds(1)});
  const LoaderOptions options{.batch = 5, .workers = 3, .seed = 2, .prefetch = 3};
  Loader fresh(ctx, dataset, options);
  const std::vector<LoadedBatch> epoch0 = load_epoch(ctx, fresh, 0), epoch1 = load_epoch(ctx, fresh, 1);

  Loader loader(ctx, dataset, options);
  load_epoch(ctx, loader, 0, 2);          // two batches of epoch 0, the rest in flight
  EXPECT_EQ(load_epoch(ctx, loader, 1), epoch1);
  load_epoch(ctx, loader, 1, 5);
  load_epoch(ctx, loader, 0, 0);          // started, nothing taken, restarted at once
  EXPECT_EQ(load_epoch(ctx, loader, 0), epoch0);
  EXPECT_EQ(loader.stats().batches, 12);  // stats are the last start's
  EXPECT_EQ(loader.stats().samples, 60);
}

TEST(LoaderPadding, WithoutDropLastTheLastBatchIsPaddedWithZerosAndLabelZero) {
  Context ctx = Context::cpu();
  Loader loader(ctx, fake({.size = 23}), {.batch = 5, .workers = 2, .shuffle = false, .drop_last = false});
  EXPECT_EQ(loader.batches_per_epoch(), 5);
  const std::vector<LoadedBatch> batches = load_epoch(ctx, loader, 0);
  ASSERT_EQ(batches.size(), 5u);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(batches[static_cast<size_t>(k)].count, 5);
  const LoadedBatch& last = batches[4];
  EXPECT_EQ(last.count, 3);
  EXPECT_EQ(last.index(2), 22);
  for (size_t i = 3 * testing::kFakeSampleNumel; i < last.images.size(); ++i) EXPECT_EQ(last.images[i], 0.0f) << i;
  EXPECT_EQ(last.labels[3], 0);
  EXPECT_EQ(last.labels[4], 0);
  EXPECT_EQ(loader.stats().samples, 23);
  EXPECT_EQ(loader.stats().batches, 5);
  // After the end, next() keeps returning 0 until the next epoch.
  testing::BatchTensors tensors(ctx, 5);
  EXPECT_EQ(loader.next(tensors.images, tensors.labels), 0);
  EXPECT_EQ(loader.next(tensors.images, tensors.labels), 0);

  Loader dropping(ctx, fake({.size = 23}), {.batch = 5, .workers = 2, .shuffle = false});
  EXPECT_EQ(dropping.batches_per_epoch(), 4);
  const std::vector<LoadedBatch> full = load_epoch(ctx, dropping, 0);
  ASSERT_EQ(full.size(), 4u);
  for (const LoadedBatch& b : full) EXPECT_EQ(b.count, 5);
  EXPECT_EQ(dropping.stats().samples, 20);
}

// Note [A slot for every worker]: with prefetch 1, four workers still all
// prepare a batch at once (the ring has a slot for each); a ring of
// prefetch + 1 slots would keep two of them waiting.
TEST(LoaderWorkers, EveryWorkerCanBeBusyWhateverThePrefetch) {
  Context ctx = Context::cpu();
  const auto dataset = std::make_shared<testing::FakeDataset>(
      testing::FakeDatasetOptions{.size = 64, .delay = std::chrono::milliseconds(30)});
  Loader loader(ctx, dataset, {.batch = 2, .workers = 4, .prefetch = 1});
  // Looked at after the whole epoch (about half a second of 30 ms loads, most of it
  // asleep), so that a loaded machine's late-starting thread still meets the others.
  EXPECT_EQ(load_epoch(ctx, loader, 0).size(), 32u);
  EXPECT_EQ(dataset->most_at_once(), 4);
}

TEST(LoaderStats, WaitSecondsGrowWithASlowDatasetAndResetEachEpoch) {
  Context ctx = Context::cpu();
  // 4 samples of 20 ms per batch on one worker: next() cannot help waiting.
  Loader loader(ctx, fake({.size = 8, .delay = std::chrono::milliseconds(20)}), {.batch = 4, .workers = 1});
  load_epoch(ctx, loader, 0);
  const LoaderStats slow = loader.stats();
  EXPECT_GT(slow.wait_seconds, 0.04);  // at least half of one batch's 80 ms, however loaded the machine
  EXPECT_GE(slow.copy_seconds, 0.0);
  EXPECT_EQ(slow.batches, 2);
  loader.start_epoch(1);
  EXPECT_EQ(loader.stats().wait_seconds, 0.0);
  EXPECT_EQ(loader.stats().batches, 0);
}

// The copy into tensors on each device: the same values as the rule gives.
class LoaderDeviceTest : public testing::DeviceTest {};

TEST_P(LoaderDeviceTest, CopiesEachBatchIntoTheContextsTensors) {
  auto dataset = fake({.size = 21});
  Loader loader(ctx(), dataset, {.batch = 4, .workers = 2, .seed = 7, .drop_last = false, .prefetch = 1});
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<LoadedBatch> batches = load_epoch(ctx(), loader, epoch);
    ASSERT_EQ(batches.size(), 6u);
    EXPECT_EQ(indices_of(batches), loader_order::epoch_order(21, 7, epoch, true));
    for (const LoadedBatch& b : batches) {
      for (int row = 0; row < b.count; ++row) {
        std::mt19937_64 rng(loader_order::sample_seed(7, epoch, b.index(row)));
        EXPECT_EQ(b.draw(row), static_cast<float>(rng() >> 40));
        EXPECT_EQ(b.labels[static_cast<size_t>(row)], b.index(row) % 7);
      }
    }
    EXPECT_EQ(batches.back().count, 1);
    EXPECT_EQ(batches.back().labels[1], 0);
  }
}

GLASSBOX_INSTANTIATE_ON_DEVICES(LoaderDeviceTest);

}  // namespace
}  // namespace glassbox
