// tests/test_make_folder.cpp: `glassbox make-folder` run as a user runs it:
// the folders it writes read back as the set they came from (through
// open_data's folder:DIR), and every usage error exits 2 naming the flag.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "data/data_spec.h"
#include "data/image_folder.h"
#include "data/idx_dataset.h"
#include "data/jpeg.h"
#include "tests/support/command.h"
#include "tests/support/data_files.h"
#include "tools/cli/whole_folder.h"

namespace glassbox {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::TempDir;

const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);
const std::string kDebianFolder = "/usr/share/datasets/fashion-mnist";

testing::CommandOutcome run(const std::string& arguments) {
  return testing::run_command(kCli + " make-folder " + arguments);
}

Image decode_file(const std::string& path, int channels) {
  const std::string bytes = testing::read_whole_file(path);
  Image image;
  decode_jpeg({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, path, {.channels = channels}, image);
  return image;
}

std::vector<std::string> files_under(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), root).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(MakeFolder, FashionMnistReadsBackAsTheSameImagesAndLabels) {
  if (!fs::exists(kDebianFolder + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "no Debian dataset-fashion-mnist";
  TempDir dir;
  const testing::CommandOutcome r = run("--from fashion-mnist --limit 25 --out " + dir / "f");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "make-folder: wrote 25 training and 25 validation images (28x28, grey, quality 95)"))
      << r.output;
  const DataSplits folder = open_data("folder:" + dir / "f", Shape{1, 28, 28}, 10);
  const DataSplits idx = open_data("fashion-mnist", Shape{1, 28, 28}, 10);
  EXPECT_EQ(folder.train->size(), 25);
  EXPECT_EQ(folder.test->size(), 25);
  const auto& train = dynamic_cast<const ImageFolder&>(*folder.train);
  EXPECT_EQ(train.class_names().front(), "0_t-shirt");
  EXPECT_EQ(train.class_names().back(), "9_ankle-boot");
  const auto& source = dynamic_cast<const IdxDataset&>(*idx.train);
  std::vector<float> pixels(784);
  std::mt19937_64 rng(1);
  std::vector<int> per_class(10);
  for (int64_t i = 0; i < train.size(); ++i) ++per_class[static_cast<size_t>(train.load(i, pixels, SampleMode::kEvaluation, rng))];
  EXPECT_EQ(per_class, (std::vector<int>{3, 3, 3, 3, 3, 2, 2, 2, 2, 2})) << "25 / 10 per class, the rest to the first";
  for (int64_t i = 0; i < train.size(); ++i) {
    // Files are <index in the split>.jpg: find the source image of each.
    const int64_t index = std::stoll(fs::path(train.path(i)).stem().string());
    EXPECT_EQ(train.load(i, pixels, SampleMode::kEvaluation, rng), source.label(index)) << train.path(i);
    const Image image = decode_file(train.path(i), 1);
    const std::span<const uint8_t> original = source.image(index);
    double difference = 0.0;
    for (size_t p = 0; p < 784; ++p) difference += std::abs(image.pixels[p] - original[p]);
    EXPECT_LT(difference / 784, 4.0) << train.path(i) << " is not image " << index << " (quality 95)";
  }
}

