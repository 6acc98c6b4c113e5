// data/idx_dataset.h: MNIST and Fashion-MNIST, read from their IDX files
// (gzip-compressed or not) and held in memory as the original bytes.
//
// IDX (LeCun et al.): a big-endian header, then the data in row-major order.
//   images: 00 00 08 03, count, rows, columns (uint32 each), count*rows*columns bytes
//   labels: 00 00 08 01, count,                              count bytes, each 0..9
// load() writes one image as (pixel/255 - mean) / std, one channel, no
// augmentation (both modes give the same values).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace glassbox {

// The normalisation constants of the two sets: the mean and standard
// deviation of all training pixels, scaled to [0, 1].
inline constexpr float kFashionMnistMean = 0.2860f, kFashionMnistStd = 0.3530f;
inline constexpr float kMnistMean = 0.1307f, kMnistStd = 0.3081f;
inline constexpr int kIdxClasses = 10;

// The most bytes an IDX file may hold, compressed or not: 4 GiB, far above
// the largest set in the format (EMNIST's 550 MB of images), for the set is
// held in memory whole.
inline constexpr uint64_t kMaxIdxBytes = uint64_t{4} << 30;

// The whole contents of `path`, gunzipped when it starts with gzip's magic
// bytes (1f 8b). Throws DataError naming the file: missing or unreadable, not
// a regular file, more than kMaxIdxBytes, a corrupt or truncated gzip stream,
// decompressed data past their limit (gunzip).
std::string read_maybe_gzip(const std::string& path);
// `bytes` gunzipped (one or more gzip members). `file` names them in errors.
// A gzip file can expand a thousandfold, so the output is held to what the
// data claim: once the IDX header at its start is out, to the size that
// header gives (4 + 4 * rank bytes, then the product of its dimensions); to
// 4 KiB where the output starts with no IDX header; and to `max_bytes` in
// any case. Output past that is a DataError naming the
// file, the limit and whose limit it is, raised as soon as inflating passes
// it: memory stays within the limit, however far the stream would expand.
std::string gunzip(std::string_view bytes, const std::string& file, uint64_t max_bytes = kMaxIdxBytes);

struct IdxImages {
  int64_t count = 0;
  int rows = 0, columns = 0;
  std::vector<uint8_t> pixels;  // (count, rows, columns)
};

// Parses decompressed IDX data; `file` names it in errors. Throws DataError
// naming the file, the byte offset and what was expected there: a wrong
// magic, element type or rank, sizes other than rows x columns, no images,
// data shorter or longer than the header says, a label >= 10.
IdxImages parse_idx_images(std::string_view bytes, const std::string& file, int rows = 28, int columns = 28);
std::vector<uint8_t> parse_idx_labels(std::string_view bytes, const std::string& file);

struct IdxDatasetOptions {
  std::string name;          // for describe(): "Fashion-MNIST train"
  std::string images_path;   // ...-images-idx3-ubyte[.gz]
  std::string labels_path;   // ...-labels-idx1-ubyte[.gz]
  float mean = kFashionMnistMean;
  float stddev = kFashionMnistStd;
};

class IdxDataset final : public Dataset {
 public:
  // Reads and checks both files (DataError, as above, and when the two
  // counts differ).
  explicit IdxDataset(IdxDatasetOptions options);

  std::string describe() const override;
  int64_t size() const override { return images_.count; }
  int classes() const override { return kIdxClasses; }
  Shape sample_shape() const override { return Shape{1, images_.rows, images_.columns}; }
  int load(int64_t index, std::span<float> pixels, SampleMode mode, std::mt19937_64& rng) const override;

  // The stored bytes of image `index` (rows x columns) and its label, for
  // tools that write the images out again (glassbox make-folder).
  std::span<const uint8_t> image(int64_t index) const;
  int label(int64_t index) const;

 private:
  IdxDatasetOptions options_;
  IdxImages images_;
  std::vector<uint8_t> labels_;
  float normalised_[256];  // (v/255 - mean)/stddev for every byte v
};

}  // namespace glassbox
