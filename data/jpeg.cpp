// data/jpeg.cpp: TurboJPEG 2.1 (tjDecompressHeader3, tjDecompress2,
// tjCompress2), with its handles owned here.
#include "data/jpeg.h"

#include <turbojpeg.h>

#include <cstdio>
#include <memory>
#include <string_view>
#include <utility>

#include "data/dataset.h"
#include "data/shared.h"

namespace glassbox {
namespace {

std::string first_bytes(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return "it is empty";
  std::string text = "starts with";
  for (size_t i = 0; i < std::min<size_t>(4, bytes.size()); ++i) {
    char byte[4];
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned>(bytes[i]));
    text += ' ';
    text += byte;
  }
  return text;
}

// Note [JPEG warnings]: libjpeg reports some damage as a warning and goes on:
// extraneous bytes before a marker (common in real photo collections, and
// harmless), a bad Huffman code (the rest of that scan becomes grey), and a
// file that ends early ("Premature end of JPEG file": the missing rows are
// grey). TurboJPEG's tjDecompress2 returns -1 for warnings too, with
// tjGetErrorCode() == TJERR_WARNING and the image decoded. We keep warned
// images, as PIL does, except a premature end, which PIL also refuses
// ("image file is truncated"): a cut-off download should be skipped, not
// trained on as half grey. Only the warnings named in kKeptWarnings are
// kept: TurboJPEG 2.1 also returns some errors with the warning code, with
// nothing decoded ("Huffman table 0x07 was not defined": the output buffer
// is left as it was, found by tests/fuzz/fuzz_image_folder).
constexpr std::string_view kKeptWarnings[] = {
    "extraneous bytes before marker",  // "Corrupt JPEG data: 3 extraneous bytes before marker 0xd9"
    "bad Huffman code",                // the rest of the scan grey
    "instead of RST",                  // a lost restart marker: decoding resynchronises
    "unknown JFIF revision number",    // a header field only
    "Unknown Adobe color transform",   // a header field only
    // A baseline scan's spectral selection or approximation fields not 0, 63,
    // 0, 0 (some phones write them): a header field only, which libjpeg
    // ignores; PIL loads these photos.
    "Invalid SOS parameters for sequential JPEG",
};

// Note [A warning hides the file's end]: libjpeg keeps the text of a file's
// first warning only (jpeg_std_error's emit_message prints the first and
// counts the rest), and TurboJPEG hands on that text. So a kept warning
// early in a file (extraneous bytes before a scan) hides a "Premature end"
// after it, and a cut-off file would be trained on half grey. Where a
// warning was kept, the file must therefore reach its end-of-image marker
// (FF D9) itself, found as libjpeg reads: marker by marker from the start,
// each segment skipped by its length (an EXIF thumbnail, with markers of its
// own, lies inside its APP1 segment), entropy-coded data byte by byte (in it
// a 0xFF byte is followed only by 0x00 or a restart marker), stray bytes
// between markers skipped as libjpeg skips them. Whatever follows the end
// marker (a motion photo's video, a vendor's trailer) is not looked at.
bool reaches_end_of_image(std::span<const uint8_t> bytes) {
  size_t i = 2;  // after the start-of-image marker
  while (i + 1 < bytes.size()) {
    const uint8_t marker = bytes[i + 1];
    if (bytes[i] != 0xff || marker == 0xff) {  // data, a stray byte, or a fill byte before a marker
      ++i;
      continue;
    }
    if (marker == 0xd9) return true;
    // Stuffed 0xFF, a restart marker, TEM: no length follows.
    if (marker == 0x00 || (marker >= 0xd0 && marker <= 0xd7) || marker == 0x01) {
      i += 2;
      continue;
    }
    if (i + 3 >= bytes.size()) return false;
    const size_t length = (size_t{bytes[i + 2]} << 8) | bytes[i + 3];  // counts itself, not the marker
    if (length < 2) return false;
    i += 2 + length;
  }
  return false;
}

bool refused(tjhandle handle) {
  if (tjGetErrorCode(handle) == TJERR_FATAL) return true;
  const std::string_view message = tjGetErrorStr2(handle);
  for (const std::string_view kept : kKeptWarnings) {
    if (message.find(kept) != std::string_view::npos) return false;
  }
  return true;
}

// Note [CMYK JPEGs]: CMYK and YCCK JPEGs (Photoshop's; ImageNet holds a few
// dozen) decode only to CMYK in TurboJPEG. Adobe's writers store the values
// inverted (0 = full ink), so R = C * K / 255 on the stored values, which is
// what PIL computes for these files ("CMYK;I", then its cmyk2rgb).
void cmyk_to_output(const std::vector<uint8_t>& cmyk, int channels, Image& out) {
  const size_t pixels = static_cast<size_t>(out.width) * static_cast<size_t>(out.height);
  for (size_t i = 0; i < pixels; ++i) {
    const unsigned k = cmyk[4 * i + 3];
    unsigned rgb[3];
    for (int c = 0; c < 3; ++c) rgb[c] = (cmyk[4 * i + static_cast<size_t>(c)] * k + 127) / 255;
    if (channels == 1) {
      out.pixels[i] = static_cast<uint8_t>((rgb[0] * 299 + rgb[1] * 587 + rgb[2] * 114 + 500) / 1000);  // ITU-R 601 luma
    } else {
      for (int c = 0; c < 3; ++c) out.pixels[3 * i + static_cast<size_t>(c)] = static_cast<uint8_t>(rgb[c]);
    }
  }
}

struct TjFree {
  void operator()(unsigned char* p) const { tjFree(p); }
};

}  // namespace

