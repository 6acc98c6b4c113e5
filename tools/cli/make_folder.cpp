// tools/cli/make_folder.cpp: `glassbox make-folder`: a folder of JPEG images
// in the layout --data folder:DIR reads (data/image_folder.h):
//
//   --from fashion-mnist|fashion-mnist:DIR|mnist:DIR   the set's training images into
//        DIR/train/<class>/, its test images into DIR/val/<class>/, resized to
//        --size (reusing data/resize.h), grey or RGB (--channels); --limit N
//        keeps the first N/10 of each class
//   --synthetic   random photo-like images (colour gradients, blobs, texture,
//        some noise: they compress and decode like photos, not like white
//        noise or flat colour), for measuring decode throughput
//
// Class folders are named so that their sorted order is the label order:
// "0_t-shirt" .. "9_ankle-boot" for Fashion-MNIST, "0" .. "9" for MNIST,
// "class_00" .. for --synthetic. Files are <index>.jpg, the index in its split
// zero-padded, so that the sorted order is the original order.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>

#include "data/data_spec.h"
#include "data/idx_dataset.h"
#include "data/jpeg.h"
#include "data/resize.h"
#include "data/shared.h"
#include "tensor/atomic_file.h"
#include "tensor/parse.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/whole_folder.h"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

const char* const kFashionMnistClasses[] = {"0_t-shirt", "1_trouser", "2_pullover", "3_dress", "4_coat",
                                            "5_sandal",  "6_shirt",   "7_sneaker",  "8_bag",   "9_ankle-boot"};

// Note [make-folder writes without fsync]: every file is written into the
// partial folder (Note [A folder made whole], tools/cli/whole_folder.cpp),
// which no reader knows of until it is renamed to --out; unlike
// tensor/atomic_file.h there is no fsync per file, which for Fashion-MNIST's
// 70,000 files would cost minutes.
void write_whole(const std::string& path, const std::string& bytes) {
  std::error_code made;
  fs::create_directories(fs::path(path).parent_path(), made);
  const int fd = made ? -1 : ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  size_t written = 0;
  bool ok = fd >= 0 && write_all(fd, bytes, written);
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (!ok) throw Error(cat("cannot write ", path, ": ", made ? made.message() : std::strerror(errno)));
}

std::string padded(int64_t index, int64_t count) {
  const std::string digits = std::to_string(index), widest = std::to_string(std::max<int64_t>(count - 1, 0));
  return std::string(widest.size() - std::min(widest.size(), digits.size()), '0') + digits;
}

// One split of an IDX set, resized and encoded: every image, or with a
// limit the first limit/10 of each class in index order (the first images
// alone can miss a class, and a folder without one would shift the labels of
// the classes after it).
int64_t write_idx_split(const IdxDataset& data, const std::string& folder, const std::vector<std::string>& classes,
                        int64_t limit, int size, int channels, int quality) {
  const auto n_classes = static_cast<int64_t>(classes.size());
  std::vector<int64_t> room(classes.size());
  for (int64_t c = 0; c < n_classes; ++c) room[static_cast<size_t>(c)] = limit / n_classes + (c < limit % n_classes);
  int64_t count = 0;
  const Shape shape = data.sample_shape();
  for (int64_t i = 0; i < data.size() && count < limit; ++i) {
    if (room[static_cast<size_t>(data.label(i))]-- <= 0) continue;
    ++count;
    const std::span<const uint8_t> bytes = data.image(i);
    Image image{.width = static_cast<int>(shape[2]), .height = static_cast<int>(shape[1]), .channels = 1,
                .pixels = std::vector<uint8_t>(bytes.begin(), bytes.end())};
    if (image.width != size || image.height != size) image = resize_image(image, size, size);
    if (channels == 3) {
      Image rgb{.width = image.width, .height = image.height, .channels = 3};
      for (uint8_t v : image.pixels) rgb.pixels.insert(rgb.pixels.end(), {v, v, v});
      image = std::move(rgb);
    }
    const std::string path = cat(folder, "/", classes[static_cast<size_t>(data.label(i))], "/",
                                 padded(i, data.size()), ".jpg");
    write_whole(path, encode_jpeg(image, {.quality = quality}));
  }
  return count;
}

