// data/data_spec.cpp: the forms of data/data_spec.h, and the checks that the
// data fit the network before anything is trained.
#include "data/data_spec.h"

#include <filesystem>

#include "data/idx_dataset.h"
#include "data/image_folder.h"
#include "data/synthetic.h"
#include "tensor/parse.h"

namespace glassbox {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFashionMnistFolder = "/usr/share/datasets/fashion-mnist";  // Debian's dataset-fashion-mnist
constexpr int64_t kSyntheticTrain = 1024, kSyntheticTest = 256;
constexpr uint64_t kSyntheticTrainSeed = 1, kSyntheticTestSeed = 2;

const char* const kForms = "fashion-mnist, fashion-mnist:DIR, mnist:DIR, folder:PATH, synthetic, synthetic:N";

// DIR/<base>.gz, else DIR/<base> (either is read the same way).
std::string idx_file(const std::string& folder, const std::string& base) {
  const fs::path gz = fs::path(folder) / (base + ".gz"), plain = fs::path(folder) / base;
  std::error_code ignored;
  if (fs::exists(gz, ignored)) return gz.string();
  if (fs::exists(plain, ignored)) return plain.string();
  throw DataError(cat(folder, ": neither ", base, ".gz nor ", base, " is there"));
}

void check_classes(const std::string& spec, int data_classes, int classes) {
  if (data_classes > classes) {
    throw ConfigError(cat(spec, " has ", data_classes, " classes; the network has only ", classes, " outputs"));
  }
}

DataSplits open_idx(const std::string& spec, const std::string& title, const std::string& folder, float mean,
                    float stddev, const Shape& sample, int classes) {
  if (sample != Shape{1, 28, 28}) {
    throw ConfigError(cat(spec, " gives samples of ", Shape{1, 28, 28}.str(), "; the network takes ", sample.str()));
  }
  check_classes(spec, kIdxClasses, classes);
  auto split = [&](const char* prefix, const char* name) {
    return std::make_shared<const IdxDataset>(IdxDatasetOptions{
        .name = cat(title, " ", name),
        .images_path = idx_file(folder, cat(prefix, "-images-idx3-ubyte")),
        .labels_path = idx_file(folder, cat(prefix, "-labels-idx1-ubyte")),
        .mean = mean,
        .stddev = stddev});
  };
  return {.spec = spec, .train = split("train", "train"), .test = split("t10k", "test")};
}

DataSplits open_folder(const std::string& spec, const std::string& root, const Shape& sample, int classes,
                       const DataOptions& options) {
  const std::string train_root = (fs::path(root) / "train").string(), val_root = (fs::path(root) / "val").string();
  // Both splits are read, whatever the job: train/'s class folders give the
  // labels (in sorted order), which val/ must match, so that an evaluation
  // labels its classes as training did.
  for (const std::string& split : {train_root, val_root}) {
    std::error_code error;  // set where stat() fails: no such file, a link to nothing or in a loop, no access
    if (!fs::is_directory(fs::status(split, error))) {
      throw DataError(cat(split, ": ", error ? error.message() : std::string("not a folder"), "; folder:", root,
                          " must hold train/<class>/ and val/<class>/ "
                          "(both are read: train/'s class folders name the labels, which val/'s must match)"));
    }
  }
  auto train = std::make_shared<const ImageFolder>(
      train_root,
      ImageFolderOptions{.sample = sample, .name = "folder train", .on_bad_sample = options.on_bad_sample});
  auto val = std::make_shared<const ImageFolder>(
      val_root, ImageFolderOptions{.sample = sample, .name = "folder val", .on_bad_sample = options.on_bad_sample});
  const auto& a = train->class_names();
  const auto& b = val->class_names();
  if (a != b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    const std::string first_difference =
        i < a.size() && i < b.size() ? cat("class ", i, " is '", a[i], "' in train/ and '", b[i], "' in val/")
        : i < a.size()               ? cat("'", a[i], "' is in train/ only")
                                     : cat("'", b[i], "' is in val/ only");
    throw DataError(cat(root, ": train/ (", a.size(), " classes) and val/ (", b.size(),
                        ") must have the same class folders; ", first_difference));
  }
  check_classes(spec, train->classes(), classes);
  return {.spec = spec, .train = std::move(train), .test = std::move(val)};
}

}  // namespace

OnBadSample parse_on_bad_sample(std::string_view flag, std::string_view text) {
  if (text == "skip") return OnBadSample::kSkip;
  if (text == "stop") return OnBadSample::kStop;
  throw ConfigError(cat(flag, " must be skip or stop, got '", text, "'"));
}

DataSplits open_data(std::string_view spec, const Shape& sample, int classes, const DataOptions& options) {
  const std::string text(spec);
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string argument = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool has_argument = colon != std::string::npos && !argument.empty();
  if (text == "fashion-mnist" || (kind == "fashion-mnist" && has_argument)) {
    return open_idx(text, "Fashion-MNIST", has_argument ? argument : kFashionMnistFolder, kFashionMnistMean,
                    kFashionMnistStd, sample, classes);
  }
  if (kind == "mnist" && has_argument) {
    return open_idx(text, "MNIST", argument, kMnistMean, kMnistStd, sample, classes);
  }
  if (kind == "folder" && has_argument) return open_folder(text, argument, sample, classes, options);
  if (text == "synthetic" || (kind == "synthetic" && has_argument)) {
    const int64_t size = has_argument ? parse_int("synthetic:N", argument, 1, int64_t{1} << 40) : kSyntheticTrain;
    auto make = [&](int64_t n, uint64_t seed, const char* name) {
      return std::make_shared<const SyntheticDataset>(
          SyntheticOptions{.size = n, .classes = classes, .sample = sample, .seed = seed, .name = name});
    };
    return {.spec = text,
            .train = make(size, kSyntheticTrainSeed, "synthetic train"),
            .test = make(kSyntheticTest, kSyntheticTestSeed, "synthetic test")};
  }
  throw ConfigError(cat("unknown data '", text, "'; valid: ", kForms));
}

}  // namespace glassbox
