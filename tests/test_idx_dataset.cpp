// tests/test_idx_dataset.cpp: the IDX reader (data/idx_dataset.h) on the real
// Fashion-MNIST that Debian installs, and on small files written here, one
// per way an IDX or gzip file can be wrong, each message checked; a gzip
// file that expands past what its header claims is refused as it inflates.
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "data/idx_dataset.h"
#include "data/shared.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::message_of;
using testing::TempDir;
using testing::write_file;

const std::string kDebianFolder = "/usr/share/datasets/fashion-mnist";

TEST(IdxDataset, ReadsDebiansFashionMnist) {
  if (!std::filesystem::exists(kDebianFolder + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed (" << kDebianFolder << ")";
  }
  const IdxDataset train({.name = "Fashion-MNIST train",
                          .images_path = kDebianFolder + "/train-images-idx3-ubyte.gz",
                          .labels_path = kDebianFolder + "/train-labels-idx1-ubyte.gz"});
  const IdxDataset test({.name = "Fashion-MNIST test",
                         .images_path = kDebianFolder + "/t10k-images-idx3-ubyte.gz",
                         .labels_path = kDebianFolder + "/t10k-labels-idx1-ubyte.gz"});
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(train.classes(), 10);
  EXPECT_EQ(train.sample_shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(train.describe(),
            "Fashion-MNIST train: 60,000 images 1x28x28, 10 classes (/usr/share/datasets/fashion-mnist)");
  EXPECT_EQ(train.label(0), 9);  // the first training image is an ankle boot
  EXPECT_EQ(test.label(0), 9);

  // The constants are the training set's own mean and standard deviation.
  double sum = 0.0, squares = 0.0;
  for (int64_t i = 0; i < train.size(); ++i) {
    for (uint8_t v : train.image(i)) {
      sum += v / 255.0;
      squares += (v / 255.0) * (v / 255.0);
    }
  }
  const double n = 60000.0 * 784.0, mean = sum / n;
  EXPECT_NEAR(mean, kFashionMnistMean, 5e-4);
  EXPECT_NEAR(std::sqrt(squares / n - mean * mean), kFashionMnistStd, 5e-4);

  std::vector<float> pixels(784);
  std::mt19937_64 rng(1);
  float lowest = 1e9f, highest = -1e9f;
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(train.load(i, pixels, SampleMode::kTraining, rng), train.label(i));
    for (float p : pixels) {
      lowest = std::min(lowest, p);
      highest = std::max(highest, p);
    }
  }
  EXPECT_NEAR(lowest, (0.0f - kFashionMnistMean) / kFashionMnistStd, 1e-5);   // -0.810
  EXPECT_NEAR(highest, (1.0f - kFashionMnistMean) / kFashionMnistStd, 1e-5);  // 2.023
}

TEST(IdxDataset, LoadNormalisesAndGzipOrNotReadsTheSame) {
  TempDir dir;
  std::string pixels(2 * 28 * 28, '\0');
  pixels[0] = static_cast<char>(255);
  pixels[784 + 5] = static_cast<char>(51);
  const std::string images = testing::idx_bytes(0x803, {2, 28, 28}, pixels);
  write_file(dir / "images", images);
  write_file(dir / "labels", testing::idx_labels({7, 3}));
  write_file(dir / "images.gz", testing::gzip(images));
  // Two gzip members in one file are one valid gzip file.
  const std::string labels = testing::idx_labels({7, 3});
  write_file(dir / "labels.gz", testing::gzip(labels.substr(0, 5)) + testing::gzip(labels.substr(5)));
  const IdxDataset plain({.name = "MNIST", .images_path = dir / "images", .labels_path = dir / "labels",
                          .mean = kMnistMean, .stddev = kMnistStd});
  const IdxDataset zipped({.name = "MNIST", .images_path = dir / "images.gz", .labels_path = dir / "labels.gz",
                           .mean = kMnistMean, .stddev = kMnistStd});
  std::vector<float> a(784), b(784);
  std::mt19937_64 rng(3);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(plain.load(i, a, SampleMode::kEvaluation, rng), i == 0 ? 7 : 3);
    EXPECT_EQ(zipped.load(i, b, SampleMode::kTraining, rng), i == 0 ? 7 : 3);
    EXPECT_EQ(a, b);
  }
  plain.load(0, a, SampleMode::kEvaluation, rng);
  EXPECT_FLOAT_EQ(a[0], (1.0f - kMnistMean) / kMnistStd);
  EXPECT_FLOAT_EQ(a[1], (0.0f - kMnistMean) / kMnistStd);
  plain.load(1, a, SampleMode::kEvaluation, rng);
  EXPECT_FLOAT_EQ(a[5], (0.2f - kMnistMean) / kMnistStd);
}