TEST(MakeFolder, SizeAndChannels) {
  if (!fs::exists(kDebianFolder + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "no Debian dataset-fashion-mnist";
  TempDir dir;
  const testing::CommandOutcome r = run("--from fashion-mnist --limit 10 --size 40 --channels 3 --quality 80 --out " + dir / "f");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Image image = decode_file(dir / "f/val/9_ankle-boot/0000.jpg", 3);  // the first test image is a boot; 4 digits for 10,000
  EXPECT_EQ(image.width, 40);
  EXPECT_EQ(image.height, 40);
  EXPECT_EQ(files_under(dir / "f").size(), 20u);
}

TEST(MakeFolder, SyntheticIsSeededWholeAndPhotoSized) {
  TempDir dir;
  const std::string flags = "--synthetic --classes 2 --train 3 --val 1 --width 64 --height 48 --seed 5 --out ";
  ASSERT_EQ(run(flags + dir / "a").exit_code, 0);
  ASSERT_EQ(run(flags + dir / "b").exit_code, 0);
  const testing::CommandOutcome other = run("--synthetic --classes 2 --train 3 --val 1 --width 64 --height 48 --seed 6 --out " + dir / "c");
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_TRUE(contains(other.output, "make-folder: wrote 8 synthetic images (64x48, quality 90, ")) << other.output;
  const std::vector<std::string> files = files_under(dir / "a");
  EXPECT_EQ(files, (std::vector<std::string>{"train/class_0/0.jpg", "train/class_0/1.jpg", "train/class_0/2.jpg",
                                             "train/class_1/0.jpg", "train/class_1/1.jpg", "train/class_1/2.jpg",
                                             "val/class_0/0.jpg", "val/class_1/0.jpg"}))
      << "no temporary files are left";
  std::vector<std::string> beside;
  for (const auto& entry : fs::directory_iterator(dir.path())) beside.push_back(entry.path().filename().string());
  std::sort(beside.begin(), beside.end());
  EXPECT_EQ(beside, (std::vector<std::string>{"a", "b", "c"})) << "a partial folder is left beside the three";
  for (const std::string& file : files) {
    EXPECT_EQ(testing::read_whole_file(dir / "a/" + file), testing::read_whole_file(dir / "b/" + file)) << file;
    EXPECT_NE(testing::read_whole_file(dir / "a/" + file), testing::read_whole_file(dir / "c/" + file)) << file;
    const Image image = decode_file(dir / "a/" + file, 3);
    EXPECT_EQ(image.width, 64);
    EXPECT_EQ(image.height, 48);
  }
  const DataSplits data = open_data("folder:" + dir / "a", Shape{3, 32, 32}, 2);
  EXPECT_EQ(data.train->size(), 6);
}

TEST(MakeFolder, UsageErrorsNameTheFlagAndExitTwo) {
  TempDir dir;
  testing::write_file(dir / "full/x", "something");
  const std::string out = " --out " + dir / "new";
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"", "glassbox: make-folder needs one of --from SPEC (fashion-mnist, fashion-mnist:DIR, mnist:DIR) and --synthetic"},
      {"--from fashion-mnist --synthetic" + out, "glassbox: make-folder needs only one of --from SPEC"},
      {"--synthetic", "glassbox: make-folder needs --out DIR, the folder to make"},
      {"VGG16 --synthetic" + out, "glassbox: make-folder takes no network or other word without a flag (got 'VGG16')"},
      {"--synthetic --size 32" + out, "glassbox: make-folder: --size is for --from, not --synthetic"},
      {"--from mnist:/x --classes 3" + out, "glassbox: make-folder: --classes is for --synthetic, not --from"},
      {"--from cifar" + out, "glassbox: make-folder: --from must be fashion-mnist, fashion-mnist:DIR or mnist:DIR, got 'cifar'"},
      {"--from fashion-mnist --channels 2" + out, "glassbox: make-folder: --channels must be 1 or 3, got '2'"},
      {"--from fashion-mnist --channels 4" + out, "glassbox: --channels must be an integer from 1 to 3, got '4'"},
      {"--from fashion-mnist --limit 9" + out, "glassbox: --limit must be an integer from 10 to 2147483647, got '9'"},
      {"--synthetic --quality 0" + out, "glassbox: --quality must be an integer from 1 to 100, got '0'"},
      {"--synthetic --out " + dir / "full",
       "glassbox: make-folder: --out " + dir / "full" + " exists and is not an empty folder; give a new or empty one"},
      {"--synthetic --bogus" + out, "glassbox: unknown flag '--bogus' for 'make-folder'; valid: --from, --synthetic"},
  };
  for (const auto& c : cases) {
    const testing::CommandOutcome r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << "make-folder " << c.args << " printed:\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "new")) << "nothing is written after a usage error";
}

TEST(MakeFolder, FailuresExitOneNamingTheFile) {
  TempDir dir;
  testing::write_file(dir / "plain", "a file, not a folder");
  testing::CommandOutcome r = run("--synthetic --classes 1 --train 1 --val 1 --width 8 --height 8 --out " + dir / "plain/sub");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: make-folder: cannot make a folder in " + dir / "plain/sub" +
                                     ": Not a directory"))
      << r.output;
  r = run("--from mnist:" + dir / "none --out " + dir / "m");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: " + dir / "none: neither train-images-idx3-ubyte.gz nor")) << r.output;
}

