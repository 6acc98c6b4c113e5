// data/dataset.h: a set of labelled images, read one sample at a time.
//
// A Dataset knows where its samples are and how to turn one into the
// network's input: decode, crop, flip, normalise, into (C, H, W) float32
// values. The Loader (data/loader.h) decides the order, runs load() on worker
// threads and hands batches to the device. Sources:
//   data/idx_dataset.h     MNIST and Fashion-MNIST (IDX files, gzip or not), in memory
//   data/image_folder.h    folders of JPEG images, one subfolder per class (TurboJPEG)
//   data/synthetic.h       seeded random images (no files), and the one fixed benchmark batch
// data/data_spec.h makes the train and test sets a --data flag names.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>

#include "tensor/error.h"
#include "tensor/shape.h"

namespace glassbox {

// One sample that cannot be decoded (a corrupt JPEG inside a folder), which
// may be skipped: the loader (data/loader.h) leaves it out of its batch,
// names it once through its warn and counts it; it is neither trained on nor
// scored. `file()` names it. Any other DataError (tensor/error.h) stops the run.
class SampleError : public DataError {
 public:
  SampleError(std::string file, const std::string& reason)
      : DataError(file + ": " + reason), file_(std::move(file)) {}
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// What a dataset of files does with one that cannot be read or decoded:
// kSkip throws SampleError (the loader skips it and counts it), kStop a plain
// DataError naming the file (the run stops there).
enum class OnBadSample { kSkip, kStop };

// How a sample is prepared. kTraining draws a random crop and flip (where the
// dataset augments at all); kEvaluation takes the deterministic central view.
enum class SampleMode { kTraining, kEvaluation };

class Dataset {
 public:
  virtual ~Dataset() = default;

  // One line for logs: what, where from, how many, e.g.
  // "Fashion-MNIST train: 60,000 images 1x28x28, 10 classes (/usr/share/datasets/fashion-mnist)".
  virtual std::string describe() const = 0;
  virtual int64_t size() const = 0;
  virtual int classes() const = 0;
  // (C, H, W) of one prepared sample: what load() writes.
  virtual Shape sample_shape() const = 0;

  // Prepares sample `index` (0 <= index < size()) into `pixels` (C*H*W floats,
  // normalised per channel) and returns its label, in [0, classes()).
  // kTraining draws its random choices from `rng` only, so that the loader
  // can make a run reproducible by seeding `rng` per sample; kEvaluation
  // ignores it. Safe to call from several threads at once. Throws
  // SampleError for one unreadable sample, DataError for anything else.
  virtual int load(int64_t index, std::span<float> pixels, SampleMode mode, std::mt19937_64& rng) const = 0;
};

}  // namespace glassbox