// Each case: the images and labels files, and what the DataError must say.
TEST(IdxDataset, EveryMalformedFileIsADataErrorNamingFileOffsetAndExpectation) {
  TempDir dir;
  const std::string good_images = testing::idx_images(3);
  const std::string good_labels = testing::idx_labels({1, 2, 3});
  std::string zipped = testing::gzip(good_images);
  std::string corrupt = zipped;
  corrupt[corrupt.size() / 2] = static_cast<char>(corrupt[corrupt.size() / 2] ^ 0x55);
  const struct {
    std::string name;
    std::string images;
    std::string labels;
    std::string message;  // after the file name
  } cases[] = {
      {"short_header", good_images.substr(0, 6), good_labels,
       "images: truncated at byte 6 of the decompressed data: an IDX header of 3 dimensions (images, rows, "
       "columns) needs 16 bytes"},
      {"not_idx", "\x89PNG" + good_images.substr(4), good_labels,
       "images: byte 0: not an IDX file: expected the magic 00 00 08 03 (images, rows, columns), found 89 50 4e 47"},
      {"float_type", testing::idx_bytes(0x0d03, {3, 28, 28}, good_images.substr(16)), good_labels,
       "images: byte 2: IDX element type 0d, expected 08 (unsigned bytes)"},
      {"labels_as_images", good_labels, good_labels,
       "images: byte 3: 1 dimension, expected 3 (images, rows, columns): is it a labels file?"},
      {"images_as_labels", good_images, good_images,
       "labels: byte 3: 3 dimensions, expected 1 (labels): is it an images file?"},
      {"no_images", testing::idx_bytes(0x803, {0, 28, 28}, ""), good_labels,
       "images: byte 4: 0 images; expected at least one"},
      {"no_labels", good_images, testing::idx_labels({}), "labels: byte 4: 0 labels; expected at least one"},
      {"other_size", testing::idx_images(3, 32, 32), good_labels, "images: byte 8: images of 32x32, expected 28x28"},
      {"truncated", good_images.substr(0, 1584), good_labels,
       "images: truncated at byte 1,584 of the decompressed data: 3 images of 28x28 need 2,368 bytes"},
      {"too_long", good_images + "extra", good_labels,
       "images: byte 2,368: 5 bytes past the end of 3 images of 28x28; expected the data to end there"},
      {"labels_truncated", good_images, good_labels.substr(0, 10),
       "labels: truncated at byte 10 of the decompressed data: 3 labels need 11 bytes"},
      {"label_12", good_images, testing::idx_labels({1, 2, 12}),
       "labels: byte 10: label 12 (of image 2); expected 0 to 9"},
      {"gzip_corrupt", corrupt, good_labels, "images: corrupt gzip data near byte "},
      {"gzip_truncated", zipped.substr(0, zipped.size() - 9), good_labels,
       cat("images: truncated gzip stream: it ends at byte ", grouped(static_cast<int64_t>(zipped.size()) - 9), " of the gzip file, after ")},
      {"gzip_trailing", zipped + "junk", good_labels,
       cat("images: byte ", grouped(static_cast<int64_t>(zipped.size())), " of the gzip file: 4 bytes after the end of the gzip stream, "
                                           "expected the file to end or another member (1f 8b)")},
  };
  for (const auto& c : cases) {
    const std::string images = dir / (c.name + "-images"), labels = dir / (c.name + "-labels");
    write_file(images, c.images);
    write_file(labels, c.labels);
    const std::string message = message_of<DataError>(
        [&] { IdxDataset({.name = "test", .images_path = images, .labels_path = labels}); });
    EXPECT_TRUE(contains(message, dir / (c.name + "-") + c.message)) << c.name << ": " << message;
  }
  // zlib's own words follow the offset.
  write_file(dir / "corrupt", corrupt);
  EXPECT_TRUE(contains(message_of<DataError>([&] { read_maybe_gzip(dir / "corrupt"); }), "(zlib: "));
}

// The peak resident memory of this process so far, in KiB (Linux's ru_maxrss).
long peak_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A gzip bomb: a valid header claiming 10 images of 28x28 (7,856 bytes), then
// 64 MiB of zeros, in 64 gzip members of 1 MiB each (one file, as gzip -c a b
// writes it): 64 KiB on disk. Inflating stops at the size the header gives.
TEST(IdxDataset, AGzipBombIsRefusedAtTheSizeItsHeaderGivesNamingTheFile) {
  TempDir dir;
  const std::string zeros(size_t{1} << 20, '\0');
  std::string bomb = testing::gzip(testing::idx_bytes(0x803, {10, 28, 28}, zeros));
  const std::string member = testing::gzip(zeros);
  for (int i = 1; i < 64; ++i) bomb += member;
  ASSERT_LT(bomb.size(), size_t{1} << 17);
  write_file(dir / "images.gz", bomb);
  write_file(dir / "labels", testing::idx_labels(std::vector<uint8_t>(10, 1)));
  const long before = peak_kib();
  EXPECT_EQ(message_of<DataError>(
                [&] { IdxDataset({.name = "t", .images_path = dir / "images.gz", .labels_path = dir / "labels"}); }),
            dir / "images.gz: byte 7,856 of the decompressed data: the data go on past the end of 10 images of 28x28, "
                  "where the IDX header says they end; decompressing stops there, as a gzip file can expand a "
                  "thousandfold");
  // All 64 MiB inflated would raise the peak by 64 MiB or more (the peak
  // before may hide less, never more).
  EXPECT_LT(peak_kib() - before, 16 * 1024) << "KiB more at the peak";

  // A labels file the same way: its header gives 8 + count bytes.
  EXPECT_EQ(message_of<DataError>(
                [] { gunzip(testing::gzip(testing::idx_labels({1, 2, 3}) + std::string(100, '\1')), "l.gz"); }),
            "l.gz: byte 11 of the decompressed data: the data go on past the end of 3 labels, where the IDX header "
            "says they end; decompressing stops there, as a gzip file can expand a thousandfold");
  // Exactly what the header gives is read.
  EXPECT_EQ(gunzip(testing::gzip(testing::idx_labels({1, 2, 3})), "l.gz"), testing::idx_labels({1, 2, 3}));
}