// Note [A folder made whole]: a make-folder that fails part of the way leaves
// no --out (which would train on part of the images), no partial folder, and
// none of the folders it made above --out. Here every write fails: the file
// size limit (ulimit -f, in KiB) is below one image, and SIGXFSZ is ignored.
TEST(MakeFolder, AFailedRunLeavesNothingBehind) {
  TempDir dir;
  const std::string out = dir / "above/out";
  const testing::CommandOutcome r = testing::run_command(
      "bash -c \"trap '' XFSZ; ulimit -f 4; exec " + kCli + " make-folder --synthetic --classes 2 --train 2 --val 1 "
      "--width 256 --height 256 --out " + out + "\"");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: cannot write " + dir / "above/out/.partial-")) << r.output;
  EXPECT_TRUE(contains(r.output, "/train/class_0/0.jpg: File too large")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "above")) << "a folder make-folder made is left behind";
}

// make_folder_whole itself: a new folder, an empty one through a link, and
// each way it fails, leaving `out` as it was and nothing beside it. What it
// makes has the mode any new folder gets (the hidden staging folder's 0700
// is never seen).
TEST(MakeFolder, AFolderIsMadeWholeOrNotAtAll) {
  TempDir dir;
  auto write_one = [](const std::string& into) {
    testing::write_file(into + "/train/a/0.jpg", "x");
    return std::string("made");
  };
  auto beside = [&] {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  EXPECT_EQ(cli::make_folder_whole(dir / "new", {"train"}, write_one), "made");
  EXPECT_TRUE(fs::exists(dir / "new/train/a/0.jpg"));
  const mode_t mask = ::umask(0);
  ::umask(mask);
  for (const std::string& folder : {dir / "new", dir / "new/train"}) {
    EXPECT_EQ(static_cast<mode_t>(fs::status(folder).permissions()), 0777 & ~mask) << folder;
  }
  fs::create_directories(dir / "empty");
  fs::create_symlink(dir / "empty", dir / "link");
  EXPECT_EQ(cli::make_folder_whole(dir / "link/", {"train"}, write_one), "made");
  EXPECT_TRUE(fs::is_symlink(dir / "link")) << "the link stays a link";
  EXPECT_TRUE(fs::exists(dir / "empty/train/a/0.jpg")) << "the folder it names is replaced";
  EXPECT_EQ(beside(), (std::vector<std::string>{"empty", "link", "new"}));

  // A link to nothing is there, not a folder to make: it is refused and kept.
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  const std::string dangling =
      testing::message_of<Error>([&] { cli::make_folder_whole(dir / "dangling", {"train"}, write_one); });
  EXPECT_EQ(dangling, "make-folder: cannot make a folder in " + dir / "dangling" + ": " + dir / "dangling" +
                          " is a link to " + dir / "nowhere" + ", which leads nowhere");
  const std::string below =
      testing::message_of<Error>([&] { cli::make_folder_whole(dir / "dangling/sub", {"train"}, write_one); });
  EXPECT_EQ(below, "make-folder: cannot make a folder in " + dir / "dangling/sub" + ": " + dir / "dangling" +
                       " is a link to " + dir / "nowhere" + ", which leads nowhere");
  EXPECT_TRUE(fs::is_symlink(dir / "dangling")) << "a link make-folder did not make is removed";
  fs::remove(dir / "dangling");

  // A make that fails: nothing of it is left, the folders above `out` too.
  const std::string message = testing::message_of<DataError>([&] {
    cli::make_folder_whole(dir / "above/out", {"train"}, [&](const std::string& into) -> std::string {
      write_one(into);
      throw DataError("no more images");
    });
  });
  EXPECT_EQ(message, "no more images");
  EXPECT_EQ(beside(), (std::vector<std::string>{"empty", "link", "new"}));

  // A move that fails: something else made `out`'s train folder meanwhile.
  // The train folder is not ours, and the hidden folder is gone.
  fs::create_directories(dir / "taken");
  const std::string refused = testing::message_of<Error>([&] {
    cli::make_folder_whole(dir / "taken", {"train"}, [&](const std::string& into) {
      testing::write_file(dir / "taken/train/other", "y");
      return write_one(into);
    });
  });
  EXPECT_TRUE(contains(refused, "make-folder: cannot move " + dir / "taken/.partial-")) << refused;
  EXPECT_TRUE(contains(refused, "/train to " + dir / "taken/train: ")) << refused;
  EXPECT_EQ(beside(), (std::vector<std::string>{"empty", "link", "new", "taken"}));
  std::vector<std::string> in_taken;
  for (const auto& entry : fs::directory_iterator(dir / "taken")) in_taken.push_back(entry.path().filename().string());
  EXPECT_EQ(in_taken, std::vector<std::string>{"train"});
  EXPECT_TRUE(fs::exists(dir / "taken/train/other"));
}

// A make-folder that was killed leaves its hidden folder in --out: the next
// one refuses the folder, naming it.
TEST(MakeFolder, AStoppedRunsFolderIsNamed) {
  TempDir dir;
  fs::create_directories(dir / "out/.partial-Ab12Cd/train");
  const testing::CommandOutcome r = run("--synthetic --out " + dir / "out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: make-folder: --out " + dir / "out" + " exists and is not an empty folder "
                                 "(it holds .partial-Ab12Cd, what a make-folder that was stopped had written); give "
                                 "a new or empty one"))
      << r.output;
}

