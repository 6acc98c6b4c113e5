// data/loader.cpp: the Loader's front (data/loader.h): options and tensor
// checks, start_epoch, and next(), which takes the batches the workers of
// data/loader_pipeline.cpp prepare, in order, and copies them to the device.
#include "data/loader.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "data/loader_order.h"
#include "data/loader_pipeline.h"
#include "tensor/allocator.h"
#include "tensor/grouped.h"

namespace glassbox {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const LoaderOptions& checked(const std::shared_ptr<const Dataset>& dataset, const LoaderOptions& options) {
  if (!dataset) throw ConfigError("Loader: no dataset (a null pointer)");
  if (dataset->size() < 0) {
    throw Error(cat("Loader: ", dataset->describe(), " says it holds ", dataset->size(), " samples"));
  }
  if (options.batch < 1) throw ConfigError(cat("Loader: batch must be at least 1, got ", options.batch));
  if (options.prefetch < 1 || options.prefetch > kMaxLoaderThreads) {
    throw ConfigError(cat("Loader: prefetch must be from 1 to ", kMaxLoaderThreads, " batches, got ",
                          options.prefetch));
  }
  if (options.workers < 0 || options.workers > kMaxLoaderThreads) {
    throw ConfigError(cat("Loader: workers must be 0 (one per core) to ", kMaxLoaderThreads, ", got ",
                          options.workers));
  }
  if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards) {
    throw ConfigError(cat("Loader: shard ", options.shard, " of ", options.shards,
                          ": the shard must be from 0 to shards - 1, and shards at least 1"));
  }
  if (options.shards > 1 && !options.drop_last) {
    throw ConfigError("Loader: a shard of an epoch (data-parallel training) needs drop_last: every rank must "
                      "take the same number of full batches");
  }
  if (options.shards > 1 && dataset->size() < int64_t{options.batch} * options.shards) {
    throw ConfigError(cat("Loader: ", dataset->describe(), ": ", dataset->size(), " samples are fewer than one batch of ",
                          options.batch, " for each of ", options.shards, " ranks"));
  }
  if (options.drop_last && dataset->size() < options.batch) {
    throw ConfigError(cat("Loader: ", dataset->describe(), ": ", dataset->size(),
                          " samples are fewer than one batch of ", options.batch,
                          ", and drop_last drops every partial batch"));
  }
  return options;
}

void check_fits(const Tensor& tensor, std::string_view what, const Shape& shape, DType dtype, const Device& device) {
  if (!tensor.defined() || tensor.shape() != shape || tensor.dtype() != dtype || tensor.device() != device) {
    throw ShapeError(cat("Loader::next: ", what, " is ", tensor.defined() ? tensor.str() : "an undefined tensor",
                         "; the loader's batch needs ",
                         name_of(dtype), " ", shape.str(), " on ", device.str()));
  }
}

}  // namespace

