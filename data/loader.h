// data/loader.h: batches from a Dataset, prepared ahead by worker threads and
// handed to the device without stalling the step.
//
//   Loader loader(ctx, dataset, {.batch = 64, .workers = 2, .seed = 1, .shuffle = true,
//                                .mode = SampleMode::kTraining});
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     loader.start_epoch(epoch);
//     while (int count = loader.next(images, labels)) { ... a step on images, labels ... }
//     loader.stats();  // seconds waited for data, unreadable samples skipped
//   }
//
// Messages count epochs and batches from 1, as `glassbox train` prints them:
// start_epoch(0) starts epoch 1.
//
// Order: epoch e visits the samples in a permutation drawn from (seed, e)
// (0, 1, 2, ... without shuffle); sample i of epoch e draws its augmentation
// from an RNG seeded with (seed, e, i). So a run is the same whatever the
// worker count and timing, and a run resumed at epoch e continues exactly
// as one that never stopped.
//
// Flow: workers fill whole batches into host staging buffers (pinned with
// cudaHostAlloc when the context is a GPU, so copies are asynchronous), up to
// `prefetch` batches ahead. next() waits for the next batch (that wait is the
// data-wait time), then copies it to the given device tensors: on a GPU on a
// copy stream into a device buffer, which ctx's stream waits for with an
// event before the device-to-device copy into `images` and `labels`; on the
// CPU by memcpy. The host buffer is reused once its copy has finished.
//
// Note [Skipped samples]: a sample that fails with SampleError (an
// unreadable file) is left out: its batch's readable samples come first, and
// next() returns their count, so nothing that scores `count` rows ever
// counts it. The rows after them are padding without drop_last; with
// drop_last (training, where the step takes a full batch) they hold
// replacements, the next readable samples in index order, trained on but
// not counted. A batch with no readable sample is passed over (a training
// epoch then takes a step fewer; its step count still ends where its
// batches do: train/trainer.cpp). Each skipped
// file is named once through Options::warn, when its batch is handed out,
// and counted with its name in every epoch's stats(). Which samples are
// skipped, and where the run stops, depend on the files only, never on the
// workers' timing: a worker's error in batch k is rethrown by next() when
// batch k is due, after batches 0..k-1, with its message, and stops the
// workers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "tensor/context.h"
#include "tensor/tensor.h"

namespace glassbox {

// The most workers, and the most batches prepared ahead, a Loader takes:
// each worker is a thread and each batch a staging buffer, and more than
// this many of either is a mistake, not a configuration.
inline constexpr int kMaxLoaderThreads = 1024;

struct LoaderOptions {
  int batch = 0;         // samples per batch: the graph's batch
  int workers = 0;       // threads preparing batches; 0: one per core (std::thread::hardware_concurrency)
  uint64_t seed = 1;     // order and augmentation
  bool shuffle = true;   // a fresh permutation each epoch
  SampleMode mode = SampleMode::kTraining;  // random crops and flips, or the central view
  // Drop the last, partial batch of an epoch (training, where the graph's
  // batch is fixed). Without it (evaluation), the last batch is padded: its
  // rows past the count next() returns are zeros with label 0.
  bool drop_last = true;
  // Batches prepared ahead of the one being copied, at least 1; the ring
  // holds at least one batch per worker, so that every worker can be busy.
  int prefetch = 2;
  // Data-parallel training: this loader reads shard `shard` of `shards` (the
  // rank and the number of ranks) of every epoch, by
  // loader_order::shard_order (data/loader_order.h), so that the ranks
  // together take the batches one process at shards x batch would. The
  // order and augmentation stay those of the whole epoch. Needs drop_last.
  int shard = 0;
  int shards = 1;
  // Called (from next(), on the caller's thread) once per unreadable file,
  // the first time a batch that skips it is handed out:
  // "skipping /data/train/cat/17.jpg: not a JPEG file (starts with 89 50 4e 47)".
  std::function<void(const std::string&)> warn;
};

// The unreadable files LoaderStats names; the rest are only counted.
inline constexpr size_t kSkippedNamed = 5;

struct LoaderStats {
  double wait_seconds = 0.0;  // this epoch: time next() spent waiting for a batch to be ready
  double copy_seconds = 0.0;  // this epoch: time next() spent queuing or doing the copy to the device
  int64_t batches = 0;        // batches handed out this epoch
  int64_t samples = 0;        // real samples handed out this epoch (padding and replacements excluded)
  int64_t skipped = 0;        // this epoch: samples left out because their file could not be read
  // The first kSkippedNamed of them, in the epoch's order: "FILE: reason"
  // (the SampleError's message).
  std::vector<std::string> skipped_files;
};

class Loader {
 public:
  // Throws ConfigError for a batch < 1, a prefetch or a worker count out of
  // range, or a dataset smaller than one batch with drop_last;
  // OutOfMemoryError where the staging buffers cannot be had.
  Loader(Context& ctx, std::shared_ptr<const Dataset> dataset, LoaderOptions options);
  ~Loader();  // stops and joins the workers; never throws
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const Dataset& dataset() const { return *dataset_; }
  const LoaderOptions& options() const { return options_; }
  int64_t batches_per_epoch() const;

  // Starts epoch `epoch` (0-based), abandoning what is left of the previous
  // one; workers begin preparing its first batches at once.
  void start_epoch(int epoch);
  // Copies the next batch of this epoch into `images` (batch, C, H, W)
  // float32 and `labels` (batch) int32 on ctx's device, queued on ctx's
  // stream (the step that follows on that stream sees the data). Returns the
  // number of real samples in it, at least 1, and 0 once the epoch is over
  // (Note [Skipped samples]). Throws ShapeError if the tensors do not fit
  // the dataset and batch, and rethrows a worker's error; throws DataError
  // at the end of an epoch whose every sample was unreadable, and for a
  // batch without a readable sample in a shard of a data-parallel epoch
  // (every rank must take the same steps).
  int next(const Tensor& images, const Tensor& labels);
  LoaderStats stats() const;

 private:
  struct Pipeline;  // workers, staging buffers and their queues (data/loader.cpp)
  Context& ctx_;
  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace glassbox
