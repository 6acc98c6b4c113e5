// tests/test_data_spec.cpp: the --data forms (data/data_spec.h) and the
// synthetic dataset (data/synthetic.h): what each opens, and each refusal.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "data/data_spec.h"
#include "data/idx_dataset.h"
#include "data/synthetic.h"
#include "graph/builder.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using testing::message_of;
using testing::TempDir;
using testing::write_file;

const Shape kMnistSample{1, 28, 28};

// The four IDX files of a tiny set in `folder`, gzip-compressed or not.
void write_idx_set(const std::string& folder, bool compressed) {
  auto put = [&](const std::string& name, const std::string& bytes) {
    write_file(folder + "/" + name + (compressed ? ".gz" : ""), compressed ? testing::gzip(bytes) : bytes);
  };
  put("train-images-idx3-ubyte", testing::idx_bytes(0x803, {3, 28, 28}, std::string(3 * 784, '\0')));
  put("train-labels-idx1-ubyte", testing::idx_labels({4, 5, 6}));
  put("t10k-images-idx3-ubyte", testing::idx_images(2));
  put("t10k-labels-idx1-ubyte", testing::idx_labels({0, 9}));
}

TEST(DataSpec, FashionMnistFromDebian) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed";
  }
  const DataSplits data = open_data("fashion-mnist", kMnistSample, 10);
  EXPECT_EQ(data.spec, "fashion-mnist");
  EXPECT_EQ(data.train->size(), 60000);
  EXPECT_EQ(data.test->size(), 10000);
  EXPECT_EQ(data.test->describe(),
            "Fashion-MNIST test: 10,000 images 1x28x28, 10 classes (/usr/share/datasets/fashion-mnist)");
}

TEST(DataSpec, IdxFoldersGzipOrNotWithEachSetsConstants) {
  TempDir dir;
  write_idx_set(dir / "fashion", false);
  write_idx_set(dir / "mnist", true);
  const DataSplits fashion = open_data("fashion-mnist:" + dir / "fashion", kMnistSample, 10);
  const DataSplits mnist = open_data("mnist:" + dir / "mnist", kMnistSample, 12);
  EXPECT_EQ(fashion.train->size(), 3);
  EXPECT_EQ(mnist.test->size(), 2);
  EXPECT_EQ(mnist.train->describe(), "MNIST train: 3 images 1x28x28, 10 classes (" + dir / "mnist" + ")");
  std::vector<float> pixels(784);
  std::mt19937_64 rng(1);
  EXPECT_EQ(fashion.train->load(1, pixels, SampleMode::kTraining, rng), 5);
  EXPECT_FLOAT_EQ(pixels[0], -kFashionMnistMean / kFashionMnistStd);
  EXPECT_EQ(mnist.train->load(2, pixels, SampleMode::kTraining, rng), 6);
  EXPECT_FLOAT_EQ(pixels[0], -kMnistMean / kMnistStd);
}

TEST(DataSpec, FolderOpensTrainAndValAtTheNetworksSample) {
  TempDir dir;
  testing::make_jpeg_folder(dir / "data/train", {.classes = {"a", "b"}, .per_class = 3});
  testing::make_jpeg_folder(dir / "data/val", {.classes = {"a", "b"}, .per_class = 1});
  const DataSplits data = open_data("folder:" + dir / "data", Shape{3, 24, 20}, 2);
  EXPECT_EQ(data.train->size(), 6);
  EXPECT_EQ(data.test->size(), 2);
  EXPECT_EQ(data.train->sample_shape(), (Shape{3, 24, 20}));
  EXPECT_EQ(data.test->describe(), "folder val: 2 images in 2 classes, prepared to 3x24x20 (" + dir / "data/val" + ")");
}

