// tests/test_loader_errors.cpp: what the Loader (data/loader.h) does when
// things go wrong: unreadable files are left out of the count, named once
// and counted; any other error of a worker comes out of next() with its
// message when its batch is due; bad
// options and tensors are refused with messages that name them; a Loader
// destroyed mid-epoch returns promptly.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "data/synthetic.h"
#include "tests/support/address_space_limit.h"
#include "tests/support/fake_dataset.h"
#include "tests/support/sanitizers.h"
#include "tests/support/strings.h"

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

// Note [Skipped samples]: with drop_last (training), a batch's readable
// samples come first and are counted; the rows of its unreadable ones hold
// the next readable samples in index order, trained on but not counted.
TEST(LoaderSkipping, AnUnreadableFileIsLeftOutOfTheCountNamedOnceAndCountedEveryEpoch) {
  Context ctx = Context::cpu();
  // 4 and 5 are unreadable, so both rows hold 6; 19's holds 0 (wrapping).
  auto dataset = fake({.size = 20, .unreadable = {4, 5, 19}});
  std::vector<std::string> warnings;
  Loader loader(ctx, dataset,
                {.batch = 4, .workers = 3, .seed = 1, .shuffle = false,
                 .warn = [&](const std::string& w) { warnings.push_back(w); }});
  const std::vector<int64_t> counted{0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
  const std::vector<std::string> named{"/fake/4.png: not a PNG", "/fake/5.png: not a PNG", "/fake/19.png: not a PNG"};
  std::vector<LoadedBatch> first;
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<LoadedBatch> batches = load_epoch(ctx, loader, epoch);
    ASSERT_EQ(batches.size(), 5u);
    EXPECT_EQ(indices_of(batches), counted) << "epoch " << epoch;
    EXPECT_EQ(batches[1].count, 2);
    EXPECT_EQ(batches[1].index(2), 6);
    EXPECT_EQ(batches[1].index(3), 6);
    EXPECT_EQ(batches[1].draw(2), batches[1].draw(0));  // sample 6 as it is in its own place
    EXPECT_EQ(batches[1].labels, (std::vector<int>{6, 0, 6, 6}));  // 6 % 7, 7 % 7, then the replacements'
    EXPECT_EQ(batches[4].count, 3);
    EXPECT_EQ(batches[4].index(3), 0);
    const LoaderStats stats = loader.stats();
    EXPECT_EQ(stats.skipped, 3) << "epoch " << epoch;
    EXPECT_EQ(stats.samples, 17);
    EXPECT_EQ(stats.batches, 5);
    EXPECT_EQ(stats.skipped_files, named);
    if (epoch == 0) first = batches;
  }
  // Named once, in the epoch's order, whichever worker met the file first.
  EXPECT_EQ(warnings, (std::vector<std::string>{"skipping /fake/4.png: not a PNG", "skipping /fake/5.png: not a PNG",
                                                "skipping /fake/19.png: not a PNG"}));
  // Remembered: an unreadable file is not read again, in this epoch or the next.
  EXPECT_EQ(dataset->loads(4), 1);
  EXPECT_EQ(dataset->loads(5), 1);
  EXPECT_EQ(dataset->loads(19), 1);
  // The same batches, to the bit, with one worker.
  Loader serial(ctx, fake({.size = 20, .unreadable = {4, 5, 19}}),
                {.batch = 4, .workers = 1, .seed = 1, .shuffle = false});
  EXPECT_EQ(load_epoch(ctx, serial, 0), first);
}

