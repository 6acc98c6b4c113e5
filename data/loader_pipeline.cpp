// data/loader_pipeline.cpp: the Loader's worker threads (data/loader_pipeline.h
// says how they share the ring of staging slots) and how they load samples.
#include "data/loader_pipeline.h"

#include <algorithm>
#include <new>
#include <system_error>
#include <utility>

#include "data/loader_order.h"
#include "tensor/allocator.h"
#include "tensor/error.h"
#include "tensor/grouped.h"

namespace glassbox {

// Note [A slot for every worker]: each worker fills a whole batch in a slot of
// its own, and the consumer holds one while its copy runs. With only
// prefetch + 1 slots, workers past `prefetch` would find no free slot and
// wait: on a 16-core machine, 16 workers with the default prefetch of 2
// would prepare no faster than 2. So the ring has a slot for every worker,
// plus the one being copied.
namespace {

// A flag per sample (Pipeline::bad), or an OutOfMemoryError naming them: a
// data set of billions of samples (synthetic:N takes up to 2^40) needs a
// byte each before anything loads.
std::vector<std::atomic<bool>> sample_flags(int64_t samples) {
  try {
    return std::vector<std::atomic<bool>>(static_cast<size_t>(samples));
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError(cat("Loader: a flag per sample for ", grouped(samples), " samples (",
                               format_bytes(samples), ") does not fit in the host's memory"));
  }
}

}  // namespace

Loader::Pipeline::Pipeline(Context& ctx, const Dataset& dataset_in, const LoaderOptions& options_in, int workers)
    : dataset(dataset_in),
      options(options_in),
      samples(dataset_in.size()),
      sample_numel(dataset_in.sample_shape().numel()),
      epoch_samples(samples / options_in.shards / options_in.batch * options_in.batch),
      batches(options_in.drop_last ? epoch_samples / options_in.batch
                                   : (samples + options_in.batch - 1) / options_in.batch),
      slot_count(std::max(options_in.prefetch, workers) + 1),
      bad(sample_flags(samples)),
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
    try {
      for (int s = 0; s < slot_count; ++s) {
        images.push_back(cpu_images.emplace_back(static_cast<size_t>(batch_numel)).data());
        labels.push_back(cpu_labels.emplace_back(static_cast<size_t>(options.batch)).data());
      }
    } catch (const std::bad_alloc&) {
      throw OutOfMemoryError(cat("Loader: ", slot_count, " staging buffers of a batch of ", options.batch, " (",
                                 format_bytes(static_cast<int64_t>(images_bytes + labels_bytes)),
                                 " each) do not fit in the host's memory"));
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
  for (int i = 0; i < count; ++i) {
    try {
      threads.emplace_back([this] { run_worker(); });
    } catch (const std::exception& e) {  // std::system_error: the system's limit on threads, or its memory for
                                         // their stacks; std::bad_alloc: its memory for a thread's state
      throw Error(cat("Loader: cannot start worker thread ", i + 1, " of ", count, ": ", e.what(),
                      "; fewer workers (Loader options' workers, the --workers flag) may start"));
    }
  }
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
  return epoch >= 0 && !error && next_claim < batches && next_claim < failed_batch.load() &&
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
    slot = {.state = LoaderSlotState::kFilling, .batch = batch, .generation = generation.load()};
    const std::shared_ptr<const std::vector<int64_t>> job_order = order;
    const int64_t job_epoch = epoch;
    LoaderSlot result = slot;
    lock.unlock();
    bool done = false;
    try {
      done = fill(s, batch, job_epoch, *job_order, result.generation, result);
    } catch (...) {
      result.error = std::current_exception();
    }
    lock.lock();
    if (result.generation != generation.load() || (!done && !result.error)) {
      slot.state = LoaderSlotState::kFree;  // abandoned: its epoch was replaced, or a batch before it failed
    } else {
      // Done, or failed: either way next() takes it when it is due.
      if (result.error && batch < failed_batch.load()) failed_batch = batch;
      slot = std::move(result);
      slot.state = LoaderSlotState::kReady;
    }
    ready.notify_all();
    work.notify_all();
  }
}