TEST(DataSpec, AFolderWithoutTrainOrValSaysWhatItMustHold) {
  TempDir dir;
  testing::make_jpeg_folder(dir / "data/val", {.classes = {"a", "b"}, .per_class = 1});
  EXPECT_EQ(message_of<DataError>([&] { open_data("folder:" + dir / "data", Shape{3, 24, 20}, 2); }),
            dir / "data/train: No such file or directory; folder:" + dir / "data must hold train/<class>/ and "
                                                                                 "val/<class>/ (both "
                                                             "are read: train/'s class folders name the labels, which "
                                                             "val/'s must match)");
  testing::make_jpeg_folder(dir / "other/train", {.classes = {"a", "b"}, .per_class = 1});
  EXPECT_TRUE(testing::contains(message_of<DataError>([&] { open_data("folder:" + dir / "other", Shape{3, 8, 8}, 2); }),
                                dir / "other/val: No such file or directory; "));
  write_file(dir / "other/val", "a file");
  EXPECT_TRUE(testing::contains(message_of<DataError>([&] { open_data("folder:" + dir / "other", Shape{3, 8, 8}, 2); }),
                                dir / "other/val: not a folder; "));
}

TEST(DataSpec, SyntheticSamplesDependOnlyOnSeedAndIndex) {
  const DataSplits a = open_data("synthetic", Shape{3, 8, 8}, 7);
  const DataSplits b = open_data("synthetic:100", Shape{3, 8, 8}, 7);
  EXPECT_EQ(a.train->size(), 1024);
  EXPECT_EQ(a.test->size(), 256);
  EXPECT_EQ(b.train->size(), 100);
  EXPECT_EQ(a.train->classes(), 7);
  EXPECT_EQ(a.train->describe(), "synthetic train: 1,024 random images 3x8x8, 7 classes (seed 1)");
  std::vector<float> x(192), y(192), z(192);
  std::mt19937_64 rng1(1), rng2(2);
  EXPECT_EQ(a.train->load(10, x, SampleMode::kTraining, rng1), 3);  // 10 % 7
  EXPECT_EQ(b.train->load(10, y, SampleMode::kEvaluation, rng2), 3);
  EXPECT_EQ(x, y) << "the same (seed, index), whatever the rng, the mode and the set's size";
  a.test->load(10, z, SampleMode::kTraining, rng1);
  EXPECT_NE(x, z) << "the test set has its own seed";
  a.train->load(11, z, SampleMode::kTraining, rng1);
  EXPECT_NE(x, z);
  double sum = 0.0;
  for (float v : x) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / 192, 0.0, 0.15);
}

// The benchmarks' one batch: float inputs from U(-1, 1), "labels" n % classes,
// any other int32 input (a language model's tokens) random ids below classes.
TEST(DataSpec, SyntheticBatchFillsEveryInputByItsType) {
  for (const char* label_input : {"labels", "tokens"}) {
    GraphBuilder g;
    const Value x = g.input("images", {64, 3});
    const Value ids = g.input(label_input, {64}, DType::kInt32);
    Graph graph = std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 5}), ids));
    Context ctx = Context::cpu();
    graph.compile(ctx);
    fill_synthetic_batch(ctx, graph, 5);
    const std::vector<int> got = to_vector<int>(ctx, graph.input(label_input));
    std::set<int> distinct(got.begin(), got.end());
    EXPECT_EQ(distinct, (std::set<int>{0, 1, 2, 3, 4})) << label_input << ": every id below 5 drawn, none outside";
    bool is_n_mod_5 = true;
    for (size_t n = 0; n < got.size(); ++n) is_n_mod_5 = is_n_mod_5 && got[n] == static_cast<int>(n % 5);
    EXPECT_EQ(is_n_mod_5, std::string(label_input) == "labels") << label_input;
    for (float v : to_vector<float>(ctx, graph.input("images"))) {
      EXPECT_GE(v, -1.0f);
      EXPECT_LT(v, 1.0f);
    }
    for (int classes : {0, -3}) {
      EXPECT_EQ(testing::message_of<ConfigError>([&] { fill_synthetic_batch(ctx, graph, classes); }),
                cat("fill_synthetic_batch: ", classes, " classes; labels need at least one"));
    }
  }
}