ScaledSize jpeg_scaled_size(int width, int height, int min_shorter_side) {
  ScaledSize best{width, height, 1, 1};
  if (min_shorter_side <= 0) return best;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  for (int i = 0; factors != nullptr && i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num > f.denom) continue;  // never enlarge in the DCT: the resize does that
    const int w = TJSCALED(width, f), h = TJSCALED(height, f);
    if (std::min(w, h) >= min_shorter_side && static_cast<int64_t>(w) * h < static_cast<int64_t>(best.width) * best.height) {
      best = {w, h, f.num, f.denom};
    }
  }
  return best;
}

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {
  if (handle_ == nullptr) throw Error(cat("TurboJPEG: cannot make a decompressor: ", tjGetErrorStr2(nullptr)));
}
JpegDecoder::~JpegDecoder() {
  if (handle_ != nullptr) tjDestroy(handle_);
}
JpegDecoder::JpegDecoder(JpegDecoder&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), used_(std::exchange(other.used_, false)) {}
JpegDecoder& JpegDecoder::operator=(JpegDecoder&& other) noexcept {
  std::swap(handle_, other.handle_);
  std::swap(used_, other.used_);
  return *this;
}

// Note [TurboJPEG after an error]: in TurboJPEG 2.1, a tjDecompressHeader3
// that fails leaves the handle's libjpeg state half-way through the old
// file's markers, and the next, valid file then fails too ("Unsupported
// marker type"). A handle that has failed is replaced by a fresh one.
//
// Note [TurboJPEG after a warning]: a decode that ends with a kept warning
// has taken libjpeg through its error paths too, where Note [TurboJPEG after
// an error] shows the handle's state can outlive the file. Rather than
// trust that state, the handle is replaced after a warning as after an
// error, so that every file decodes as it would on a fresh handle, on
// whichever loader thread it lands.
// Note [Tables outlive their file]: libjpeg keeps the quantization and
// Huffman tables a file defines in its decompressor, for "abbreviated"
// streams that define them once for many images, and a TurboJPEG handle keeps
// one decompressor. So a file that defines no table of its own decoded with
// the tables of whatever file that handle decoded before: its pixels
// depended on which loader thread it landed on and what that thread had read
// (found by tests/fuzz/fuzz_image_folder: a file without its quantization
// table decoded to other pixels on each thread, and was refused on a fresh
// one). Every decode after a handle's first starts on a fresh handle, which
// costs an allocation, small beside decoding a file.
void JpegDecoder::reset() {
  tjhandle fresh = tjInitDecompress();
  if (fresh == nullptr) throw Error(cat("TurboJPEG: cannot make a fresh decompressor: ", tjGetErrorStr2(nullptr)));
  if (handle_ != nullptr) tjDestroy(handle_);
  handle_ = fresh;
}

void JpegDecoder::throw_and_reset(const std::string& file) {
  SampleError error(file, cat("corrupt JPEG: ", tjGetErrorStr2(handle_)));
  reset();
  throw error;
}

