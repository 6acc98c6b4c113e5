// data/text_batches.h: a language model's batches (data/batch_source.h): the
// BPTT windows (data/bptt.h) of one split of a text corpus
// (data/text_corpus.h), window after window, into the graph's "tokens" and
// "labels" (T, B) int32. The windows continue each other (continues()), so
// the trainer carries the LSTM's state from one to the next and resets it
// at the start of each epoch; every epoch walks the windows in order (a
// language model's stream has one order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/batch_source.h"
#include "data/bptt.h"
#include "data/loader_staging.h"
#include "data/text_corpus.h"

namespace glassbox {

class TextBatches final : public BatchSource {
 public:
  // The windows of `split` at (B, T) = (streams, steps), copied to ctx's
  // device (ctx outlives this). Throws what BpttWindows throws (a split too
  // short for one window).
  TextBatches(Context& ctx, std::shared_ptr<const TextCorpus> corpus, Split split, BpttOptions options);

  std::string describe() const override;
  int64_t batches_per_epoch() const override { return windows_.windows(); }
  void start_epoch(int epoch) override;
  // Throws ConfigError unless the graph's "tokens" and "labels" are (T, B)
  // int32; returns T x B.
  int64_t next(Graph& graph) override;
  LoaderStats stats() const override { return stats_; }
  bool continues() const override { return true; }

  const BpttWindows& windows() const { return windows_; }

 private:
  // Note [A window's copy does not wait for the device]: on a CUDA device, a
  // window goes through one of two pinned host slots (data/loader_staging.h),
  // so the host queues the next step while the device runs this one (a copy
  // from pageable memory waits for the stream first: CUDA runtime API, "API
  // synchronization behavior"). A slot is written again only after the copy
  // that read it ran, two windows later.
  Context& ctx_;
  std::shared_ptr<const TextCorpus> corpus_;
  BpttWindows windows_;
  int64_t next_window_ = 0;
  std::unique_ptr<DeviceStaging> staging_;  // on a CUDA device, made at the first window
  LoaderStats stats_;
};

}  // namespace glassbox
