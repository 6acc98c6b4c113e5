// tests/test_image_folder.cpp: folders of JPEG images (data/image_folder.h),
// made here with the library's encoder: class and file order, labels, the
// preparation geometry in both modes (recomputed from the documented recipe),
// determinism, and every error.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <thread>

#include "data/data_spec.h"
#include "data/image_folder.h"
#include "data/jpeg.h"
#include "data/resize.h"
#include "data/shared.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::message_of;
using testing::TempDir;
using testing::write_file;

// 60x45 images; for a 3x32x32 sample S = round(32 * 8 / 7) = 37, the JPEG is
// decoded at 7/8 (53x40: 6/8 would give a shorter side of 34 < 37), resized
// to 49x37 (floor(37 * 53 / 40)), and the central window is at (8, 2):
// (49 - 32) / 2 = 8.5 rounds half to even.
constexpr int kWidth = 60, kHeight = 45;

struct Folder {
  TempDir dir;
  std::string root = dir / "train";
  Folder() {
    testing::make_jpeg_folder(root, {.classes = {"dog", "cat", "Zebra"}, .per_class = 3, .width = kWidth,
                                     .height = kHeight});
    write_file(root + "/cat/notes.txt", "not an image");            // ignored: another extension
    write_file(root + "/cat/deeper/9.jpg", read(root + "/cat/0.jpg"));  // ignored: a deeper folder
    write_file(root + "/dog/UPPER.JPEG", read(root + "/dog/1.jpg"));    // taken: any case
  }
  static std::string read(const std::string& path) { return testing::read_whole_file(path); }
};

