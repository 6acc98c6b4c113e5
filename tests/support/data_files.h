// tests/support/data_files.h: files the data tests read (in a TempDir,
// tests/support/temp_dir.h): IDX files built byte by byte, gzip, and folders of
// small JPEG images made with the library's encoder; error messages.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "data/jpeg.h"
#include "tests/support/strings.h"
#include "tests/support/temp_dir.h"

namespace glassbox::testing {

// Writes `bytes` to `path`, making the folders above it.
void write_file(const std::string& path, std::string_view bytes);
std::string read_whole_file(const std::string& path);

// IDX files: a header of the given magic and dimensions, then the data.
std::string idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, std::string_view data);
std::string idx_images(int count, int rows = 28, int columns = 28, uint64_t seed = 1);  // random pixels
std::string idx_labels(const std::vector<uint8_t>& labels);
std::string gzip(std::string_view bytes);

// A smooth colour image (gradients, no noise): resizes of it are smooth too.
Image smooth_image(int width, int height, int channels, uint64_t seed);

struct FolderOptions {
  std::vector<std::string> classes = {"cat", "dog"};
  int per_class = 3;
  int width = 40, height = 30;
  int channels = 3;
};
// ROOT/<class>/<i>.jpg for each class, images from smooth_image.
void make_jpeg_folder(const std::string& root, const FolderOptions& options);

// The message of the E that f() throws, or a note saying what happened instead.
template <typename E, typename F>
std::string message_of(const F& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("another exception: ") + e.what();
  }
  return "no exception";
}

}  // namespace glassbox::testing
