// tests/test_loader_errors.cpp: what the Loader (data/loader.h) does when
// things go wrong: unreadable files are reported once, replaced and counted;
// any other error of a worker comes out of next() with its message; bad
// options and tensors are refused with messages that name them; a Loader
// destroyed mid-epoch returns promptly.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

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

template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type";
  return "";
}

TEST(LoaderSkipping, AnUnreadableFileIsWarnedOnceReplacedByTheNextReadableOneAndCountedPerEpoch) {
  Context ctx = Context::cpu();
  // 4 and 5 are unreadable, so both become 6; 19 wraps around to 0.
  auto dataset = fake({.size = 20, .unreadable = {4, 5, 19}});
  std::vector<std::string> warnings;
  Loader loader(ctx, dataset,
                {.batch = 4, .workers = 3, .seed = 1, .shuffle = false,
                 .warn = [&](const std::string& w) { warnings.push_back(w); }});
  std::vector<int64_t> expected{0, 1, 2, 3, 6, 6, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0};
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<LoadedBatch> batches = load_epoch(ctx, loader, epoch);
    EXPECT_EQ(indices_of(batches), expected) << "epoch " << epoch;
    EXPECT_EQ(batches[1].labels, (std::vector<int>{6, 6, 6, 0}));  // the replacement's label, 6 % 7 = 6; 7 % 7 = 0
    EXPECT_EQ(loader.stats().skipped, 3) << "epoch " << epoch;
    EXPECT_EQ(loader.stats().samples, 20);
  }
  std::sort(warnings.begin(), warnings.end());
  EXPECT_EQ(warnings, (std::vector<std::string>{"skipping /fake/19.png: not a PNG", "skipping /fake/4.png: not a PNG",
                                                "skipping /fake/5.png: not a PNG"}));
  // Remembered: an unreadable file is not read again in the next epoch.
  EXPECT_EQ(dataset->loads(4), 1);
  EXPECT_EQ(dataset->loads(19), 1);
}

TEST(LoaderSkipping, WhenEverySampleIsUnreadableNextSaysSo) {
  Context ctx = Context::cpu();
  int warned = 0;
  Loader loader(ctx, fake({.size = 6, .unreadable = {0, 1, 2, 3, 4, 5}}),
                {.batch = 2, .workers = 2, .warn = [&](const std::string&) { ++warned; }});
  loader.start_epoch(0);
  testing::BatchTensors tensors(ctx, 2);
  const std::string message = message_of<DataError>([&] { loader.next(tensors.images, tensors.labels); });
  EXPECT_EQ(message, "fake (6 samples): all 6 samples are unreadable (each was reported by the loader's warn "
                     "as it failed)");
  EXPECT_EQ(warned, 6);  // each said once, before the error
}

TEST(LoaderErrors, AWorkersDataErrorComesOutOfNextWithItsMessageAndStaysThere) {
  Context ctx = Context::cpu();
  Loader loader(ctx, fake({.size = 40, .broken = 13}), {.batch = 4, .workers = 2, .shuffle = false});
  loader.start_epoch(0);
  testing::BatchTensors tensors(ctx, 4);
  std::string message;
  int handed_out = 0;
  try {
    while (loader.next(tensors.images, tensors.labels) > 0) ++handed_out;
    FAIL() << "the epoch ended without the error";
  } catch (const DataError& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "/fake/13.png: truncated at byte 12");
  EXPECT_LE(handed_out, 3);  // batch 3 holds sample 13; it never comes out
  EXPECT_EQ(message_of<DataError>([&] { loader.next(tensors.images, tensors.labels); }), message);
  loader.start_epoch(1);  // a failed loader stays failed
  EXPECT_EQ(message_of<DataError>([&] { loader.next(tensors.images, tensors.labels); }), message);
}

TEST(LoaderErrors, ALabelOutsideTheClassesIsADataErrorNamingTheSample) {
  Context ctx = Context::cpu();
  Loader loader(ctx, fake({.size = 10, .bad_label = 3}), {.batch = 10, .workers = 1});
  loader.start_epoch(0);
  testing::BatchTensors tensors(ctx, 10);
  EXPECT_EQ(message_of<DataError>([&] { loader.next(tensors.images, tensors.labels); }),
            "fake (10 samples): sample 3 has label 7, outside [0, 7)");
}

