// data/loader_pipeline.cpp: the Loader's worker threads (data/loader_pipeline.h
// says how they share the ring of staging slots) and how they load samples.
#include "data/loader_pipeline.h"

#include <algorithm>
#include <utility>

#include "data/loader_order.h"

namespace glassbox {

// Note [A slot for every worker]: each worker fills a whole batch in a slot of
// its own, and the consumer holds one while its copy runs. With only
// prefetch + 1 slots, workers past `prefetch` would find no free slot and
// wait: on a 16-core machine, 16 workers with the default prefetch of 2
// would prepare no faster than 2. So the ring has a slot for every worker,
// plus the one being copied.
Loader::Pipeline::Pipeline(Context& ctx, const Dataset& dataset_in, const LoaderOptions& options_in, int workers)
    : dataset(dataset_in),
      options(options_in),
      samples(dataset_in.size()),
      sample_numel(dataset_in.sample_shape().numel()),
      epoch_samples(samples / options_in.shards / options_in.batch * options_in.batch),
      batches(options_in.drop_last ? epoch_samples / options_in.batch
                                   : (samples + options_in.batch - 1) / options_in.batch),
      slot_count(std::max(options_in.prefetch, workers) + 1),
      bad(static_cast<size_t>(samples)),
      slots(static_cast<size_t>(slot_count)) {
  const int64_t batch_numel = checked_multiply(options.batch, sample_numel, "Loader: one batch of samples");
  images_bytes = static_cast<size_t>(checked_multiply(batch_numel, 4, "Loader: one batch of samples, in bytes"));
  labels_bytes = static_cast<size_t>(options.batch) * sizeof(int32_t);
  if (ctx.is_cuda()) {
    staging = make_device_staging(ctx, images_bytes, labels_bytes, slot_count);
    for (int s = 0; s < slot_count; ++s) {
      images.push_back(staging->host_images(s));
      labels.push_back(staging->host_labels(s));
    }
  } else {
    for (int s = 0; s < slot_count; ++s) {
      images.push_back(cpu_images.emplace_back(static_cast<size_t>(batch_numel)).data());
      labels.push_back(cpu_labels.emplace_back(static_cast<size_t>(options.batch)).data());
    }
  }
}

Loader::Pipeline::~Pipeline() {
  {
    std::lock_guard lock(mutex);
    stopping = true;
    halt = true;
  }
  work.notify_all();
  for (std::thread& thread : threads) thread.join();
  // `staging`, destroyed after this, waits for the copies it queued.
}

void Loader::Pipeline::start_workers(int count) {
  for (int i = 0; i < count; ++i) threads.emplace_back([this] { run_worker(); });
}

// A worker never lets an exception out of its thread (that would be
// std::terminate): whatever escapes the loop stops the pipeline and waits in
// `error` for next().
void Loader::Pipeline::run_worker() {
  try {
    work_loop();
  } catch (...) {
    record_error(std::current_exception());
  }
}

void Loader::Pipeline::record_error(std::exception_ptr failure) {
  {
    std::lock_guard lock(mutex);
    if (!error) error = std::move(failure);
    halt = true;
  }
  ready.notify_all();
}

bool Loader::Pipeline::claimable() const {
  return epoch >= 0 && !error && next_claim < batches &&
         slots[static_cast<size_t>(next_claim % slot_count)].state == LoaderSlotState::kFree;
}

void Loader::Pipeline::work_loop() {
  std::unique_lock lock(mutex);
  for (;;) {
    work.wait(lock, [this] { return stopping || claimable(); });
    if (stopping) return;
    const int64_t batch = next_claim++;
    const int s = static_cast<int>(batch % slot_count);
    LoaderSlot& slot = slots[static_cast<size_t>(s)];
    slot = {LoaderSlotState::kFilling, batch, generation.load(), 0, 0};
    const std::shared_ptr<const std::vector<int64_t>> job_order = order;
    const int64_t job_epoch = epoch;
    LoaderSlot result = slot;
    lock.unlock();
    bool done = false;
    std::exception_ptr failure;
    try {
      done = fill(s, batch, job_epoch, *job_order, result.generation, result);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && !error) error = failure;
    if (failure) halt = true;
    if (done && !failure && result.generation == generation.load()) {
      slot = result;
      slot.state = LoaderSlotState::kReady;
    } else {
      slot.state = LoaderSlotState::kFree;  // abandoned: its epoch was replaced, or it failed
    }
    ready.notify_all();
    work.notify_all();
  }
}

// Fills `slot` with batch `batch`; false if abandoned part-way.
bool Loader::Pipeline::fill(int slot, int64_t batch, int64_t job_epoch, const std::vector<int64_t>& job_order,
                            uint64_t job_generation, LoaderSlot& result) {
  const int64_t first = batch * options.batch;
  const int count = static_cast<int>(std::min<int64_t>(options.batch, static_cast<int64_t>(job_order.size()) - first));
  float* pixels = images[static_cast<size_t>(slot)];
  int32_t* label = labels[static_cast<size_t>(slot)];
  int64_t skipped = 0;
  for (int r = 0; r < count; ++r) {
    if (halt.load(std::memory_order_relaxed) || generation.load(std::memory_order_relaxed) != job_generation) {
      return false;
    }
    bool replaced = false;
    const std::span<float> row(pixels + r * sample_numel, static_cast<size_t>(sample_numel));
    label[r] = load_readable(job_order[static_cast<size_t>(first + r)], job_epoch, row, replaced);
    skipped += replaced ? 1 : 0;
  }
  // Padding of the last batch without drop_last: zero pixels, label 0.
  std::fill(pixels + count * sample_numel, pixels + options.batch * sample_numel, 0.0f);
  std::fill(label + count, label + options.batch, 0);
  result.count = count;
  result.skipped = skipped;
  return true;
}

// Loads sample `index`, or, if it cannot be read, the next readable one in
// index order (wrapping). Each sample draws from the RNG of its own index, so
// a replacement is what that sample would be in its own place.
int Loader::Pipeline::load_readable(int64_t index, int64_t job_epoch, std::span<float> pixels, bool& replaced) {
  int64_t j = index;
  for (int64_t tried = 0; tried < samples; ++tried, j = j + 1 == samples ? 0 : j + 1) {
    if (bad[static_cast<size_t>(j)].load(std::memory_order_relaxed)) continue;
    std::mt19937_64 rng(loader_order::sample_seed(options.seed, job_epoch, j));
    int label = 0;
    try {
      label = dataset.load(j, pixels, options.mode, rng);
    } catch (const SampleError& e) {
      // Marked and reported in one step under the lock: a worker that sees
      // the mark and then records an error records it after the warning.
      std::lock_guard lock(mutex);
      if (!bad[static_cast<size_t>(j)].exchange(true)) warnings.push_back(cat("skipping ", e.what()));
      continue;
    }
    if (label < 0 || label >= dataset.classes()) {
      throw DataError(cat(dataset.describe(), ": sample ", j, " has label ", label, ", outside [0, ",
                          dataset.classes(), ")"));
    }
    replaced = j != index;
    return label;
  }
  throw DataError(cat(dataset.describe(), ": all ", samples, " samples are unreadable (each was reported "
                      "by the loader's warn as it failed)"));
}

}  // namespace glassbox
