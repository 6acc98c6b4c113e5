// data/batch_source.h: the batches of one split of a dataset, as the trainer
// (train/trainer.h) and evaluate() (train/evaluate.h) take them, whatever
// makes them:
//   LoaderBatches  images, prepared by a Loader's workers (data/loader.h)
//   TextBatches    a language model's windows of a text corpus (data/text_batches.h)
// One interface, so there is one training loop and one evaluation for both.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/loader.h"
#include "graph/graph.h"

namespace glassbox {

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // One line for logs: what the batches are and where they come from.
  virtual std::string describe() const = 0;
  virtual int64_t batches_per_epoch() const = 0;
  // Starts epoch `epoch` (0-based), abandoning what is left of the previous one.
  virtual void start_epoch(int epoch) = 0;
  // Copies the next batch of the epoch into the graph's inputs, queued on
  // ctx's stream; returns how many of the loss's rows hold real data to
  // count, the first rows (a padded last batch of images has fewer than the
  // batch, and so has one that skipped unreadable images: Note [Skipped
  // samples] in data/loader.h), 0 once the epoch is over.
  virtual int64_t next(Graph& graph) = 0;
  // This epoch's waiting, copying and skipped samples.
  virtual LoaderStats stats() const = 0;
  // Whether each batch goes on where the previous one stopped (a language
  // model's windows), so that recurrent state carries from batch to batch
  // and is reset at the start of every epoch and every evaluation.
  virtual bool continues() const { return false; }
};

// A Loader's batches into the graph's "images" and "labels".
class LoaderBatches final : public BatchSource {
 public:
  explicit LoaderBatches(std::unique_ptr<Loader> loader);  // owns it
  explicit LoaderBatches(Loader& loader);                   // borrows it: it must outlive this

  std::string describe() const override;
  int64_t batches_per_epoch() const override { return loader_->batches_per_epoch(); }
  void start_epoch(int epoch) override { loader_->start_epoch(epoch); }
  int64_t next(Graph& graph) override;
  LoaderStats stats() const override { return loader_->stats(); }

  Loader& loader() { return *loader_; }

 private:
  std::unique_ptr<Loader> owned_;
  Loader* loader_;
};

}  // namespace glassbox
