// data/loader_pipeline.h: the inside of the Loader (data/loader.h), shared by
// data/loader.cpp (the consumer: start_epoch, next) and
// data/loader_pipeline.cpp (the worker threads). Not for use elsewhere.
//
// Workers fill whole batches into a ring of max(prefetch, workers) + 1
// staging slots (Note [A slot for every worker]); next() hands them out
// strictly in batch order. Batch k of an epoch always goes through slot
// k % slots. A worker may start batch k only when that slot is free, that is
// once batch k - slots has been handed out and its copy has read the slot;
// so workers run at most slots - 1 batches ahead of the one being copied,
// and the order never depends on timing. start_epoch bumps a
// generation counter: a worker still filling a batch of the abandoned epoch
// notices between two samples, stops, and frees its slot.
//
// A worker's error is kept in the slot of its batch, which is marked ready:
// next() rethrows it when that batch is due (Note [Skipped samples] in
// data/loader.h). Batches after the first failed one are neither claimed nor
// finished. The unreadable samples a batch skipped travel in its slot too,
// so that next() names them in batch order.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/loader.h"
#include "data/loader_staging.h"

namespace glassbox {

// kHeld: handed out by next(), its copy to the device may still be reading it (GPU only).
enum class LoaderSlotState { kFree, kFilling, kReady, kHeld };

struct LoaderSlot {
  LoaderSlotState state = LoaderSlotState::kFree;
  int64_t batch = -1;
  uint64_t generation = 0;       // of the epoch the batch belongs to
  int count = 0;                 // real samples in it, the first rows
  std::vector<int64_t> skipped;  // the batch's unreadable samples, in its order
  std::exception_ptr error;      // filling it failed: next() rethrows this when the batch is due
};

inline constexpr int64_t kNoFailedBatch = std::numeric_limits<int64_t>::max();

struct Loader::Pipeline {
  // The workers' side (data/loader_pipeline.cpp).
  // `workers`: the threads start_workers will start (options.workers, or the core count for 0).
  Pipeline(Context& ctx, const Dataset& dataset, const LoaderOptions& options, int workers);
  ~Pipeline();  // stops and joins the workers
  void start_workers(int count);
  void run_worker();
  void work_loop();
  bool claimable() const;
  bool fill(int slot, int64_t batch, int64_t epoch, const std::vector<int64_t>& order, uint64_t generation,
            LoaderSlot& result);
  bool load_sample(int64_t index, int64_t epoch, std::span<float> pixels, int32_t& into);
  bool load_replacement(int64_t skipped, int64_t epoch, std::span<float> pixels, int32_t& label);
  void record_error(std::exception_ptr failure);
  [[noreturn]] void throw_all_unreadable() const;  // an epoch that handed out nothing but skipped samples
  // The consumer's side (data/loader.cpp).
  void release_held();  // the slot of the previous next(), once copied
  // options.warn for each of `slot`'s skipped files not said before.
  void say_skips(const LoaderSlot& slot, std::unique_lock<std::mutex>& lock);
  void count_skips(const LoaderSlot& slot);  // into stats, under the lock

  // Fixed at construction.
  const Dataset& dataset;
  const LoaderOptions& options;  // the Loader's, which outlives this
  const int64_t samples;
  const int64_t sample_numel;  // C*H*W
  const int64_t epoch_samples;  // this shard's samples of an epoch (full batches; LoaderOptions::shards)
  const int64_t batches;       // per epoch
  const int slot_count;        // max(prefetch, workers) + 1
  size_t images_bytes = 0, labels_bytes = 0;  // of one batch
  std::unique_ptr<DeviceStaging> staging;     // a CUDA context's pinned slots and copy stream
  std::vector<std::vector<float>> cpu_images;
  std::vector<std::vector<int32_t>> cpu_labels;
  std::vector<float*> images;    // per slot: (batch, C, H, W), in cpu_images or pinned
  std::vector<int32_t*> labels;  // per slot: (batch)
  // Per sample: its load threw SampleError. Kept across epochs, so a file is
  // read once and then only counted.
  std::vector<std::atomic<bool>> bad;

  std::mutex mutex;
  std::condition_variable work;   // workers wait here: a batch to claim, or stop
  std::condition_variable ready;  // next() waits here: its batch ready, or an error
  // Guarded by mutex.
  std::vector<LoaderSlot> slots;
  std::shared_ptr<const std::vector<int64_t>> order;  // this epoch's; a worker keeps its own reference
  int64_t epoch = -1;                 // -1: start_epoch not called yet
  int64_t next_claim = 0;             // the next batch a worker takes
  int64_t next_out = 0;               // the next batch next() hands out
  // The SampleError message of each sample marked in `bad`: "FILE: reason".
  std::unordered_map<int64_t, std::string> unreadable;
  std::exception_ptr error;           // due (next() reached it) or outside any batch; every next() rethrows it
  bool stopping = false;
  // Read by workers between two samples, to drop an abandoned batch early;
  // written under mutex.
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> halt{false};  // stopping, or an error
  std::atomic<int64_t> failed_batch{kNoFailedBatch};  // this epoch's first batch whose filling failed

  // The consumer's own (next(), start_epoch, stats(): one thread).
  int held = -1;  // the slot whose copy may still be reading it
  LoaderStats stats;
  std::unordered_set<int64_t> said;  // the unreadable samples options.warn has named

  std::vector<std::thread> threads;
};

}  // namespace glassbox
