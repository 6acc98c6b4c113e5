// tests/fuzz/fuzz_idx.cpp: arbitrary bytes through the IDX reader
// (data/idx_dataset.h): gunzip, then the images and labels parsers. Input:
// the raw bytes of a file (not NUL-separated words): gzip or IDX or neither.
//
// Images are parsed for three sizes, 28x28 as the datasets use and 1x1 and
// 2x3, which a 512-byte input can fill, so accepted files are reached too.
// Beyond "a DataError or a valid result, never a crash": an accepted file's
// sizes add up exactly, and its labels are all below 10.
#include <string>
#include <string_view>

#include "data/idx_dataset.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

namespace {

void parse_all(std::string_view bytes) {
  constexpr int kSizes[][2] = {{28, 28}, {1, 1}, {2, 3}};
  for (const auto& size : kSizes) {
    fuzz::expect_errors([&] {
      const IdxImages images = parse_idx_images(bytes, "fuzz.idx", size[0], size[1]);
      FUZZ_CHECK(images.count >= 1 && images.rows == size[0] && images.columns == size[1]);
      FUZZ_CHECK(images.pixels.size() == static_cast<size_t>(images.count) * size[0] * size[1]);
      FUZZ_CHECK(bytes.size() == 16 + images.pixels.size());
    });
  }
  fuzz::expect_errors([&] {
    const std::vector<uint8_t> labels = parse_idx_labels(bytes, "fuzz.idx");
    FUZZ_CHECK(!labels.empty() && bytes.size() == 8 + labels.size());
    for (uint8_t label : labels) FUZZ_CHECK(label < kIdxClasses);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  parse_all(bytes);
  fuzz::expect_errors([&] { parse_all(gunzip(bytes, "fuzz.gz")); });
  return 0;
}
