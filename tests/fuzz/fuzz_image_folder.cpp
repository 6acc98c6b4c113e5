// tests/fuzz/fuzz_image_folder.cpp: a small image folder (data/image_folder.h)
// made of the fuzzer's bytes: ImageFolder lists it, every sample is loaded,
// and a Loader (data/loader.h) with one worker takes one epoch of it.
//
// Input:
//   byte 0      bits 0-1: classes, 1 + (bits % 3): folders c0, c1, c2
//               bit 2: on_bad_sample, 0 skip, 1 stop
//               bit 3: channels, 0 grey (1x8x8 samples), 1 RGB (3x8x8)
//               bit 4: mode, 0 evaluation, 1 training
//               bit 5: the loader shuffles
//   then up to 6 files, each
//     1 byte    bits 0-1: its class (modulo the classes); bits 2-3: its
//               name, NN.jpg, NN.JPEG, NN.jpeg or NN.txt (not an image:
//               ignored), NN its place in the input
//     2 bytes   its length, little-endian
//     the bytes (a length past the end of the input takes what is left;
//               a header cut short, no file)
// Seeds: make_image_folder_seeds.py.
//
// Each error below is allowed only where it says; any other is a finding.
// ImageFolder throws a DataError exactly when a class folder holds no JPEG
// name, and otherwise lists the files given, in class and then name order,
// with their labels. Each sample's load (with the RNG the loader would give
// it) returns its label, or throws a SampleError under skip and a DataError
// that is not one under stop; each value it writes is finite and within the
// normalised range of 0..255. The
// loader's epoch hands out exactly the readable samples in its order
// (data/loader_order.h), each bit for bit as loaded here, with padding rows
// of zeros and label 0. Under skip it counts samples + skipped = the files
// visited, names each unreadable file once through its warn, and throws a
// DataError only where no file is readable; under stop it throws a
// DataError when the first batch holding an unreadable file is due, after
// the batches before it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/image_folder.h"
#include "data/loader.h"
#include "data/loader_order.h"
#include "tensor/copy.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