TEST(LoaderErrors, BadOptionsAreConfigErrorsNamingThem) {
  Context ctx = Context::cpu();
  auto dataset = fake({.size = 10});
  auto make = [&](std::shared_ptr<const Dataset> d, LoaderOptions options) {
    return [&ctx, d, options] { Loader loader(ctx, d, options); };
  };
  EXPECT_EQ(message_of<ConfigError>(make(nullptr, {.batch = 4})), "Loader: no dataset (a null pointer)");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {})), "Loader: batch must be at least 1, got 0");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 2, .prefetch = 0})),
            "Loader: prefetch must be at least 1 batch, got 0");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 2, .workers = -1})),
            "Loader: workers must be 0 (one per core) or more, got -1");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 16})),
            "Loader: fake (10 samples): 10 samples are fewer than one batch of 16, and drop_last drops every "
            "partial batch");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 2, .shard = 2, .shards = 2})),
            "Loader: shard 2 of 2: the shard must be from 0 to shards - 1, and shards at least 1");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 2, .drop_last = false, .shard = 0, .shards = 2})),
            "Loader: a shard of an epoch (data-parallel training) needs drop_last: every rank must take the same "
            "number of full batches");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 4, .shard = 1, .shards = 3})),
            "Loader: fake (10 samples): 10 samples are fewer than one batch of 4 for each of 3 ranks");
  Loader padded(ctx, dataset, {.batch = 16, .drop_last = false});  // one padded batch is fine
  EXPECT_EQ(padded.batches_per_epoch(), 1);

  Loader loader(ctx, dataset, {.batch = 2});  // workers 0: one per core
  testing::BatchTensors tensors(ctx, 2);
  EXPECT_EQ(message_of<ConfigError>([&] { loader.next(tensors.images, tensors.labels); }),
            "Loader::next: no epoch started; call start_epoch(epoch) first");
  EXPECT_EQ(message_of<ConfigError>([&] { loader.start_epoch(-1); }),
            "Loader::start_epoch: epoch -1: epochs count from 0");
  loader.start_epoch(0);
  EXPECT_EQ(loader.next(tensors.images, tensors.labels), 2);
}

TEST(LoaderErrors, TensorsThatDoNotFitTheBatchAreShapeErrorsNamingBothShapes) {
  Context ctx = Context::cpu();
  Loader loader(ctx, fake({.size = 10}), {.batch = 2, .workers = 1});
  loader.start_epoch(0);
  testing::BatchTensors fits(ctx, 2), other_batch(ctx, 3);
  EXPECT_EQ(message_of<ShapeError>([&] { loader.next(other_batch.images, fits.labels); }),
            "Loader::next: images is float32 (3, 2, 3, 3) on cpu; the loader's batch needs float32 (2, 2, 3, 3) on "
            "cpu");
  EXPECT_EQ(message_of<ShapeError>([&] { loader.next(fits.images, other_batch.labels); }),
            "Loader::next: labels is int32 (3) on cpu; the loader's batch needs int32 (2) on cpu");
  const Tensor float_labels = ctx.allocate(Shape{2}, DType::kFloat32, MemoryCategory::kData);
  EXPECT_EQ(message_of<ShapeError>([&] { loader.next(fits.images, float_labels); }),
            "Loader::next: labels is float32 (2) on cpu; the loader's batch needs int32 (2) on cpu");
  EXPECT_EQ(message_of<ShapeError>([&] { loader.next(Tensor(), fits.labels); }),
            "Loader::next: images is an undefined tensor; the loader's batch needs float32 (2, 2, 3, 3) on cpu");
  EXPECT_EQ(loader.next(fits.images, fits.labels), 2);  // the refusals took nothing
  EXPECT_EQ(loader.stats().batches, 1);
}

// 50 ms a sample, 10 samples a batch: an epoch is minutes of work. Destroying
// the loader must wait for at most the samples being loaded, not the batches.
TEST(LoaderShutdown, DestroyingALoaderMidEpochReturnsPromptly) {
  Context ctx = Context::cpu();
  auto slow = fake({.size = 2000, .delay = std::chrono::milliseconds(50)});
  const auto start = std::chrono::steady_clock::now();
  {
    Loader loader(ctx, slow, {.batch = 10, .workers = 4, .prefetch = 3});
    load_epoch(ctx, loader, 0, 1);
  }
  {
    Loader started(ctx, slow, {.batch = 10, .workers = 2});
    started.start_epoch(3);
  }
  { Loader never_started(ctx, slow, {.batch = 10, .workers = 2}); }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);  // about 1 s here; finishing the epochs would take 25 s and more
}

}  // namespace
}  // namespace glassbox