void JpegDecoder::decode(std::span<const uint8_t> bytes, const std::string& file, const JpegDecodeOptions& options,
                         Image& out) {
  if (options.channels != 1 && options.channels != 3) {
    throw ConfigError(cat("JPEG decoding: channels must be 1 (grey) or 3 (RGB), got ", options.channels));
  }
  if (used_) reset();  // Note [Tables outlive their file]
  used_ = true;
  if (bytes.size() < 3 || bytes[0] != 0xff || bytes[1] != 0xd8) {
    if (bytes.size() >= 2 && bytes[0] == 0xff && bytes[1] == 0xd8) {
      throw SampleError(file, cat("corrupt JPEG: the file ends after its first ", bytes.size(), " bytes"));
    }
    throw SampleError(file, cat("not a JPEG file (", first_bytes(bytes), ")"));
  }
  const auto* data = bytes.data();
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  // A header that ends with a kept warning (extraneous bytes before a
  // marker) is read whole; the decode below meets the warning again.
  if (tjDecompressHeader3(handle_, data, size, &width, &height, &subsampling, &colorspace) != 0) {
    if (refused(handle_)) throw_and_reset(file);
    reset();  // Note [TurboJPEG after a warning]
  }
  // TurboJPEG 2.1 accepts a stream without a frame header (tables only, or
  // a file cut before its frame) and reports a size of 0 x 0 for it (found
  // by tests/fuzz/fuzz_jpeg).
  if (width < 1 || height < 1) {
    throw SampleError(file, cat("corrupt JPEG: no image in its ", bytes.size(),
                                " bytes (no frame header: a file cut short, or tables only)"));
  }
  if (static_cast<int64_t>(width) * height > kMaxJpegPixels) {
    throw SampleError(file, cat("an image of ", width, "x", height, " has more than ", grouped(kMaxJpegPixels),
                                " pixels, the most we decode"));
  }
  const ScaledSize scaled = jpeg_scaled_size(width, height, options.min_shorter_side);
  out.width = scaled.width;
  out.height = scaled.height;
  out.stored_width = width;
  out.stored_height = height;
  out.channels = options.channels;
  out.pixels.resize(static_cast<size_t>(scaled.width) * static_cast<size_t>(scaled.height) *
                    static_cast<size_t>(options.channels));
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  thread_local std::vector<uint8_t> cmyk_pixels;
  if (cmyk) cmyk_pixels.resize(static_cast<size_t>(scaled.width) * static_cast<size_t>(scaled.height) * 4);
  const int format = cmyk ? TJPF_CMYK : options.channels == 1 ? TJPF_GRAY : TJPF_RGB;
  // TJFLAG_LIMITSCANS: a progressive JPEG of a few kB with thousands of
  // scans takes minutes to decode (CVE-2018-11813 and kin); refuse it.
  if (tjDecompress2(handle_, data, size, cmyk ? cmyk_pixels.data() : out.pixels.data(), scaled.width, 0,
                    scaled.height, format, TJFLAG_LIMITSCANS) != 0) {
    if (refused(handle_)) throw_and_reset(file);
    if (!reaches_end_of_image(bytes)) {  // Note [A warning hides the file's end]
      const std::string warning = tjGetErrorStr2(handle_);
      reset();
      throw SampleError(file, cat("corrupt JPEG: ", warning,
                                  ", and the file ends before its end-of-image marker"));
    }
    reset();  // Note [TurboJPEG after a warning]
  }
  if (cmyk) cmyk_to_output(cmyk_pixels, options.channels, out);
}

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {
  if (handle_ == nullptr) throw Error(cat("TurboJPEG: cannot make a compressor: ", tjGetErrorStr2(nullptr)));
}
JpegEncoder::~JpegEncoder() {
  if (handle_ != nullptr) tjDestroy(handle_);
}
JpegEncoder::JpegEncoder(JpegEncoder&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
JpegEncoder& JpegEncoder::operator=(JpegEncoder&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

std::string JpegEncoder::encode(const Image& image, const JpegEncodeOptions& options) {
  const bool channels_ok = image.channels == 1 || image.channels == 3 || image.channels == 4;
  const int64_t expected = static_cast<int64_t>(image.width) * image.height * image.channels;
  if (image.width < 1 || image.height < 1 || !channels_ok || static_cast<int64_t>(image.pixels.size()) != expected) {
    throw ShapeError(cat("JPEG encoding: an image of ", image.width, "x", image.height, " with ", image.channels,
                         " channels (1, 3 or 4) and ", image.pixels.size(), " bytes of pixels does not fit"));
  }
  if (options.quality < 1 || options.quality > 100) {
    throw ConfigError(cat("JPEG encoding: quality must be from 1 to 100, got ", options.quality));
  }
  const int format = image.channels == 1 ? TJPF_GRAY : image.channels == 3 ? TJPF_RGB : TJPF_CMYK;
  const int subsampling = image.channels == 1 ? TJSAMP_GRAY : options.subsample_chroma ? TJSAMP_420 : TJSAMP_444;
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int status = tjCompress2(handle_, image.pixels.data(), image.width, 0, image.height, format, &jpeg, &size,
                                 subsampling, options.quality, 0);
  const std::unique_ptr<unsigned char, TjFree> owned(jpeg);
  if (status != 0) {
    throw Error(cat("JPEG encoding of an image of ", image.width, "x", image.height, " failed: ",
                    tjGetErrorStr2(handle_)));
  }
  return std::string(reinterpret_cast<const char*>(jpeg), size);
}

void decode_jpeg(std::span<const uint8_t> bytes, const std::string& file, const JpegDecodeOptions& options,
                 Image& out) {
  thread_local JpegDecoder decoder;
  decoder.decode(bytes, file, options, out);
}

std::string encode_jpeg(const Image& image, const JpegEncodeOptions& options) {
  thread_local JpegEncoder encoder;
  return encoder.encode(image, options);
}

}  // namespace glassbox