// Without drop_last (evaluation), an unreadable sample's row is not filled:
// the batch's readable samples come first, padding after them, and a batch
// of nothing but unreadable samples is passed over.
TEST(LoaderSkipping, WithoutDropLastUnreadableSamplesAreLeftOutAndABatchOfThemIsPassedOver) {
  Context ctx = Context::cpu();
  Loader loader(ctx, fake({.size = 10, .unreadable = {1, 4, 5, 6, 7, 8}}),
                {.batch = 4, .workers = 2, .shuffle = false, .drop_last = false});
  const std::vector<LoadedBatch> batches = load_epoch(ctx, loader, 0);
  ASSERT_EQ(batches.size(), 2u);  // 0 1 2 3 | 4 5 6 7 (none readable) | 8 9
  EXPECT_EQ(batches[0].count, 3);
  EXPECT_EQ(batches[1].count, 1);
  EXPECT_EQ(indices_of(batches), (std::vector<int64_t>{0, 2, 3, 9}));
  for (size_t i = 3 * testing::kFakeSampleNumel; i < batches[0].images.size(); ++i) {
    EXPECT_EQ(batches[0].images[i], 0.0f) << i;
  }
  EXPECT_EQ(batches[0].labels, (std::vector<int>{0, 2, 3, 0}));
  EXPECT_EQ(batches[1].labels, (std::vector<int>{2, 0, 0, 0}));
  const LoaderStats stats = loader.stats();
  EXPECT_EQ(stats.samples, 4);
  EXPECT_EQ(stats.batches, 2);
  EXPECT_EQ(stats.skipped, 6);
  EXPECT_EQ(stats.skipped_files, (std::vector<std::string>{"/fake/1.png: not a PNG", "/fake/4.png: not a PNG",
                                                           "/fake/5.png: not a PNG", "/fake/6.png: not a PNG",
                                                           "/fake/7.png: not a PNG"}));  // the first kSkippedNamed
}

TEST(LoaderSkipping, WhenEverySampleIsUnreadableNextSaysSo) {
  for (const bool drop_last : {true, false}) {
    Context ctx = Context::cpu();
    int warned = 0;
    Loader loader(ctx, fake({.size = 6, .unreadable = {0, 1, 2, 3, 4, 5}}),
                  {.batch = 2, .workers = 2, .drop_last = drop_last, .warn = [&](const std::string&) { ++warned; }});
    loader.start_epoch(0);
    testing::BatchTensors tensors(ctx, 2);
    const std::string message = message_of<DataError>([&] { loader.next(tensors.images, tensors.labels); });
    EXPECT_EQ(message, "fake (6 samples): epoch 1: all 6 samples are unreadable (each was reported by the loader's "
                       "warn)") << "drop_last " << drop_last;
    EXPECT_EQ(warned, 6);  // each said once, before the error
  }
}

// Every rank of a data-parallel run takes the same steps; one that passed
// over a batch would leave the others waiting in an all-reduce.
TEST(LoaderSkipping, InADataParallelShardABatchWithNoReadableSampleStopsTheRun) {
  Context ctx = Context::cpu();
  auto dataset = fake({.size = 8, .unreadable = {0, 1}});
  // Groups of 2 ranks x 2: rank 0 takes {0, 1} and {4, 5}, rank 1 {2, 3} and {6, 7}.
  Loader rank0(ctx, dataset, {.batch = 2, .workers = 1, .shuffle = false, .shard = 0, .shards = 2});
  Loader rank1(ctx, dataset, {.batch = 2, .workers = 1, .shuffle = false, .shard = 1, .shards = 2});
  rank0.start_epoch(0);
  testing::BatchTensors tensors(ctx, 2);
  const std::string expected =
      "fake (8 samples): batch 1 of epoch 1 on rank 0 has no readable sample (/fake/0.png: not a PNG; /fake/1.png: "
      "not a PNG); the ranks of a data-parallel run must take the same steps, so the run stops";
  EXPECT_EQ(message_of<DataError>([&] { rank0.next(tensors.images, tensors.labels); }), expected);
  EXPECT_EQ(message_of<DataError>([&] { rank0.next(tensors.images, tensors.labels); }), expected);  // it stays
  const std::vector<LoadedBatch> other = load_epoch(ctx, rank1, 0);
  ASSERT_EQ(other.size(), 2u);
  EXPECT_EQ(indices_of(other), (std::vector<int64_t>{2, 3, 6, 7}));
}