// Fills `slot` with batch `batch`; false if abandoned part-way. The batch's
// readable samples take the first rows, in order; `result.skipped` lists
// the others (Note [Skipped samples] in data/loader.h).
bool Loader::Pipeline::fill(int slot, int64_t batch, int64_t job_epoch, const std::vector<int64_t>& job_order,
                            uint64_t job_generation, LoaderSlot& result) {
  const int64_t first = batch * options.batch;
  const int size = static_cast<int>(std::min<int64_t>(options.batch, static_cast<int64_t>(job_order.size()) - first));
  float* pixels = images[static_cast<size_t>(slot)];
  int32_t* label = labels[static_cast<size_t>(slot)];
  auto row_pixels = [&](int row) {
    return std::span<float>(pixels + row * sample_numel, static_cast<size_t>(sample_numel));
  };
  auto abandoned = [&] {
    return halt.load(std::memory_order_relaxed) || generation.load(std::memory_order_relaxed) != job_generation ||
           batch > failed_batch.load(std::memory_order_relaxed);
  };
  int rows = 0;
  for (int i = 0; i < size; ++i) {
    if (abandoned()) return false;
    const int64_t index = job_order[static_cast<size_t>(first + i)];
    if (load_sample(index, job_epoch, row_pixels(rows), label[rows])) {
      ++rows;
    } else {
      result.skipped.push_back(index);
    }
  }
  result.count = rows;
  // With drop_last every row is trained on, so none may be padding. A batch
  // with no readable sample is passed over by next(): no replacements.
  if (options.drop_last && rows > 0) {
    for (const int64_t skipped : result.skipped) {
      if (abandoned()) return false;
      if (!load_replacement(skipped, job_epoch, row_pixels(rows), label[rows])) {
        std::copy_n(pixels, sample_numel, pixels + rows * sample_numel);  // row 0's sample, read before
        label[rows] = label[0];
      }
      ++rows;
    }
  }
  // Padding: zero pixels, label 0.
  std::fill(pixels + rows * sample_numel, pixels + options.batch * sample_numel, 0.0f);
  std::fill(label + rows, label + options.batch, 0);
  return true;
}

// Loads sample `index` into `pixels` and `label`; false if its file cannot be
// read (marked in `bad`, with its message, and not read again). Each sample
// draws from the RNG of its own index.
bool Loader::Pipeline::load_sample(int64_t index, int64_t job_epoch, std::span<float> pixels, int32_t& into) {
  if (bad[static_cast<size_t>(index)].load(std::memory_order_relaxed)) return false;
  std::mt19937_64 rng(loader_order::sample_seed(options.seed, job_epoch, index));
  int label = 0;
  try {
    label = dataset.load(index, pixels, options.mode, rng);
  } catch (const SampleError& e) {
    // Marked and its message kept in one step under the lock: whoever sees
    // the mark and then takes the lock finds the message.
    std::lock_guard lock(mutex);
    if (!bad[static_cast<size_t>(index)].exchange(true)) unreadable.emplace(index, e.what());
    return false;
  } catch (const Error&) {
    throw;  // Glassbox's own: it names its file or sample
  } catch (...) {  // a program's own Dataset that throws something else: named by its sample
    rethrow_with_context(std::current_exception(), cat(dataset.describe(), ": loading sample ", index, ": "));
  }
  if (label < 0 || label >= dataset.classes()) {
    throw DataError(cat(dataset.describe(), ": sample ", index, " has label ", label, ", outside [0, ",
                        dataset.classes(), ")"));
  }
  into = label;
  return true;
}

// The next readable sample after `skipped` in index order (wrapping), loaded
// into `pixels` and `label` with its own index's RNG: what that sample is in
// its own place. False only where no file is readable any more (the caller
// read one of its own before, so files vanished since).
bool Loader::Pipeline::load_replacement(int64_t skipped, int64_t job_epoch, std::span<float> pixels,
                                        int32_t& label) {
  for (int64_t tried = 1; tried <= samples; ++tried) {
    if (load_sample((skipped + tried) % samples, job_epoch, pixels, label)) return true;
  }
  return false;
}

// On the consumer's thread, at the end of the epoch.
void Loader::Pipeline::throw_all_unreadable() const {
  throw DataError(cat(dataset.describe(), ": epoch ", epoch + 1, ": all ", stats.skipped,
                      " samples are unreadable (each was reported "
                      "by the loader's warn)"));
}

}  // namespace glassbox