// What load() must write for `file` with the window at (x, y), recomputed.
std::vector<float> expected_sample(const std::string& file, int x, int y, bool flip) {
  const std::string bytes = testing::read_whole_file(file);
  Image image;
  decode_jpeg({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, file, {.channels = 3, .min_shorter_side = 37},
              image);
  EXPECT_EQ(image.width, 53);
  EXPECT_EQ(image.height, 40);
  std::vector<float> out(3 * 32 * 32);
  resize_crop_normalise(image, {.resized_width = 49, .resized_height = 37, .crop_x = x, .crop_y = y, .crop_width = 32,
                                .crop_height = 32, .flip = flip, .mean = {0.485f, 0.456f, 0.406f},
                                .stddev = {0.229f, 0.224f, 0.225f}},
                        out);
  return out;
}

TEST(ImageFolder, ClassesAreSortedFolderNamesAndFilesSortedWithin) {
  Folder f;
  const ImageFolder data(f.root, {.sample = Shape{3, 32, 32}, .name = "folder train"});
  EXPECT_EQ(data.class_names(), (std::vector<std::string>{"Zebra", "cat", "dog"}));  // byte order: capitals first
  EXPECT_EQ(data.classes(), 3);
  EXPECT_EQ(data.size(), 10);
  EXPECT_EQ(data.sample_shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(data.describe(), "folder train: 10 images in 3 classes, prepared to 3x32x32 (" + f.root + ")");
  EXPECT_EQ(data.path(0), f.root + "/Zebra/0.jpg");
  EXPECT_EQ(data.path(5), f.root + "/cat/2.jpg");
  EXPECT_EQ(data.path(9), f.root + "/dog/UPPER.JPEG");
  std::vector<float> pixels(3 * 32 * 32);
  std::mt19937_64 rng(1);
  const int labels[] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 2};
  for (int64_t i = 0; i < data.size(); ++i) EXPECT_EQ(data.load(i, pixels, SampleMode::kEvaluation, rng), labels[i]);
}

// A name is an image's where it ends in .jpg or .jpeg, as torchvision's
// ImageFolder tests it: a name that is only ".jpg" too.
TEST(ImageFolder, ANameThatIsOnlyTheExtensionIsAnImage) {
  testing::TempDir dir;
  testing::make_jpeg_folder(dir / "data", {.classes = {"a", "b"}, .per_class = 1});
  const std::string image = testing::read_whole_file(dir / "data/a/0.jpg");
  write_file(dir / "data/a/.jpg", image);
  write_file(dir / "data/a/.JPEG", image);
  write_file(dir / "data/a/jpg", image);  // no dot: not an image's name
  const ImageFolder data(dir / "data", {.sample = Shape{3, 32, 32}, .name = "folder train"});
  ASSERT_EQ(data.size(), 4);
  EXPECT_EQ(data.path(0), dir / "data/a/.JPEG");
  EXPECT_EQ(data.path(1), dir / "data/a/.jpg");
  EXPECT_EQ(data.path(2), dir / "data/a/0.jpg");
}

TEST(ImageFolder, EvaluationTakesTheCentralWindowWhateverTheRng) {
  Folder f;
  const ImageFolder data(f.root, {.sample = Shape{3, 32, 32}});
  std::vector<float> a(3 * 32 * 32), b(a.size());
  std::mt19937_64 rng1(1), rng2(99);
  data.load(4, a, SampleMode::kEvaluation, rng1);
  data.load(4, b, SampleMode::kEvaluation, rng2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, expected_sample(data.path(4), 8, 2, false));
}

// The resized size comes from the stored image's aspect ratio, not the
// DCT-scaled one: a 123x77 JPEG for 3x32x32 (S = 37) is decoded at 4/8 as
// 62x39, whose ratio would give floor(37 * 62 / 39) = 58; torchvision's
// Resize(37) on the full image gives floor(37 * 123 / 77) = 59. The central
// window is then at (14, 2): 13.5 and 2.5 round half to even.
TEST(ImageFolder, TheResizedSizeKeepsTheStoredImagesAspectRatio) {
  Image source{.width = 123, .height = 77, .channels = 3};
  source.pixels.resize(123 * 77 * 3);
  for (size_t i = 0; i < source.pixels.size(); ++i) source.pixels[i] = static_cast<uint8_t>((i * 37) % 251);
  const std::string bytes = encode_jpeg(source);
  const std::span<const uint8_t> span{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  Image scaled;
  decode_jpeg(span, "photo.jpg", {.channels = 3, .min_shorter_side = 37}, scaled);
  ASSERT_EQ(scaled.width, 62);
  ASSERT_EQ(scaled.height, 39);
  EXPECT_EQ(scaled.stored_width, 123);
  EXPECT_EQ(scaled.stored_height, 77);
  std::vector<float> expected(3 * 32 * 32), actual(expected.size());
  resize_crop_normalise(scaled, {.resized_width = 59, .resized_height = 37, .crop_x = 14, .crop_y = 2, .crop_width = 32,
                                 .crop_height = 32, .mean = {0.485f, 0.456f, 0.406f},
                                 .stddev = {0.229f, 0.224f, 0.225f}},
                        expected);
  std::mt19937_64 rng(1);
  prepare_jpeg_sample(span, "photo.jpg", {.sample = Shape{3, 32, 32}}, SampleMode::kEvaluation, rng, actual);
  EXPECT_EQ(actual, expected);
}

TEST(ImageFolder, TrainingCropsAndFlipsFromTheRngOnly) {
  Folder f;
  const ImageFolder data(f.root, {.sample = Shape{3, 32, 32}});
  std::vector<float> a(3 * 32 * 32), b(a.size());
  std::set<std::pair<int, int>> corners;
  int flips = 0;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    std::mt19937_64 rng(seed), again(seed), draws(seed);
    data.load(2, a, SampleMode::kTraining, rng);
    data.load(2, b, SampleMode::kTraining, again);
    ASSERT_EQ(a, b) << "seed " << seed << ": the same rng state must give the same sample";
    // The documented draws: x in [0, 49 - 32], then y in [0, 37 - 32], then the flip.
    const int x = static_cast<int>(draw_below(draws, 18)), y = static_cast<int>(draw_below(draws, 6));
    const bool flip = (draws() >> 63) != 0;
    ASSERT_EQ(a, expected_sample(data.path(2), x, y, flip)) << "seed " << seed;
    corners.insert({x, y});
    flips += flip;
  }
  EXPECT_GE(corners.size(), 10u) << "random windows";
  EXPECT_GT(flips, 4);
  EXPECT_LT(flips, 28);
}

TEST(ImageFolder, GreySamplesAndTheirDefaultNormalisation) {
  Folder f;
  const ImageFolder grey(f.root, {.sample = Shape{1, 28, 28}});
  const ImageFolder custom(f.root, {.sample = Shape{1, 28, 28}, .mean = {0.5f}, .stddev = {0.25f}});
  std::vector<float> a(28 * 28), b(28 * 28);
  std::mt19937_64 rng(1);
  grey.load(0, a, SampleMode::kEvaluation, rng);
  custom.load(0, b, SampleMode::kEvaluation, rng);
  for (size_t i = 0; i < a.size(); ++i) {
    const float value = a[i] * 0.3530f + 0.2860f;  // Fashion-MNIST's constants by default
    ASSERT_NEAR(b[i], (value - 0.5f) / 0.25f, 1e-4);
    ASSERT_GE(value, -1e-5f);
    ASSERT_LE(value, 1.0f + 1e-5f);
  }
}

TEST(ImageFolder, LoadsOnSeveralThreadsGiveTheSameSamples) {
  Folder f;
  const ImageFolder data(f.root, {.sample = Shape{3, 32, 32}});
  const size_t floats = 3 * 32 * 32;
  std::vector<float> serial(static_cast<size_t>(data.size()) * floats), parallel(serial.size());
  std::mt19937_64 rng(1);
  for (int64_t i = 0; i < data.size(); ++i) {
    data.load(i, std::span<float>(serial).subspan(static_cast<size_t>(i) * floats, floats), SampleMode::kEvaluation, rng);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 own(static_cast<uint64_t>(t));
      for (int64_t i = t; i < data.size(); i += 3) {
        data.load(i, std::span<float>(parallel).subspan(static_cast<size_t>(i) * floats, floats),
                  SampleMode::kEvaluation, own);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(serial, parallel);
}

TEST(ImageFolder, FolderErrorsNameTheFolder) {
  TempDir dir;
  EXPECT_EQ(message_of<DataError>([&] { ImageFolder(dir / "nope", {.sample = Shape{3, 32, 32}}); }),
            dir / "nope: cannot list the folder: No such file or directory");
  std::filesystem::create_directories(dir / "empty");
  EXPECT_EQ(message_of<DataError>([&] { ImageFolder(dir / "empty", {.sample = Shape{3, 32, 32}}); }),
            dir / "empty: no class folders: expected " + dir / "empty/<class>/*.jpg, one folder per class");
  testing::make_jpeg_folder(dir / "some", {.classes = {"a"}, .per_class = 1});
  write_file(dir / "some/b/readme.txt", "no images here");
  EXPECT_EQ(message_of<DataError>([&] { ImageFolder(dir / "some", {.sample = Shape{3, 32, 32}}); }),
            dir / "some/b: class folder 'b' has no .jpg or .jpeg files");
  EXPECT_EQ(message_of<ConfigError>([&] { ImageFolder(dir / "some", {.sample = Shape{2, 32, 32}}); }),
            "image folder " + dir / "some: a sample must be (1 or 3, H, W) with H, W up to 65,500; got (2, 32, 32)");
  EXPECT_EQ(message_of<ConfigError>([&] { ImageFolder(dir / "some", {.sample = Shape{3, 32, 32}, .mean = {0.5f}}); }),
            "image folder " + dir / "some: 1 means and 3 standard deviations for 3 channels; give one of each per channel");
}

TEST(ImageFolder, UnreadableFilesAreSampleErrorsFromLoad) {
  TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a"}, .per_class = 4, .width = 200, .height = 150});
  const std::string good = testing::read_whole_file(dir / "a/0.jpg");
  write_file(dir / "a/1.jpg", good.substr(0, good.size() * 3 / 4));  // cut short
  write_file(dir / "a/2.jpg", "\x89PNG\r\n\x1a\n and the rest of a PNG");
  const ImageFolder data(dir.path(), {.sample = Shape{3, 32, 32}});
  std::filesystem::remove(dir / "a/3.jpg");  // gone since the listing
  std::vector<float> pixels(3 * 32 * 32);
  std::mt19937_64 rng(1);
  const struct {
    int64_t index;
    std::string message;
  } cases[] = {{1, dir / "a/1.jpg: corrupt JPEG: Premature end of JPEG file"},
               {2, dir / "a/2.jpg: not a JPEG file (starts with 89 50 4e 47)"},
               {3, dir / "a/3.jpg: cannot read: No such file or directory"}};
  for (const auto& c : cases) {
    try {
      data.load(c.index, pixels, SampleMode::kTraining, rng);
      ADD_FAILURE() << "sample " << c.index << " loaded";
    } catch (const SampleError& e) {
      EXPECT_EQ(std::string(e.what()), c.message);
      EXPECT_EQ(e.file(), data.path(c.index));
    }
  }
  EXPECT_EQ(data.load(0, pixels, SampleMode::kTraining, rng), 0) << "a good file still loads after bad ones";
}

// An entry with an image's name that is no readable file (a dangling link, a
// pipe) is listed like any image, and its load is unreadable, naming why: a
// skip counts it and a stop names it, where leaving it out would hide it.
TEST(ImageFolder, ALinkToNothingOrAPipeNamedAsAnImageIsAnUnreadableSample) {
  TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a"}, .per_class = 1});
  std::filesystem::create_symlink(dir / "nowhere.jpg", dir / "a/1.jpg");
  ASSERT_EQ(::mkfifo((dir / "a/2.jpg").c_str(), 0600), 0);
  const ImageFolder data(dir.path(), {.sample = Shape{3, 32, 32}});
  ASSERT_EQ(data.size(), 3);
  std::vector<float> pixels(3 * 32 * 32);
  std::mt19937_64 rng(1);
  EXPECT_EQ(message_of<SampleError>([&] { data.load(1, pixels, SampleMode::kEvaluation, rng); }),
            dir / "a/1.jpg: cannot read: No such file or directory");
  EXPECT_EQ(message_of<SampleError>([&] { data.load(2, pixels, SampleMode::kEvaluation, rng); }),
            dir / "a/2.jpg: cannot read: Is a named pipe, not a regular file");
  EXPECT_EQ(data.load(0, pixels, SampleMode::kEvaluation, rng), 0);
}

// A class folder that is a link to nothing, or to itself in a loop, is named:
// left out, it would move every later class to the label before.
TEST(ImageFolder, AClassLinkThatCannotBeFollowedIsNamed) {
  TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a", "c"}, .per_class = 1});
  std::filesystem::create_symlink(dir / "gone", dir / "b");
  EXPECT_EQ(message_of<DataError>([&] { ImageFolder(dir.path(), {.sample = Shape{3, 32, 32}}); }),
            dir / "b: a link that cannot be followed (No such file or directory); a class folder must be a folder");
  std::filesystem::remove(dir / "b");
  std::filesystem::create_symlink(dir / "b", dir / "b");
  EXPECT_EQ(message_of<DataError>([&] { ImageFolder(dir.path(), {.sample = Shape{3, 32, 32}}); }),
            dir / "b: a link that cannot be followed (Too many levels of symbolic links); a class folder must be a "
                  "folder");
  std::filesystem::remove(dir / "b");
  std::filesystem::create_symlink(dir / "a", dir / "b");
  EXPECT_EQ(ImageFolder(dir.path(), {.sample = Shape{3, 32, 32}}).classes(), 3) << "a link to a folder is a class";
}

// An image file past 256 MiB is not read (a sparse file: its size costs no
// disk): the sample is unreadable, naming the size and the limit.
TEST(ImageFolder, AnImageFilePastTheLimitIsUnreadableNamingIt) {
  TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a"}, .per_class = 2});
  std::filesystem::resize_file(dir / "a/1.jpg", uint64_t{300} << 20);
  const ImageFolder data(dir.path(), {.sample = Shape{3, 32, 32}});
  std::vector<float> pixels(3 * 32 * 32);
  std::mt19937_64 rng(1);
  EXPECT_EQ(message_of<SampleError>([&] { data.load(1, pixels, SampleMode::kEvaluation, rng); }),
            dir / "a/1.jpg: cannot read: it has 314,572,800 bytes, past the limit of 268,435,456 for an image file "
                  "(each is read whole, to be decoded and resized)");
  EXPECT_EQ(data.load(0, pixels, SampleMode::kEvaluation, rng), 0);
}

// OnBadSample::kStop: the same file is a plain DataError, which stops a
// loader, instead of a SampleError, which it skips.
TEST(ImageFolder, WithStopAnUnreadableFileIsADataErrorNotASampleError) {
  TempDir dir;
  testing::make_jpeg_folder(dir.path(), {.classes = {"a"}, .per_class = 2});
  write_file(dir / "a/1.jpg", "\x89PNG\r\n\x1a\n and the rest of a PNG");
  const ImageFolder data(dir.path(), {.sample = Shape{3, 32, 32}, .on_bad_sample = OnBadSample::kStop});
  std::vector<float> pixels(3 * 32 * 32);
  std::mt19937_64 rng(1);
  std::string message;
  try {
    data.load(1, pixels, SampleMode::kEvaluation, rng);
    ADD_FAILURE() << "sample 1 loaded";
  } catch (const SampleError& e) {
    ADD_FAILURE() << "a SampleError: " << e.what();
  } catch (const DataError& e) {
    message = e.what();
  }
  EXPECT_EQ(message, dir / "a/1.jpg: not a JPEG file (starts with 89 50 4e 47) (an unreadable image stops this run; "
                           "--on-bad-sample skip leaves such images out, named and counted)");
  EXPECT_EQ(data.load(0, pixels, SampleMode::kEvaluation, rng), 0);
}

TEST(ImageFolder, OnBadSampleIsSkipOrStopAsTyped) {
  EXPECT_EQ(parse_on_bad_sample("--on-bad-sample", "skip"), OnBadSample::kSkip);
  EXPECT_EQ(parse_on_bad_sample("--on-bad-sample", "stop"), OnBadSample::kStop);
  for (const char* text : {"Skip", "", "skip ", "ignore"}) {
    EXPECT_EQ(message_of<ConfigError>([&] { parse_on_bad_sample("--on-bad-sample", text); }),
              cat("--on-bad-sample must be skip or stop, got '", text, "'"));
  }
}

}  // namespace
}  // namespace glassbox