// A program's own Dataset may throw what is not Glassbox's: it comes out of
// next() named by the data set and the sample, as an Error.
TEST(LoaderErrors, AnErrorThatIsNotGlassboxsIsNamedByItsSample) {
  Context ctx = Context::cpu();
  testing::BatchTensors tensors(ctx, 4);
  Loader foreign(ctx, fake({.size = 8, .foreign = 5}), {.batch = 4, .workers = 2, .shuffle = false});
  foreign.start_epoch(0);
  EXPECT_EQ(message_of<Error>([&] { while (foreign.next(tensors.images, tensors.labels) > 0) {} }),
            "fake (8 samples): loading sample 5: the disk is on fire");
  Loader odd(ctx, fake({.size = 8, .not_an_exception = 2}), {.batch = 4, .workers = 1, .shuffle = false});
  odd.start_epoch(0);
  EXPECT_EQ(message_of<Error>([&] { while (odd.next(tensors.images, tensors.labels) > 0) {} }),
            "fake (8 samples): loading sample 2: something that is not a std::exception was thrown");
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
  EXPECT_EQ(handed_out, 3);  // batch 3 holds sample 13: the batches before it come out, then its error
  EXPECT_EQ(message_of<DataError>([&] { loader.next(tensors.images, tensors.labels); }), message);
  loader.start_epoch(1);  // a failed loader stays failed
  EXPECT_EQ(message_of<DataError>([&] { loader.next(tensors.images, tensors.labels); }), message);
}

// Where a run stops does not depend on which worker fails first: here the
// worker of batch 3 fails (20 ms into its second sample) long before batch 0
// is ready (four samples of 20 ms), and next() still hands out batches 0, 1
// and 2 first.
TEST(LoaderErrors, AWorkersErrorComesOutWhenItsBatchIsDueNotBefore) {
  Context ctx = Context::cpu();
  Loader loader(ctx, fake({.size = 16, .broken = 13, .delay = std::chrono::milliseconds(20)}),
                {.batch = 4, .workers = 4, .shuffle = false});
  loader.start_epoch(0);
  testing::BatchTensors tensors(ctx, 4);
  std::vector<int> counts;
  const std::string message = message_of<DataError>([&] {
    while (const int count = loader.next(tensors.images, tensors.labels)) counts.push_back(count);
  });
  EXPECT_EQ(message, "/fake/13.png: truncated at byte 12");
  EXPECT_EQ(counts, (std::vector<int>{4, 4, 4}));
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
  // A Dataset of one's own whose size() is negative: named, not a vector of 2^64 - 5 flags.
  struct Negative final : Dataset {
    std::string describe() const override { return "negative"; }
    int64_t size() const override { return -5; }
    int classes() const override { return 2; }
    Shape sample_shape() const override { return Shape{2, 3, 3}; }
    int load(int64_t, std::span<float>, SampleMode, std::mt19937_64&) const override { return 0; }
  };
  EXPECT_EQ(message_of<Error>(make(std::make_shared<Negative>(), {.batch = 2})),
            "Loader: negative says it holds -5 samples");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 2, .prefetch = 0})),
            "Loader: prefetch must be from 1 to 1024 batches, got 0");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 2, .prefetch = 2147483647})),
            "Loader: prefetch must be from 1 to 1024 batches, got 2147483647");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 2, .workers = -1})),
            "Loader: workers must be 0 (one per core) to 1024, got -1");
  EXPECT_EQ(message_of<ConfigError>(make(dataset, {.batch = 2, .workers = 1025})),
            "Loader: workers must be 0 (one per core) to 1024, got 1025");
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
// the loader must stop its workers, not let them finish the epoch: counted in
// samples loaded, not in seconds (a loader that never stopped would hang until
// CTest's timeout).
TEST(LoaderShutdown, DestroyingALoaderMidEpochStopsItsWorkers) {
  Context ctx = Context::cpu();
  auto slow = fake({.size = 2000, .delay = std::chrono::milliseconds(50)});
  auto loaded = [&] {
    int64_t total = 0;
    for (int64_t i = 0; i < 2000; ++i) total += slow->loads(i);
    return total;
  };
  {
    Loader loader(ctx, slow, {.batch = 10, .workers = 4, .prefetch = 3});
    load_epoch(ctx, loader, 0, 1);
  }
  const int64_t after_one_batch = loaded();
  EXPECT_GE(after_one_batch, 10);
  EXPECT_LT(after_one_batch, 400) << "the destroyed loader went on loading its epoch of 2000";
  {
    Loader started(ctx, slow, {.batch = 10, .workers = 2});
    started.start_epoch(3);
  }
  { Loader never_started(ctx, slow, {.batch = 10, .workers = 2}); }
  EXPECT_LT(loaded() - after_one_batch, 400) << "a loader destroyed after start_epoch went on loading";
}

