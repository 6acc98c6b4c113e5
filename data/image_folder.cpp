// data/image_folder.cpp: listing with std::filesystem, reading with read(2),
// decoding with TurboJPEG (data/jpeg.h), and the fused resize (data/resize.h).
#include "data/image_folder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "data/idx_dataset.h"
#include "data/jpeg.h"
#include "data/resize.h"
#include "data/shared.h"

namespace glassbox {
namespace {

namespace fs = std::filesystem;

// The most bytes of one image file read: 256 MiB. A photo's JPEG is a few
// megabytes, a 100-megapixel camera's some tens of megabytes; every sample
// is decoded and resized to the network's input while its worker holds the
// whole file, so a file past this would stall the loader and take its
// memory for one sample.
constexpr uint64_t kMaxImageFileBytes = uint64_t{256} << 20;
constexpr std::string_view kImageLimit = "an image file (each is read whole, to be decoded and resized)";

// A name that ends in .jpg or .jpeg, in any case, as torchvision's
// ImageFolder tests it (a name that is only ".jpg" too, which has no
// extension to std::filesystem).
bool is_jpeg_name(const fs::path& path) {
  std::string name = path.filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name.ends_with(".jpg") || name.ends_with(".jpeg");
}

// The names of the entries of `folder` that `keep` accepts, sorted. Throws
// DataError if the folder cannot be listed (missing, not a folder).
template <typename Keep>
std::vector<std::string> sorted_entries(const std::string& folder, const Keep& keep) {
  std::vector<std::string> names;
  std::error_code error;
  fs::directory_iterator it(folder, error);
  for (; !error && it != fs::directory_iterator(); it.increment(error)) {
    if (keep(*it)) names.push_back(it->path().filename().string());
  }
  if (error) throw DataError(cat(folder, ": cannot list the folder: ", error.message()));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

const std::vector<float>& default_mean(int channels) {
  static const std::vector<float> grey = {kFashionMnistMean};
  return channels == 3 ? kImageNetMean : grey;
}

const std::vector<float>& default_stddev(int channels) {
  static const std::vector<float> grey = {kFashionMnistStd};
  return channels == 3 ? kImageNetStd : grey;
}

int resize_side_for(int height, int width) {
  return static_cast<int>(std::lround(std::max(height, width) * 8.0 / 7.0));
}

ImageFolder::ImageFolder(std::string root, ImageFolderOptions options)
    : root_(std::move(root)), options_(std::move(options)) {
  const Shape& s = options_.sample;
  if (s.rank() != 3 || (s[0] != 1 && s[0] != 3) || s[1] > 65'500 || s[2] > 65'500) {
    throw ConfigError(cat("image folder ", root_, ": a sample must be (1 or 3, H, W) with H, W up to 65,500; got ",
                          s.str()));
  }
  const auto channels = static_cast<size_t>(s[0]);
  if (options_.mean.empty()) options_.mean = default_mean(static_cast<int>(channels));
  if (options_.stddev.empty()) options_.stddev = default_stddev(static_cast<int>(channels));
  if (options_.mean.size() != channels || options_.stddev.size() != channels) {
    throw ConfigError(cat("image folder ", root_, ": ", options_.mean.size(), " means and ", options_.stddev.size(),
                          " standard deviations for ", channels, " channels; give one of each per channel"));
  }
  // A link that cannot be followed (to nothing, or in a loop) may be a class
  // folder whose target went away: leaving it out would shift every later
  // class's label, so it is named instead.
  class_names_ = sorted_entries(root_, [](const fs::directory_entry& e) {
    std::error_code error;
    if (e.is_symlink(error)) {
      (void)fs::status(e.path(), error);  // sets `error` for a target that is missing or a loop
      if (error) {
        throw DataError(cat(e.path().string(), ": a link that cannot be followed (", error.message(),
                            "); a class folder must be a folder"));
      }
    }
    return e.is_directory(error);
  });
  if (class_names_.empty()) {
    throw DataError(cat(root_, ": no class folders: expected ", root_, "/<class>/*.jpg, one folder per class"));
  }
  name_start_.push_back(0);
  for (size_t label = 0; label < class_names_.size(); ++label) {
    const std::string folder = (fs::path(root_) / class_names_[label]).string();
    // Every entry with an image's name but a folder's: a dangling link or a
    // pipe so named is an image that cannot be read, skipped and counted or
    // stopping the run as on_bad_sample says, never left out unseen.
    const std::vector<std::string> files = sorted_entries(folder, [](const fs::directory_entry& e) {
      std::error_code ignored;
      return !e.is_directory(ignored) && is_jpeg_name(e.path());
    });
    if (files.empty()) {
      throw DataError(cat(folder, ": class folder '", class_names_[label], "' has no .jpg or .jpeg files"));
    }
    for (const std::string& file : files) {
      names_ += class_names_[label] + "/" + file;
      name_start_.push_back(static_cast<int64_t>(names_.size()));
      labels_.push_back(static_cast<int32_t>(label));
    }
  }
}

std::string ImageFolder::describe() const {
  const Shape& s = options_.sample;
  return cat(options_.name, ": ", grouped(size()), " images in ", classes(), " classes, prepared to ", s[0], "x", s[1],
             "x", s[2], " (", root_, ")");
}

std::string ImageFolder::path(int64_t index) const {
  check_index(*this, index);
  const auto i = static_cast<size_t>(index);
  return (fs::path(root_) / names_.substr(static_cast<size_t>(name_start_[i]),
                                          static_cast<size_t>(name_start_[i + 1] - name_start_[i])))
      .string();
}

bool ImageFolder::read_bytes(int64_t index, std::string& bytes, std::string& reason) const {
  return read_file(path(index), bytes, reason, kMaxImageFileBytes, kImageLimit);
}

int ImageFolder::load(int64_t index, std::span<float> pixels, SampleMode mode, std::mt19937_64& rng) const {
  check_load_arguments(*this, index, pixels);
  const std::string file = path(index);
  thread_local std::string bytes;
  std::string reason;
  try {
    if (!read_bytes(index, bytes, reason)) {
      throw SampleError(file, cat("cannot read: ", reason));
    }
    prepare_jpeg_sample({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, file, options_, mode, rng,
                        pixels);
  } catch (const SampleError& e) {
    if (options_.on_bad_sample == OnBadSample::kSkip) throw;
    throw DataError(cat(e.what(), " (an unreadable image stops this run; --on-bad-sample skip leaves such images "
                                  "out, named and counted)"));
  }
  return labels_[static_cast<size_t>(index)];
}

void prepare_jpeg_sample(std::span<const uint8_t> bytes, const std::string& file, const ImageFolderOptions& options,
                         SampleMode mode, std::mt19937_64& rng, std::span<float> pixels) {
  const int channels = static_cast<int>(options.sample[0]);
  const int height = static_cast<int>(options.sample[1]), width = static_cast<int>(options.sample[2]);
  const int side = resize_side_for(height, width);
  thread_local Image image;
  decode_jpeg(bytes, file, {.channels = channels, .min_shorter_side = side}, image);

  ResizeCropOptions o{.crop_width = width, .crop_height = height};
  // The resized size from the stored image's aspect ratio, as torchvision's
  // Resize takes it from the full image: the DCT-scaled sides are each
  // rounded up, and their ratio would move the longer side by a pixel for
  // about a third of photo sizes.
  const int64_t stored_width = image.stored_width, stored_height = image.stored_height;
  const bool portrait = stored_width <= stored_height;
  const int64_t longer = static_cast<int64_t>(side) * (portrait ? stored_height : stored_width) /
                         (portrait ? stored_width : stored_height);
  o.resized_width = portrait ? side : static_cast<int>(longer);
  o.resized_height = portrait ? static_cast<int>(longer) : side;
  if (mode == SampleMode::kTraining) {
    o.crop_x = static_cast<int>(draw_below(rng, o.resized_width - width + 1));
    o.crop_y = static_cast<int>(draw_below(rng, o.resized_height - height + 1));
    o.flip = (rng() >> 63) != 0;
  } else {
    o.crop_x = static_cast<int>(std::nearbyint((o.resized_width - width) / 2.0));  // half to even, as Python's round
    o.crop_y = static_cast<int>(std::nearbyint((o.resized_height - height) / 2.0));
  }
  const std::vector<float>& mean = options.mean.empty() ? default_mean(channels) : options.mean;
  const std::vector<float>& stddev = options.stddev.empty() ? default_stddev(channels) : options.stddev;
  for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
    o.mean[c] = mean[c];
    o.stddev[c] = stddev[c];
  }
  resize_crop_normalise(image, o, pixels);
}

}  // namespace glassbox
