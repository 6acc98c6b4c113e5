// tests/support/data_files.cpp
#include "tests/support/data_files.h"

#include <stdlib.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace glassbox::testing {

namespace fs = std::filesystem;

void write_file(const std::string& path, std::string_view bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::string idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, std::string_view data) {
  std::string bytes;
  auto put = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  bytes.append(data);
  return bytes;
}

std::string idx_images(int count, int rows, int columns, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string pixels(static_cast<size_t>(count) * rows * columns, '\0');
  for (char& p : pixels) p = static_cast<char>(rng() & 0xff);
  return idx_bytes(0x803, {static_cast<uint32_t>(count), static_cast<uint32_t>(rows), static_cast<uint32_t>(columns)},
                   pixels);
}

std::string idx_labels(const std::vector<uint8_t>& labels) {
  return idx_bytes(0x801, {static_cast<uint32_t>(labels.size())},
                   std::string_view(reinterpret_cast<const char*>(labels.data()), labels.size()));
}

std::string gzip(std::string_view bytes) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}

Image smooth_image(int width, int height, int channels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) / 9007199254740992.0; };
  Image image{.width = width, .height = height, .channels = channels};
  image.pixels.resize(static_cast<size_t>(width) * height * channels);
  for (int c = 0; c < channels; ++c) {
    const double a = 40 + 60 * uniform(), bx = 120 * uniform(), by = 120 * uniform(), phase = 6.28 * uniform();
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const double u = static_cast<double>(x) / width, v = static_cast<double>(y) / height;
        const double value = a + bx * u + by * v + 20 * std::sin(3 * u + 2 * v + phase);
        image.pixels[(static_cast<size_t>(y) * width + x) * channels + c] =
            static_cast<uint8_t>(std::lround(std::fmin(255.0, std::fmax(0.0, value))));
      }
    }
  }
  return image;
}

void make_jpeg_folder(const std::string& root, const FolderOptions& options) {
  uint64_t seed = 1;
  for (const std::string& name : options.classes) {
    for (int i = 0; i < options.per_class; ++i) {
      const Image image = smooth_image(options.width, options.height, options.channels, seed++);
      write_file(root + "/" + name + "/" + std::to_string(i) + ".jpg", encode_jpeg(image, {.quality = 95}));
    }
  }
}

}  // namespace glassbox::testing