// --out is checked as the system resolves it: "ghost/../kept" is kept, which
// holds a file, though ghost does not exist yet; and ghost is not made.
TEST(MakeFolder, AnOutThroughAFolderNotYetMadeIsCheckedWhereItLeads) {
  TempDir dir;
  testing::write_file(dir / "kept/notes.txt", "mine");
  const testing::CommandOutcome r =
      run("--synthetic --classes 1 --train 1 --val 1 --width 8 --height 8 --out " + dir / "ghost/../kept");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: make-folder: --out " + dir / "ghost/../kept" +
                                     " exists and is not an empty folder; give a new or empty one"))
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "ghost"));
  EXPECT_FALSE(fs::exists(dir / "kept/train"));
}

// A set without some class would make a folder whose later classes read
// back one label lower: refused, naming the class and the set, before
// anything is written.
TEST(MakeFolder, ASetMissingAClassIsRefusedBeforeAnythingIsWritten) {
  TempDir dir;
  const std::string idx = dir / "idx";
  fs::create_directories(idx);
  const std::vector<uint8_t> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<uint8_t> no_three = {0, 1, 2, 4, 5, 6, 7, 8, 9, 9};
  testing::write_file(idx + "/train-images-idx3-ubyte", testing::idx_images(10));
  testing::write_file(idx + "/train-labels-idx1-ubyte", testing::idx_labels(all));
  testing::write_file(idx + "/t10k-images-idx3-ubyte", testing::idx_images(10));
  testing::write_file(idx + "/t10k-labels-idx1-ubyte", testing::idx_labels(no_three));
  const testing::CommandOutcome r = run("--from mnist:" + idx + " --out " + dir / "out");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: make-folder: mnist:" + idx + " has no image of class 3 (3) in its test set; "
                                 "the folder of val would miss it and every later class would read back one label "
                                 "lower"))
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out/train")) << "nothing is written for a refused set";
}

}  // namespace
}  // namespace glassbox