// Like a photo to the decoder: a gradient between two colours near the
// class's hue, soft and hard-edged blobs of random colours (edges), a few
// gratings (texture), then +-10 levels of noise: about 45 KiB at 500x375,
// quality 90. Smooth content alone gave 15 KiB, which decodes faster than
// photos do; ImageNet's average about 110 kB, with more fine detail.
Image photo_like(int width, int height, int label, int classes, std::mt19937_64& rng) {
  auto uniform = [&] { return 0.5f * (draw_symmetric(rng) + 1.0f); };  // [0, 1)
  const float hue = static_cast<float>(label) / static_cast<float>(classes);
  auto colour = [&](float jitter) {
    std::array<float, 3> c;
    for (int k = 0; k < 3; ++k) {
      const float base = 0.5f + 0.4f * std::cos(6.2832f * (hue + static_cast<float>(k) / 3.0f));
      c[static_cast<size_t>(k)] = 255.0f * std::clamp(base + jitter * draw_symmetric(rng), 0.0f, 1.0f);
    }
    return c;
  };
  const auto from = colour(0.2f), to = colour(0.4f);
  const float angle = 6.2832f * uniform(), dx = std::cos(angle), dy = std::sin(angle);
  struct Grating { float fx, fy, phase, amplitude; };
  std::array<Grating, 3> gratings;
  for (Grating& g : gratings) {
    const float a = 6.2832f * uniform(), frequency = 6.2832f / (4.0f + 36.0f * uniform());
    g = {frequency * std::cos(a), frequency * std::sin(a), 6.2832f * uniform(), 4.0f + 8.0f * uniform()};
  }
  std::vector<float> pixels(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const float t = 0.5f + 0.5f * (dx * (2.0f * x / width - 1.0f) + dy * (2.0f * y / height - 1.0f)) / 1.4143f;
      float texture = 0.0f;
      for (const Grating& g : gratings) texture += g.amplitude * std::sin(g.fx * x + g.fy * y + g.phase);
      for (size_t k = 0; k < 3; ++k) {
        pixels[(static_cast<size_t>(y) * width + x) * 3 + k] = from[k] + t * (to[k] - from[k]) + texture;
      }
    }
  }
  const int blobs = 12 + static_cast<int>(draw_below(rng, 16));
  const float side = static_cast<float>(std::min(width, height));
  for (int b = 0; b < blobs; ++b) {
    const float cx = uniform() * width, cy = uniform() * height, r = side * (0.03f + 0.25f * uniform());
    const float strength = 0.3f + 0.6f * uniform();
    const bool hard = uniform() < 0.5f;  // a disc with an edge, or a soft spot
    const auto c = colour(0.5f);
    const int x0 = std::max(0, static_cast<int>(cx - r)), x1 = std::min(width, static_cast<int>(cx + r) + 1);
    const int y0 = std::max(0, static_cast<int>(cy - r)), y1 = std::min(height, static_cast<int>(cy + r) + 1);
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) {
        const float d2 = ((x - cx) * (x - cx) + (y - cy) * (y - cy)) / (r * r);
        if (d2 >= 1.0f) continue;
        const float a = hard ? strength : strength * (1.0f - d2) * (1.0f - d2);
        float* p = &pixels[(static_cast<size_t>(y) * width + x) * 3];
        for (size_t k = 0; k < 3; ++k) p[k] += a * (c[k] - p[k]);
      }
    }
  }
  Image image{.width = width, .height = height, .channels = 3};
  image.pixels.resize(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) {
    image.pixels[i] = static_cast<uint8_t>(std::clamp(std::lround(pixels[i] + 10.0f * draw_symmetric(rng)), 0L, 255L));
  }
  return image;
}

// Flags that belong to the other form are usage errors.
void refuse_flags_of_the_other_form(const Args& args, bool synthetic) {
  const char* const from_only[] = {"--size", "--channels", "--limit"};
  const char* const synthetic_only[] = {"--classes", "--train", "--val", "--width", "--height", "--seed"};
  for (const char* flag : synthetic ? std::span<const char* const>(from_only) : std::span<const char* const>(synthetic_only)) {
    if (args.has(flag)) {
      throw ConfigError(cat("make-folder: ", flag, " is for ", synthetic ? "--from" : "--synthetic", ", not ",
                            synthetic ? "--synthetic" : "--from"));
    }
  }
}

// Writes the folder into `into`; returns the line to print once it is `out`.
std::string make_from_idx(const Args& args, const std::string& into, const std::string& out) {
  const std::string spec = args.get("--from", "");
  const bool fashion = spec == "fashion-mnist" || spec.starts_with("fashion-mnist:");
  if (!fashion && !spec.starts_with("mnist:")) {
    throw ConfigError(cat("make-folder: --from must be fashion-mnist, fashion-mnist:DIR or mnist:DIR, got '", spec, "'"));
  }
  const int size = args.int_in("--size", 28, 1, 4096);
  const int channels = args.int_in("--channels", 1, 1, 3);
  if (channels == 2) throw ConfigError("make-folder: --channels must be 1 or 3, got '2'");
  const int64_t limit = args.int_in("--limit", kMaxInt, kIdxClasses, kMaxInt);
  const int quality = args.int_in("--quality", 95, 1, 100);
  const DataSplits data = open_data(spec, Shape{1, 28, 28}, kIdxClasses);
  std::vector<std::string> classes;
  for (int c = 0; c < kIdxClasses; ++c) classes.push_back(fashion ? kFashionMnistClasses[c] : std::to_string(c));
  // open_data made IDX datasets for these forms: their bytes are what we write.
  const auto& train = dynamic_cast<const IdxDataset&>(*data.train);
  const auto& test = dynamic_cast<const IdxDataset&>(*data.test);
  // Class folders are the labels in sorted order: a class with no image has
  // no folder, and every later class would read back one label lower.
  for (const auto& [split, set] : {std::pair{"train", &train}, std::pair{"val", &test}}) {
    std::vector<int64_t> per_class(classes.size());
    for (int64_t i = 0; i < set->size(); ++i) ++per_class[static_cast<size_t>(set->label(i))];
    for (size_t c = 0; c < classes.size(); ++c) {
      if (per_class[c] == 0) {
        throw DataError(cat("make-folder: ", spec, " has no image of class ", c, " (", classes[c], ") in its ",
                            split == std::string_view("train") ? "training" : "test", " set; the folder of ", split,
                            " would miss it and every later class would read back one label lower"));
      }
    }
  }
  const int64_t n_train = write_idx_split(train, into + "/train", classes, limit, size, channels, quality);
  const int64_t n_val = write_idx_split(test, into + "/val", classes, limit, size, channels, quality);
  return cat("make-folder: wrote ", grouped(n_train), " training and ", grouped(n_val), " validation images (", size,
             "x", size, ", ", channels == 1 ? "grey" : "RGB", ", quality ", quality, ") of ", spec, " into ", out,
             "/{train,val}/{", classes.front(), " .. ", classes.back(), "}; use it with --data folder:", out);
}

