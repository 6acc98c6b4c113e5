// data/jpeg.h: JPEG decoding and encoding through TurboJPEG (libjpeg-turbo),
// owned by RAII handles. This header does not include turbojpeg.h: the
// library links TurboJPEG privately, and the tools and tests use it through
// these types.
//
// Decoding can scale in the DCT (by n/8): an image that will be shrunk anyway
// is decoded at the smallest scale whose shorter side still covers the size
// asked for, which skips most of the inverse-DCT and colour-conversion work.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace glassbox {

// 8-bit pixels, (height, width, channels) interleaved: 1 grey, 3 RGB, 4 CMYK
// (encoding only).
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
  // Decoded images only: the size the JPEG stores, before any DCT scaling
  // (JpegDecodeOptions::min_shorter_side). Resizing takes its aspect ratio
  // from this size, as torchvision does from the full image.
  int stored_width = 0, stored_height = 0;
};

struct JpegDecodeOptions {
  int channels = 3;  // 1: grey (the luma the JPEG stores), 3: RGB
  // Scale down in the DCT to the smallest size whose shorter side is still at
  // least this; 0 (or an image already smaller): full size.
  int min_shorter_side = 0;
};

// The size the decoder gives for an image of width x height: scaled by the
// smallest of TurboJPEG's factors n/8 (n <= 8) that keeps the shorter side at
// least `min_shorter_side`.
struct ScaledSize {
  int width = 0, height = 0;
  int numerator = 1, denominator = 1;
};
ScaledSize jpeg_scaled_size(int width, int height, int min_shorter_side);

// Images with more pixels than this are refused before anything is allocated
// (a 512-byte file can claim 65,500 x 65,500): PIL's limit, twice its
// decompression-bomb warning.
inline constexpr int64_t kMaxJpegPixels = 178'956'970;

// One TurboJPEG decompressor: one per thread (a handle is not thread-safe).
class JpegDecoder {
 public:
  JpegDecoder();  // throws Error if TurboJPEG cannot make a handle (out of memory)
  ~JpegDecoder();
  JpegDecoder(JpegDecoder&& other) noexcept;
  JpegDecoder& operator=(JpegDecoder&& other) noexcept;
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Decodes `bytes` into `out` (its buffer is reused). Throws SampleError
  // naming `file`: "not a JPEG file (starts with 89 50 4e 47)", or
  // "corrupt JPEG: <TurboJPEG's message>", or an image past kMaxJpegPixels.
  void decode(std::span<const uint8_t> bytes, const std::string& file, const JpegDecodeOptions& options,
              Image& out);

 private:
  [[noreturn]] void throw_and_reset(const std::string& file);
  void reset();  // a fresh handle in place of this one
  void* handle_ = nullptr;  // tjhandle
  bool used_ = false;       // handle_ has decoded a file (Note [Tables outlive their file])
};

struct JpegEncodeOptions {
  int quality = 95;                 // 1..100
  bool subsample_chroma = true;     // 4:2:0 as cameras write, else 4:4:4 (colour images only)
};

class JpegEncoder {
 public:
  JpegEncoder();
  ~JpegEncoder();
  JpegEncoder(JpegEncoder&& other) noexcept;
  JpegEncoder& operator=(JpegEncoder&& other) noexcept;
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // The JPEG file's bytes. Throws ShapeError for an image whose sizes,
  // channels or buffer do not fit, ConfigError for a quality outside 1..100,
  // Error with TurboJPEG's message if it fails (an image past 65,500 pixels wide).
  std::string encode(const Image& image, const JpegEncodeOptions& options = {});

 private:
  void* handle_ = nullptr;  // tjhandle
};

// With a decoder or encoder of the calling thread's own.
void decode_jpeg(std::span<const uint8_t> bytes, const std::string& file, const JpegDecodeOptions& options,
                 Image& out);
std::string encode_jpeg(const Image& image, const JpegEncodeOptions& options = {});

}  // namespace glassbox
