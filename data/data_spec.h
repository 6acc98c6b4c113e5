// data/data_spec.h: the datasets a --data flag names.
//
//   fashion-mnist          Fashion-MNIST from Debian's dataset-fashion-mnist
//                          (/usr/share/datasets/fashion-mnist): train 60,000, test 10,000
//   fashion-mnist:DIR      the same four IDX files (gzip-compressed or not) in DIR
//   mnist:DIR              MNIST's four IDX files in DIR (no Debian package ships MNIST)
//   folder:PATH            JPEG images in PATH/train/<class>/ and PATH/val/<class>/,
//                          classes in sorted folder-name order
//   synthetic[:N]          N seeded random images (default 1,024) and 256 for the test
//                          set, labels n % classes: no files, for trying a network out
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "data/dataset.h"
#include "tensor/shape.h"

namespace glassbox {

struct DataOptions {
  // An image of a folder that cannot be read or decoded (data/dataset.h):
  // skipped and counted, or the run stops.
  OnBadSample on_bad_sample = OnBadSample::kSkip;
};

struct DataSplits {
  std::string spec;                      // as given
  std::shared_ptr<const Dataset> train;  // prepared with SampleMode::kTraining by the trainer
  std::shared_ptr<const Dataset> test;   // the held-out set: Fashion-MNIST's t10k, a folder's val/
};

// Opens the train and test sets of `spec` for a network whose input sample is
// `sample` (C, H, W) with `classes` outputs. Folders are decoded to that
// shape; IDX sets are 1x28x28 and must match it. Throws ConfigError for an
// unknown spec (naming the valid forms), a sample shape the data cannot give
// (naming both shapes), or more classes in the data than the network has
// outputs; DataError for files that are missing or malformed.
DataSplits open_data(std::string_view spec, const Shape& sample, int classes, const DataOptions& options = {});

// "skip" or "stop", as a user types it after `flag` (--on-bad-sample).
// Throws ConfigError naming the flag and both choices for anything else.
OnBadSample parse_on_bad_sample(std::string_view flag, std::string_view text);

}  // namespace glassbox