// Writes the folder into `into`; returns the line to print once it is `out`.
std::string make_synthetic(const Args& args, const std::string& into, const std::string& out) {
  const int classes = args.int_in("--classes", 10, 1, 1000);
  const int train = args.int_in("--train", 50, 1, 1'000'000);
  const int val = args.int_in("--val", 10, 1, 1'000'000);
  const int width = args.int_in("--width", 500, 1, 8192);
  const int height = args.int_in("--height", 375, 1, 8192);
  const int quality = args.int_in("--quality", 90, 1, 100);
  const int seed = args.int_in("--seed", 1, 0, kMaxInt);
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  int64_t bytes = 0;
  for (const auto& [split, per_class] : {std::pair{"train", train}, std::pair{"val", val}}) {
    for (int c = 0; c < classes; ++c) {
      const std::string folder = cat(into, "/", split, "/class_", padded(c, classes));
      for (int i = 0; i < per_class; ++i) {
        const std::string jpeg = encode_jpeg(photo_like(width, height, c, classes, rng), {.quality = quality});
        write_whole(cat(folder, "/", padded(i, per_class), ".jpg"), jpeg);
        bytes += static_cast<int64_t>(jpeg.size());
      }
    }
  }
  const int64_t files = int64_t{classes} * (train + val);
  return cat("make-folder: wrote ", grouped(files), " synthetic images (", width, "x", height, ", quality ", quality,
             ", ", grouped(bytes / files / 1024), " KiB each on average) in ", classes, " classes into ", out,
             "/{train,val}/; use it with --data folder:", out);
}

}  // namespace

int run_make_folder(const std::vector<std::string>& words) {
  const Args args("make-folder", make_folder_flags(), words);
  if (!args.positionals().empty()) {
    throw ConfigError(cat("make-folder takes no network or other word without a flag (got '", args.positionals()[0], "')"));
  }
  const bool synthetic = args.has("--synthetic");
  if (synthetic == args.has("--from")) {
    throw ConfigError(cat("make-folder needs ", synthetic ? "only " : "", "one of --from SPEC (fashion-mnist, "
                          "fashion-mnist:DIR, mnist:DIR) and --synthetic"));
  }
  if (!args.has("--out")) throw ConfigError("make-folder needs --out DIR, the folder to make");
  refuse_flags_of_the_other_form(args, synthetic);
  const std::string out = args.get("--out", "");
  std::error_code error;
  // Checked as the system will resolve it once the folders above are made:
  // "new/../old" is old, which exists, though "new" does not yet.
  std::string where = fs::weakly_canonical(fs::absolute(out, error), error).string();
  if (error || where.empty()) where = out;
  error.clear();
  if (fs::exists(where, error) && !(fs::is_directory(where, error) && fs::is_empty(where, error))) {
    // A make-folder that was killed leaves its hidden staging folder (Note [A folder made whole]).
    std::string staging;
    for (fs::directory_iterator it(where, error); !error && it != fs::directory_iterator(); it.increment(error)) {
      if (it->path().filename().string().starts_with(".partial-")) staging = it->path().filename().string();
    }
    throw ConfigError(cat("make-folder: --out ", out, " exists and is not an empty folder",
                          staging.empty() ? "" : cat(" (it holds ", staging, ", what a make-folder that was stopped "
                                                     "had written)"),
                          "; give a new or empty one"));
  }
  const std::string done = make_folder_whole(out, {"train", "val"}, [&](const std::string& into) {
    return synthetic ? make_synthetic(args, into, out) : make_from_idx(args, into, out);
  });
  std::printf("%s\n", done.c_str());
  return 0;
}

}  // namespace glassbox::cli