namespace {

namespace fs = std::filesystem;

constexpr int kMaxFiles = 6;
constexpr int kSide = 8;  // samples are (C, 8, 8)
constexpr int kBatch = 2;
constexpr uint64_t kSeed = 1;

struct Folder {
  int classes = 1;
  OnBadSample on_bad_sample = OnBadSample::kSkip;
  int channels = 1;
  SampleMode mode = SampleMode::kEvaluation;
  bool shuffle = false;
  std::vector<std::vector<std::string>> images;  // per class, the JPEG names ImageFolder must list, in order
};

// Writes the input's folder under `root` (emptied first); returns what it holds.
Folder write_folder(const std::string& root, std::string_view input) {
  Folder folder;
  const auto flags = static_cast<uint8_t>(input.empty() ? 0 : input[0]);
  input.remove_prefix(input.empty() ? 0 : 1);
  folder.classes = 1 + (flags & 3) % 3;
  folder.on_bad_sample = (flags & 4) != 0 ? OnBadSample::kStop : OnBadSample::kSkip;
  folder.channels = (flags & 8) != 0 ? 3 : 1;
  folder.mode = (flags & 16) != 0 ? SampleMode::kTraining : SampleMode::kEvaluation;
  folder.shuffle = (flags & 32) != 0;
  folder.images.resize(static_cast<size_t>(folder.classes));

  std::error_code error;
  fs::remove_all(root, error);
  for (int c = 0; c < folder.classes && !error; ++c) fs::create_directories(cat(root, "/c", c), error);
  if (error) {
    std::fprintf(stderr, "fuzz: cannot make %s: %s\n", root.c_str(), error.message().c_str());
    std::abort();
  }
  constexpr const char* kExtensions[] = {".jpg", ".JPEG", ".jpeg", ".txt"};
  for (int i = 0; i < kMaxFiles && input.size() >= 3; ++i) {
    const auto kind = static_cast<uint8_t>(input[0]);
    const size_t length = static_cast<uint8_t>(input[1]) | static_cast<size_t>(static_cast<uint8_t>(input[2])) << 8;
    input.remove_prefix(3);
    const std::string_view bytes = input.substr(0, length);
    input.remove_prefix(bytes.size());
    const int label = (kind & 3) % folder.classes;
    const int extension = (kind >> 2) & 3;
    const std::string name = cat(i / 10, i % 10, kExtensions[extension]);
    fuzz::write_bytes(cat(root, "/c", label, "/", name), bytes);
    if (extension != 3) folder.images[static_cast<size_t>(label)].push_back(name);
  }
  return folder;
}

// One sample, loaded as the loader would load it.
struct Sample {
  bool readable = false;
  int label = -1;
  std::vector<float> pixels;
};

Sample load_one(const ImageFolder& dataset, const Folder& folder, int64_t index) {
  Sample s;
  s.pixels.assign(static_cast<size_t>(dataset.sample_shape().numel()), 0.0f);
  std::mt19937_64 rng(loader_order::sample_seed(kSeed, 0, index));
  try {
    s.label = dataset.load(index, s.pixels, folder.mode, rng);
    s.readable = true;
  } catch (const SampleError&) {
    FUZZ_CHECK(folder.on_bad_sample == OnBadSample::kSkip);
  } catch (const DataError&) {
    FUZZ_CHECK(folder.on_bad_sample == OnBadSample::kStop);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: load: not a SampleError or DataError: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  if (!s.readable) return s;
  const size_t plane = s.pixels.size() / static_cast<size_t>(folder.channels);
  for (size_t c = 0; c < static_cast<size_t>(folder.channels); ++c) {
    const float mean = default_mean(folder.channels)[c], stddev = default_stddev(folder.channels)[c];
    const float low = (0.0f - mean) / stddev - 1e-3f, high = (1.0f - mean) / stddev + 1e-3f;
    for (size_t i = 0; i < plane; ++i) {
      const float v = s.pixels[c * plane + i];
      FUZZ_CHECK(std::isfinite(v) && v >= low && v <= high);
    }
  }
  return s;
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

struct Run {
  fuzz::TempDir temp{"folder"};
  std::string root = temp / "folder";
  Context ctx = Context::cpu();
  // The loader's batch tensors, for 1 and 3 channels.
  Tensor grey = ctx.allocate(Shape{kBatch, 1, kSide, kSide}, DType::kFloat32, MemoryCategory::kData);
  Tensor rgb = ctx.allocate(Shape{kBatch, 3, kSide, kSide}, DType::kFloat32, MemoryCategory::kData);
  Tensor labels = ctx.allocate(Shape{kBatch}, DType::kInt32, MemoryCategory::kData);
};

// One epoch of a Loader over `dataset`, checked against `samples`, each
// loaded here.
void check_loader(Run& run, const std::shared_ptr<const ImageFolder>& dataset, const Folder& folder,
                  const std::vector<Sample>& samples) {
  const int64_t n = dataset->size();
  const std::vector<int64_t> order = loader_order::epoch_order(n, kSeed, 0, folder.shuffle);
  std::vector<int64_t> expected;  // the readable samples, in the epoch's order
  int64_t first_bad = -1;          // the first unreadable one's place in the order
  for (int64_t at = 0; at < n; ++at) {
    const int64_t index = order[static_cast<size_t>(at)];
    if (samples[static_cast<size_t>(index)].readable) {
      expected.push_back(index);
    } else if (first_bad < 0) {
      first_bad = at;
    }
  }
  const bool stop = folder.on_bad_sample == OnBadSample::kStop;
  if (stop && first_bad >= 0) {
    // Only the batches before the first unreadable file's are handed out.
    expected.assign(order.begin(), order.begin() + first_bad / kBatch * kBatch);
  }
  const bool throws = stop ? first_bad >= 0 : expected.empty();

  int64_t warned = 0;
  Loader loader(run.ctx, dataset,
                {.batch = kBatch, .workers = 1, .seed = kSeed, .shuffle = folder.shuffle, .mode = folder.mode,
                 .drop_last = false, .warn = [&warned](const std::string&) { ++warned; }});
  const Tensor& images = folder.channels == 3 ? run.rgb : run.grey;
  const auto numel = static_cast<size_t>(dataset->sample_shape().numel());
  loader.start_epoch(0);
  size_t handed_out = 0;
  bool thrown = false;
  try {
    while (const int count = loader.next(images, run.labels)) {
      const std::vector<float> pixels = to_vector<float>(run.ctx, images);
      const std::vector<int> labels = to_vector<int>(run.ctx, run.labels);
      for (int row = 0; row < kBatch; ++row) {
        const float* got = pixels.data() + static_cast<size_t>(row) * numel;
        if (row >= count) {  // padding
          FUZZ_CHECK(labels[static_cast<size_t>(row)] == 0);
          FUZZ_CHECK(std::all_of(got, got + numel, [](float v) { return v == 0.0f; }));
          continue;
        }
        FUZZ_CHECK(handed_out < expected.size());
        const Sample& s = samples[static_cast<size_t>(expected[handed_out++])];
        FUZZ_CHECK(labels[static_cast<size_t>(row)] == s.label);
        FUZZ_CHECK(same_bits(got, s.pixels.data(), numel));
      }
    }
  } catch (const SampleError& e) {
    std::fprintf(stderr, "fuzz: the loader let a SampleError out: %s\n", e.what());
    std::abort();
  } catch (const DataError&) {
    thrown = true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: the loader: not a DataError: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  FUZZ_CHECK(thrown == throws);
  FUZZ_CHECK(handed_out == expected.size());
  if (stop) return;
  const LoaderStats stats = loader.stats();
  const auto skipped = n - static_cast<int64_t>(std::count_if(samples.begin(), samples.end(),
                                                              [](const Sample& s) { return s.readable; }));
  FUZZ_CHECK(stats.samples == static_cast<int64_t>(expected.size()));
  FUZZ_CHECK(stats.skipped == skipped);
  FUZZ_CHECK(stats.samples + stats.skipped == n);
  FUZZ_CHECK(warned == skipped);
  FUZZ_CHECK(stats.skipped_files.size() == std::min<size_t>(static_cast<size_t>(skipped), kSkippedNamed));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Run run;
  const Folder folder = write_folder(run.root, {reinterpret_cast<const char*>(data), size});
  bool every_class_has_images = true;
  for (const auto& names : folder.images) every_class_has_images = every_class_has_images && !names.empty();

  std::shared_ptr<const ImageFolder> dataset;
  try {
    dataset = std::make_shared<const ImageFolder>(
        run.root,
        ImageFolderOptions{.sample = Shape{folder.channels, kSide, kSide}, .on_bad_sample = folder.on_bad_sample});
  } catch (const DataError&) {
    FUZZ_CHECK(!every_class_has_images);  // a class folder without a JPEG name
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: ImageFolder: not a DataError: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  FUZZ_CHECK(every_class_has_images);
  FUZZ_CHECK(dataset->classes() == folder.classes);

  // Listed in class order, then name order, which is the input's order.
  std::vector<Sample> samples;
  for (int label = 0; label < folder.classes; ++label) {
    for (const std::string& name : folder.images[static_cast<size_t>(label)]) {
      const auto index = static_cast<int64_t>(samples.size());
      FUZZ_CHECK(index < dataset->size());
      FUZZ_CHECK(dataset->path(index) == (fs::path(run.root) / cat("c", label) / name).string());
      samples.push_back(load_one(*dataset, folder, index));
      FUZZ_CHECK(!samples.back().readable || samples.back().label == label);
    }
  }
  FUZZ_CHECK(dataset->size() == static_cast<int64_t>(samples.size()));
  try {
    check_loader(run, dataset, folder, samples);
  } catch (const std::exception& e) {  // next()'s errors are checked inside: nothing else may throw
    std::fprintf(stderr, "fuzz: the loader: %s escaped: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