Loader::Loader(Context& ctx, std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : ctx_(ctx), dataset_(std::move(dataset)), options_(checked(dataset_, options)) {
  const int workers = options_.workers > 0 ? options_.workers
                                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pipeline_ = std::make_unique<Pipeline>(ctx_, *dataset_, options_, workers);
  pipeline_->start_workers(workers);  // if one fails to start, ~Pipeline joins the others
}

Loader::~Loader() = default;

int64_t Loader::batches_per_epoch() const { return pipeline_->batches; }

LoaderStats Loader::stats() const { return pipeline_->stats; }

void Loader::start_epoch(int epoch) {
  if (epoch < 0) throw ConfigError(cat("Loader::start_epoch: epoch ", epoch, ": epochs count from 0"));
  Pipeline& p = *pipeline_;
  p.release_held();
  std::shared_ptr<const std::vector<int64_t>> order;
  try {
    std::vector<int64_t> whole = loader_order::epoch_order(p.samples, options_.seed, epoch, options_.shuffle);
    order = std::make_shared<const std::vector<int64_t>>(
        options_.shards == 1 ? std::move(whole)
                             : loader_order::shard_order(whole, options_.batch, options_.shard, options_.shards));
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError(cat("Loader: the order of an epoch of ", grouped(p.samples), " samples (",
                               format_bytes(checked_multiply(p.samples, 8, "an epoch's order")),
                               ") does not fit in the host's memory"));
  }
  {
    std::lock_guard lock(p.mutex);
    ++p.generation;
    p.epoch = epoch;
    p.order = std::move(order);
    p.next_claim = 0;
    p.next_out = 0;
    p.failed_batch = kNoFailedBatch;
    // Ready batches of the old epoch are dropped; those being filled are
    // freed by their workers, who see the new generation.
    for (LoaderSlot& slot : p.slots) {
      if (slot.state == LoaderSlotState::kReady) slot.state = LoaderSlotState::kFree;
    }
  }
  p.work.notify_all();
  p.stats = {};
}

int Loader::next(const Tensor& images, const Tensor& labels) {
  Pipeline& p = *pipeline_;
  std::vector<int64_t> dims{options_.batch};
  const Shape sample_shape = dataset_->sample_shape();
  dims.insert(dims.end(), sample_shape.dims().begin(), sample_shape.dims().end());
  check_fits(images, "images", Shape(std::move(dims)), DType::kFloat32, ctx_.device());
  check_fits(labels, "labels", Shape{options_.batch}, DType::kInt32, ctx_.device());

  auto copy_start = Clock::now();
  p.release_held();
  double copy_seconds = seconds_since(copy_start);

  std::unique_lock lock(p.mutex);
  if (p.epoch < 0) throw ConfigError("Loader::next: no epoch started; call start_epoch(epoch) first");
  int s = 0;
  for (;;) {  // until a batch with a real sample, the end of the epoch, or an error
    s = static_cast<int>(p.next_out % p.slot_count);
    LoaderSlot& slot = p.slots[static_cast<size_t>(s)];
    if (!p.error && p.next_out < p.batches) {
      const auto wait_start = Clock::now();
      p.ready.wait(lock,
                   [&] { return p.error || (slot.state == LoaderSlotState::kReady && slot.batch == p.next_out); });
      p.stats.wait_seconds += seconds_since(wait_start);
    }
    if (p.error) std::rethrow_exception(p.error);
    if (p.next_out >= p.batches) {
      p.stats.copy_seconds += copy_seconds;
      if (p.stats.samples == 0 && p.stats.skipped > 0) p.throw_all_unreadable();
      return 0;
    }
    // Said before the batch is taken (if warn throws, the batch is still
    // there for the next call) and before its error (they may explain it).
    p.say_skips(slot, lock);
    if (slot.error) {  // due now: every later call, also after start_epoch, rethrows it
      p.error = slot.error;
      p.halt = true;
      std::rethrow_exception(p.error);
    }
    ++p.next_out;
    p.count_skips(slot);
    if (slot.count > 0) break;
    // Every sample of the batch was unreadable: nothing to hand out.
    slot.state = LoaderSlotState::kFree;
    p.work.notify_all();
    if (options_.shards > 1) {
      std::string names;
      for (const int64_t index : slot.skipped) names += cat(names.empty() ? "" : "; ", p.unreadable.at(index));
      p.error = std::make_exception_ptr(DataError(
          cat(dataset_->describe(), ": batch ", slot.batch + 1, " of epoch ", p.epoch + 1, " on rank ", options_.shard,
              " has no readable sample (", names, "); the ranks of a data-parallel run must take the same steps, "
              "so the run stops")));
      p.halt = true;
      std::rethrow_exception(p.error);
    }
  }
  LoaderSlot& slot = p.slots[static_cast<size_t>(s)];
  slot.state = LoaderSlotState::kHeld;
  const int count = slot.count;
  lock.unlock();

  copy_start = Clock::now();
  if (p.staging) {
    p.held = s;  // before the copy: if queuing it throws, the next call still frees the slot
    p.staging->copy_async(s, images.raw(), labels.raw());
  } else {
    std::memcpy(images.raw(), p.images[static_cast<size_t>(s)], p.images_bytes);
    std::memcpy(labels.raw(), p.labels[static_cast<size_t>(s)], p.labels_bytes);
    {
      std::lock_guard relock(p.mutex);
      slot.state = LoaderSlotState::kFree;
    }
    p.work.notify_all();
  }
  p.stats.copy_seconds += copy_seconds + seconds_since(copy_start);
  ++p.stats.batches;
  p.stats.samples += count;
  return count;
}

// The slot of the previous next(): free it once its copy has read it.
void Loader::Pipeline::release_held() {
  if (held < 0) return;
  staging->wait_host(held);
  {
    std::lock_guard lock(mutex);
    slots[static_cast<size_t>(held)].state = LoaderSlotState::kFree;
  }
  held = -1;
  work.notify_all();
}

void Loader::Pipeline::say_skips(const LoaderSlot& slot, std::unique_lock<std::mutex>& lock) {
  std::vector<std::string> to_say;
  for (const int64_t index : slot.skipped) {
    if (said.insert(index).second) to_say.push_back(cat("skipping ", unreadable.at(index)));
  }
  if (to_say.empty() || !options.warn) return;
  // The slot is ready and due: no worker touches it while the lock is open.
  lock.unlock();
  for (const std::string& warning : to_say) options.warn(warning);
  lock.lock();
}

void Loader::Pipeline::count_skips(const LoaderSlot& slot) {
  stats.skipped += static_cast<int64_t>(slot.skipped.size());
  for (const int64_t index : slot.skipped) {
    if (stats.skipped_files.size() < kSkippedNamed) stats.skipped_files.push_back(unreadable.at(index));
  }
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
// Only a CUDA context gets here, and a CPU-only build cannot make one.
std::unique_ptr<DeviceStaging> make_device_staging(Context&, size_t, size_t, int) {
  throw NotBuiltError("Loader: Glassbox was built without CUDA (configure with -DGLASSBOX_CUDA=ON)");
}
}  // namespace glassbox
#endif
