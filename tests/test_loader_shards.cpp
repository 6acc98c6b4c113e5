// tests/test_loader_shards.cpp: data-parallel shards of an epoch
// (LoaderOptions::shard, shards): the ranks' k-th batches together are the
// k-th batch one process takes at shards x batch, for any worker count.
#include <gtest/gtest.h>

#include "data/loader_order.h"
#include "tests/support/fake_dataset.h"

namespace glassbox {
namespace {

using testing::FakeDataset;
using testing::LoadedBatch;
using testing::load_epoch;

TEST(LoaderShards, TheRanksBatchesTogetherAreTheBatchOfOneProcessAtTheWholeBatch) {
  Context ctx = Context::cpu();
  const auto dataset = std::make_shared<FakeDataset>(testing::FakeDatasetOptions{.size = 47});
  constexpr int kBatch = 4, kShards = 3;  // groups of 12: 3 full ones, 11 samples dropped
  Loader whole(ctx, dataset, {.batch = kBatch * kShards, .workers = 2, .seed = 9});
  std::vector<std::unique_ptr<Loader>> shards;
  for (int r = 0; r < kShards; ++r) {
    shards.push_back(std::make_unique<Loader>(
        ctx, dataset, LoaderOptions{.batch = kBatch, .workers = 1 + r, .seed = 9, .shard = r, .shards = kShards}));
    EXPECT_EQ(shards.back()->batches_per_epoch(), 3) << "shard " << r;
  }
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<LoadedBatch> expected = load_epoch(ctx, whole, epoch);
    ASSERT_EQ(expected.size(), 3u);
    std::vector<std::vector<LoadedBatch>> got;
    for (auto& loader : shards) got.push_back(load_epoch(ctx, *loader, epoch));
    for (size_t k = 0; k < expected.size(); ++k) {
      for (int r = 0; r < kShards; ++r) {
        const LoadedBatch& part = got[static_cast<size_t>(r)][k];
        ASSERT_EQ(part.count, kBatch);
        for (int row = 0; row < kBatch; ++row) {
          // Same sample, same augmentation draw, same label.
          const int whole_row = r * kBatch + row;
          EXPECT_EQ(part.index(row), expected[k].index(whole_row)) << "epoch " << epoch << " batch " << k;
          EXPECT_EQ(part.draw(row), expected[k].draw(whole_row));
          EXPECT_EQ(part.labels[static_cast<size_t>(row)], expected[k].labels[static_cast<size_t>(whole_row)]);
        }
      }
    }
  }
}

TEST(LoaderShards, ShardOrderTakesTheShardthBatchOfEachGroupAndDropsAPartialGroup) {
  const std::vector<int64_t> order = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 10};
  EXPECT_EQ(loader_order::shard_order(order, 2, 0, 2), (std::vector<int64_t>{9, 8, 5, 4}));
  EXPECT_EQ(loader_order::shard_order(order, 2, 1, 2), (std::vector<int64_t>{7, 6, 3, 2}));
  EXPECT_EQ(loader_order::shard_order(order, 3, 1, 3), (std::vector<int64_t>{6, 5, 4}));
  EXPECT_EQ(loader_order::shard_order(order, 1, 0, 1), order);
}

}  // namespace
}  // namespace glassbox