TEST(DataSpec, RefusalsNameWhatIsWrong) {
  TempDir dir;
  write_idx_set(dir / "idx", false);
  const struct {
    std::string spec;
    Shape sample;
    int classes;
    std::string message;
  } config_errors[] = {
      {"cifar", kMnistSample, 10,
       "unknown data 'cifar'; valid: fashion-mnist, fashion-mnist:DIR, mnist:DIR, folder:PATH, synthetic, synthetic:N"},
      {"mnist", kMnistSample, 10, "unknown data 'mnist'; valid: "},
      {"folder:", kMnistSample, 10, "unknown data 'folder:'; valid: "},
      {"fashion-mnist:" + dir / "idx", Shape{3, 224, 224}, 10,
       "fashion-mnist:" + dir / "idx" + " gives samples of (1, 28, 28); the network takes (3, 224, 224)"},
      {"mnist:" + dir / "idx", kMnistSample, 5, "mnist:" + dir / "idx" + " has 10 classes; the network has only 5 outputs"},
      {"synthetic:0", kMnistSample, 10, "synthetic:N must be an integer from 1 to 1099511627776, got '0'"},
      {"synthetic", kMnistSample, 0, "synthetic train: 1024 samples of 0 classes; a synthetic dataset needs at least "
                                     "one of each"},
  };
  for (const auto& c : config_errors) {
    EXPECT_TRUE(testing::contains(message_of<ConfigError>([&] { open_data(c.spec, c.sample, c.classes); }), c.message))
        << c.spec << ": " << message_of<ConfigError>([&] { open_data(c.spec, c.sample, c.classes); });
  }

  EXPECT_EQ(message_of<DataError>([&] { open_data("mnist:" + dir / "none", kMnistSample, 10); }),
            dir / "none: neither train-images-idx3-ubyte.gz nor train-images-idx3-ubyte is there");

  testing::make_jpeg_folder(dir / "f/train", {.classes = {"a", "b", "c"}, .per_class = 1});
  testing::make_jpeg_folder(dir / "f/val", {.classes = {"a", "b", "c"}, .per_class = 1});
  EXPECT_EQ(message_of<ConfigError>([&] { open_data("folder:" + dir / "f", Shape{3, 16, 16}, 2); }),
            "folder:" + dir / "f has 3 classes; the network has only 2 outputs");
  testing::make_jpeg_folder(dir / "g/train", {.classes = {"a", "dog"}, .per_class = 1});
  testing::make_jpeg_folder(dir / "g/val", {.classes = {"a", "eel"}, .per_class = 1});
  EXPECT_EQ(message_of<DataError>([&] { open_data("folder:" + dir / "g", Shape{3, 16, 16}, 10); }),
            dir / "g: train/ (2 classes) and val/ (2) must have the same class folders; class 1 is 'dog' in "
                  "train/ and 'eel' in val/");
  std::filesystem::remove_all(dir / "g/val");
  testing::make_jpeg_folder(dir / "g/val", {.classes = {"a"}, .per_class = 1});
  EXPECT_EQ(message_of<DataError>([&] { open_data("folder:" + dir / "g", Shape{3, 16, 16}, 10); }),
            dir / "g: train/ (2 classes) and val/ (1) must have the same class folders; 'dog' is in train/ only");
  testing::make_jpeg_folder(dir / "g/val", {.classes = {"dog", "zoo"}, .per_class = 1});
  EXPECT_EQ(message_of<DataError>([&] { open_data("folder:" + dir / "g", Shape{3, 16, 16}, 10); }),
            dir / "g: train/ (2 classes) and val/ (3) must have the same class folders; 'zoo' is in val/ only");
}

}  // namespace
}  // namespace glassbox