// Staging buffers the host cannot hold are an OutOfMemoryError naming them,
// not a std::bad_alloc from a vector.
TEST(LoaderErrors, StagingBuffersPastTheHostsMemoryAreAnOutOfMemoryError) {
  if (testing::kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow memory";
  Context ctx = Context::cpu();
  auto dataset = fake({.size = 20});
  std::string message;
  {
    const testing::AddressSpaceLimit limit(int64_t{200} << 20);
    ASSERT_TRUE(limit.held());
    message = message_of<OutOfMemoryError>(
        [&] { Loader loader(ctx, dataset, {.batch = 1 << 24, .workers = 1, .drop_last = false}); });
  }
  EXPECT_EQ(message, "Loader: 3 staging buffers of a batch of 16777216 (1.19 GiB each) do not fit in the host's "
                     "memory");
}

// Worker threads the host cannot start (their stacks do not fit) are an
// Error naming the worker and the count, not a bare std::system_error; the
// workers already started are stopped and joined.
TEST(LoaderErrors, WorkersTheHostCannotStartAreAnErrorNamingThem) {
  if (testing::kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow memory";
  Context ctx = Context::cpu();
  auto dataset = fake({.size = 20});
  std::string message;
  {
    const testing::AddressSpaceLimit limit(int64_t{64} << 20);
    ASSERT_TRUE(limit.held());
    message = message_of<Error>([&] { Loader loader(ctx, dataset, {.batch = 2, .workers = kMaxLoaderThreads}); });
  }
  EXPECT_TRUE(testing::contains_match(message, "^Loader: cannot start worker thread [0-9]+ of 1024: .+; fewer workers "
                                               "\\(Loader options' workers, the --workers flag\\) may start$"))
      << message;
  Loader loader(ctx, dataset, {.batch = 2, .workers = 2});  // the host has its threads back
  loader.start_epoch(0);
  testing::BatchTensors tensors(ctx, 2);
  EXPECT_EQ(loader.next(tensors.images, tensors.labels), 2);
}

// A data set of more samples than the host can keep a flag or an epoch's
// order for is an OutOfMemoryError naming them.
TEST(LoaderErrors, PerSampleStatePastTheHostsMemoryIsAnOutOfMemoryError) {
  if (testing::kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow memory";
  Context ctx = Context::cpu();
  auto synthetic = [](int64_t size) {  // no memory per sample
    return std::make_shared<const SyntheticDataset>(SyntheticOptions{.size = size, .sample = Shape{4}});
  };
  const auto huge = synthetic(int64_t{1} << 34), large = synthetic(int64_t{50} << 20);
  std::string flags, order;
  {
    const testing::AddressSpaceLimit limit(int64_t{200} << 20);
    ASSERT_TRUE(limit.held());
    flags = message_of<OutOfMemoryError>([&] { Loader loader(ctx, huge, {.batch = 4}); });
    Loader loader(ctx, large, {.batch = 4, .workers = 1});
    order = message_of<OutOfMemoryError>([&] { loader.start_epoch(0); });
  }
  EXPECT_EQ(flags, "Loader: a flag per sample for 17,179,869,184 samples (16.00 GiB) does not fit in the host's "
                   "memory");
  EXPECT_EQ(order, "Loader: the order of an epoch of 52,428,800 samples (400.00 MiB) does not fit in the host's "
                   "memory");
}

}  // namespace
}  // namespace glassbox
