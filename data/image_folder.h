// data/image_folder.h: a folder of JPEG images, one subfolder per class, as
// torchvision's ImageFolder reads it:
//
//   ROOT/<class>/*.jpg, *.jpeg (any case)     classes: the subfolder names in sorted
//                                             (byte) order, labels 0, 1, ...; files
//                                             in sorted order within each class
//
// Files with other extensions and deeper folders are ignored. Preparation of
// a sample (C, H, W), C = 1 (grey) or 3 (RGB), as torchvision's ImageNet
// recipe with S = round(max(H, W) * 8 / 7) (256 for 224):
//   decode, DCT-scaled to the smallest size whose shorter side is >= S (data/jpeg.h)
//   resize so that the shorter side is S (the longer: floor(S * long / short), as torchvision)
//   kTraining:   a random H x W window, then a left-right flip with probability 1/2
//   kEvaluation: the central H x W window (offsets rounded half to even, as torchvision)
//   normalise per channel: (v/255 - mean[c]) / stddev[c]
// The last three are one pass (data/resize.h). Files are read at load(); a
// file that cannot be read or decoded is a SampleError naming it, or with
// OnBadSample::kStop a DataError naming it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace glassbox {

struct ImageFolderOptions {
  Shape sample;  // (C, H, W) that load() writes, C = 1 or 3
  // Per channel; empty: ImageNet's for 3 channels, Fashion-MNIST's for 1.
  std::vector<float> mean;
  std::vector<float> stddev;
  std::string name = "folder";  // for describe(): "folder train"
  OnBadSample on_bad_sample = OnBadSample::kSkip;  // an unreadable file: SampleError (skipped) or DataError (stop)
};

inline const std::vector<float> kImageNetMean = {0.485f, 0.456f, 0.406f};
inline const std::vector<float> kImageNetStd = {0.229f, 0.224f, 0.225f};

// The side the image is resized to before the crop: round(max(H, W) * 8 / 7).
int resize_side_for(int height, int width);
// ImageNet's constants for 3 channels, Fashion-MNIST's for 1.
const std::vector<float>& default_mean(int channels);
const std::vector<float>& default_stddev(int channels);

// What load() does with one file's bytes: decode, resize, window, flip,
// normalise into `pixels` (C*H*W floats). `options.sample` must be valid (the
// constructor's checks); an empty mean or stddev takes the default. Throws
// SampleError naming `file` for bytes that are not a decodable JPEG.
void prepare_jpeg_sample(std::span<const uint8_t> bytes, const std::string& file, const ImageFolderOptions& options,
                         SampleMode mode, std::mt19937_64& rng, std::span<float> pixels);

class ImageFolder final : public Dataset {
 public:
  // Lists the classes and files (nothing is decoded yet). Throws DataError
  // for a missing folder, one without class folders, or a class folder
  // without JPEG files (naming it); ConfigError for a sample shape that is
  // not (1 or 3, H, W) or a mean/stddev of another length.
  ImageFolder(std::string root, ImageFolderOptions options);

  std::string describe() const override;
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  int classes() const override { return static_cast<int>(class_names_.size()); }
  Shape sample_shape() const override { return options_.sample; }
  int load(int64_t index, std::span<float> pixels, SampleMode mode, std::mt19937_64& rng) const override;

  const std::string& root() const { return root_; }
  const std::vector<std::string>& class_names() const { return class_names_; }
  std::string path(int64_t index) const;  // ROOT/<class>/<file>
  // Reads file `index` whole into `bytes`, as load() does (a regular file
  // of at most 256 MiB; a pipe or device is refused, not waited on). False,
  // with the reason, where it cannot.
  bool read_bytes(int64_t index, std::string& bytes, std::string& reason) const;

 private:
  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> class_names_;
  // Every sample's file name, packed: names_[name_start_[i], name_start_[i + 1]).
  std::string names_;
  std::vector<int64_t> name_start_;
  std::vector<int32_t> labels_;
};

}  // namespace glassbox