// Without a header that gives a smaller size, the limit is max_bytes
// (kMaxIdxBytes, 4 GiB, by default); data that start with no IDX header stop
// at 4 KiB (a gzip of zeros expands a thousandfold), and shorter ones reach
// the parser whole, which names the byte.
TEST(IdxDataset, GunzipStopsAtItsLimitWhereNoHeaderGivesLess) {
  const std::string not_idx = testing::gzip(std::string(10000, 'x'));
  EXPECT_EQ(message_of<DataError>([&] { gunzip(not_idx, "x.gz"); }),
            "x.gz: byte 0 of the decompressed data: not an IDX file: it starts 78 78 78 78, where an IDX header "
            "starts 00 00 08 and a rank; decompressing stops after 4,096 bytes");
  const std::string zeros = testing::gzip(std::string(size_t{1} << 20, '\0'));
  EXPECT_EQ(message_of<DataError>([&] { gunzip(zeros, "zeros.gz"); }),
            "zeros.gz: byte 2: IDX element type 00, expected 08 (unsigned bytes); decompressing stops after 4,096 "
            "bytes");
  EXPECT_EQ(gunzip(testing::gzip(std::string(100, 'x')), "x.gz"), std::string(100, 'x'));
  // An IDX header of another element type (0d: floats) is named as the parser names it.
  const std::string floats = testing::gzip(testing::idx_bytes(0xd03, {1000, 28, 28}, std::string(8000, '\0')));
  EXPECT_EQ(message_of<DataError>([&] { gunzip(floats, "f.gz"); }),
            "f.gz: byte 2: IDX element type 0d, expected 08 (unsigned bytes); decompressing stops after 4,096 bytes");
  EXPECT_EQ(message_of<DataError>([&] { gunzip(testing::gzip(std::string(3000, 'x')), "x.gz", 2048); }),
            "x.gz: byte 0 of the decompressed data: not an IDX file: it starts 78 78 78 78, where an IDX header "
            "starts 00 00 08 and a rank; decompressing stops after 2,048 bytes");
  // A header that claims more than the limit leaves the limit as it is.
  const std::string claims_more = testing::gzip(testing::idx_bytes(0x803, {1000, 28, 28}, std::string(5000, '\0')));
  EXPECT_EQ(message_of<DataError>([&] { gunzip(claims_more, "big.gz", 4096); }),
            "big.gz: the decompressed data go on past 4,096 bytes, the limit for an IDX file (the data set is held "
            "in memory whole); decompressing stops there");
}

TEST(IdxDataset, CountsThatDifferAndMissingFilesNameTheFiles) {
  TempDir dir;
  write_file(dir / "images", testing::idx_images(3));
  write_file(dir / "labels", testing::idx_labels({1, 2}));
  EXPECT_EQ(message_of<DataError>(
                [&] { IdxDataset({.name = "t", .images_path = dir / "images", .labels_path = dir / "labels"}); }),
            dir / "images has 3 images but " + dir / "labels has 2 labels");
  EXPECT_EQ(message_of<DataError>(
                [&] { IdxDataset({.name = "t", .images_path = dir / "missing", .labels_path = dir / "labels"}); }),
            dir / "missing: cannot read: No such file or directory");
}

TEST(IdxDataset, LoadChecksItsIndexAndBuffer) {
  TempDir dir;
  write_file(dir / "images", testing::idx_images(3));
  write_file(dir / "labels", testing::idx_labels({1, 2, 3}));
  const IdxDataset data({.name = "small", .images_path = dir / "images", .labels_path = dir / "labels"});
  std::vector<float> pixels(784), wrong(10);
  std::mt19937_64 rng(1);
  const std::string name = "small: 3 images 1x28x28, 10 classes (" + dir.path() + ")";
  EXPECT_EQ(message_of<Error>([&] { data.load(3, pixels, SampleMode::kTraining, rng); }),
            name + ": sample 3 is out of range [0, 3)");
  EXPECT_EQ(message_of<Error>([&] { data.label(-1); }), name + ": sample -1 is out of range [0, 3)");
  EXPECT_EQ(message_of<ShapeError>([&] { data.load(0, wrong, SampleMode::kTraining, rng); }),
            name + ": load() was given 10 floats; one sample (1, 28, 28) has 784");
}

}  // namespace
}  // namespace glassbox
