// tests/test_jpeg_and_resize.cpp: JPEG decoding and encoding (data/jpeg.h)
// and the fused resize-crop-normalise (data/resize.h), against simple
// references: a constant image stays constant, a ramp shrunk 2x or enlarged
// 2x has the analytic values, the identity size is exact, and any geometry
// matches a direct (non-separable, double precision) evaluation of the filter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/resize.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::message_of;
using testing::smooth_image;

std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

Image decoded(const std::string& jpeg, const JpegDecodeOptions& options = {}) {
  Image image;
  decode_jpeg(bytes_of(jpeg), "test.jpg", options, image);
  return image;
}

double mean_abs_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(a[i] - b[i]);
  return sum / static_cast<double>(a.size());
}

TEST(Jpeg, EncodeThenDecodeGivesTheImageBack) {
  for (int channels : {1, 3}) {
    const Image image = smooth_image(64, 48, channels, 5);
    const Image back = decoded(encode_jpeg(image, {.quality = 95}), {.channels = channels});
    ASSERT_EQ(back.width, 64);
    ASSERT_EQ(back.height, 48);
    ASSERT_EQ(back.channels, channels);
    EXPECT_LT(mean_abs_difference(back.pixels, image.pixels), 2.0) << channels << " channels";
  }
}

TEST(Jpeg, ColourDecodedAsGreyIsTheLuma) {
  const Image rgb = smooth_image(32, 32, 3, 9);
  const std::string jpeg = encode_jpeg(rgb, {.quality = 100, .subsample_chroma = false});
  const Image colour = decoded(jpeg, {.channels = 3});
  const Image grey = decoded(jpeg, {.channels = 1});
  std::vector<uint8_t> luma(32 * 32);
  for (size_t i = 0; i < luma.size(); ++i) {
    const uint8_t* p = &colour.pixels[3 * i];
    luma[i] = static_cast<uint8_t>(std::lround(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]));
  }
  EXPECT_LT(mean_abs_difference(grey.pixels, luma), 1.0);
}

TEST(Jpeg, DctScalingPicksTheSmallestFactorThatCoversTheSide) {
  // 500x375 for a shorter side of 256: 6/8 gives 375x282 (5/8 would give 313x235).
  ScaledSize s = jpeg_scaled_size(500, 375, 256);
  EXPECT_EQ(s.width, 375);
  EXPECT_EQ(s.height, 282);
  EXPECT_EQ(s.numerator * 8, 6 * s.denominator);
  s = jpeg_scaled_size(500, 375, 37);  // 1/8: 63x47
  EXPECT_EQ(s.width, 63);
  EXPECT_EQ(s.height, 47);
  s = jpeg_scaled_size(100, 50, 256);  // smaller than asked: full size, never enlarged in the DCT
  EXPECT_EQ(s.width, 100);
  EXPECT_EQ(s.height, 50);
  EXPECT_EQ(s.numerator, s.denominator);

  // The scaled decode is the image, smaller.
  const Image image = smooth_image(160, 120, 3, 2);
  const std::string jpeg = encode_jpeg(image);
  const Image quarter = decoded(jpeg, {.channels = 3, .min_shorter_side = 30});
  ASSERT_EQ(quarter.width, 40);
  ASSERT_EQ(quarter.height, 30);
  EXPECT_LT(mean_abs_difference(quarter.pixels, resize_image(image, 40, 30).pixels), 3.0);
}

TEST(Jpeg, CmykJpegsAreDecodedAsAdobeInvertedCmyk) {
  Image cmyk{.width = 16, .height = 16, .channels = 4};
  for (int i = 0; i < 256; ++i) cmyk.pixels.insert(cmyk.pixels.end(), {255, 128, 0, 200});
  const Image rgb = decoded(encode_jpeg(cmyk, {.quality = 100}), {.channels = 3});
  ASSERT_EQ(rgb.channels, 3);
  EXPECT_NEAR(rgb.pixels[0], 200, 3);        // 255 * 200 / 255
  EXPECT_NEAR(rgb.pixels[1], 100, 3);        // 128 * 200 / 255
  EXPECT_NEAR(rgb.pixels[2], 0, 3);
}

TEST(Jpeg, DecodersOnSeveralThreadsAgree) {
  const std::string jpeg = encode_jpeg(smooth_image(200, 150, 3, 4));
  const Image expected = decoded(jpeg, {.min_shorter_side = 60});
  std::vector<Image> results(4);
  std::vector<std::thread> threads;
  for (Image& result : results) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) decode_jpeg(bytes_of(jpeg), "t.jpg", {.min_shorter_side = 60}, result);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Image& result : results) EXPECT_EQ(result.pixels, expected.pixels);
}

// Changes the size in the SOF0 frame header of an encoded JPEG.
std::string with_size(std::string jpeg, int width, int height) {
  for (size_t i = 2; i + 8 < jpeg.size(); ++i) {
    if (static_cast<uint8_t>(jpeg[i]) == 0xff && static_cast<uint8_t>(jpeg[i + 1]) == 0xc0) {
      jpeg[i + 5] = static_cast<char>(height >> 8);
      jpeg[i + 6] = static_cast<char>(height & 0xff);
      jpeg[i + 7] = static_cast<char>(width >> 8);
      jpeg[i + 8] = static_cast<char>(width & 0xff);
      return jpeg;
    }
  }
  return jpeg;
}

// The JPEG without its quantization tables (every DQT segment before the scan removed).
std::string without_quantization_tables(std::string jpeg) {
  for (size_t i = 2; i + 3 < jpeg.size();) {
    const auto marker = static_cast<uint8_t>(jpeg[i + 1]);
    if (static_cast<uint8_t>(jpeg[i]) != 0xff || marker == 0xda) break;  // the scan: tables come before it
    const size_t length = static_cast<size_t>(static_cast<uint8_t>(jpeg[i + 2])) << 8 | static_cast<uint8_t>(jpeg[i + 3]);
    if (marker == 0xdb) {
      jpeg.erase(i, 2 + length);
    } else {
      i += 2 + length;
    }
  }
  return jpeg;
}

// Note [Tables outlive their file]: a file that defines no quantization
// table is refused, however many files the thread decoded before, instead of
// decoding with the last one's tables.
TEST(Jpeg, AFileWithoutItsTablesIsRefusedWhateverTheThreadDecodedBefore) {
  const std::string jpeg = encode_jpeg(smooth_image(32, 32, 3, 2));
  const std::string stripped = without_quantization_tables(jpeg);
  ASSERT_LT(stripped.size(), jpeg.size()) << "no DQT segment found";
  JpegDecoder decoder;
  Image image;
  decoder.decode(bytes_of(jpeg), "with.jpg", {}, image);
  EXPECT_EQ(image.width, 32);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(message_of<SampleError>([&] { decoder.decode(bytes_of(stripped), "without.jpg", {}, image); }),
              "without.jpg: corrupt JPEG: Quantization table 0x00 was not defined");
    decoder.decode(bytes_of(jpeg), "with.jpg", {}, image);  // and a whole file still decodes after it
    EXPECT_EQ(image.width, 32);
  }
}

TEST(Jpeg, UndecodableBytesAreSampleErrorsNamingTheFile) {
  const std::string good = encode_jpeg(smooth_image(256, 256, 3, 1));
  auto message = [](const std::string& bytes) {
    return message_of<SampleError>([&] { decoded(bytes); });
  };
  EXPECT_EQ(message("\x89PNG\r\n\x1a\n"), "test.jpg: not a JPEG file (starts with 89 50 4e 47)");
  EXPECT_EQ(message(""), "test.jpg: not a JPEG file (it is empty)");
  EXPECT_EQ(message(good.substr(0, 2)), "test.jpg: corrupt JPEG: the file ends after its first 2 bytes");
  // A JPEG start, then nothing a JPEG has.
  EXPECT_TRUE(contains(message("\xff\xd8\xff" + std::string(100, 'x')), "test.jpg: corrupt JPEG: ")) << message("\xff\xd8\xff");
  // Cut in the middle of its data: libjpeg would fill the rest with grey (Note [JPEG warnings]).
  EXPECT_EQ(message(good.substr(0, good.size() * 3 / 4)), "test.jpg: corrupt JPEG: Premature end of JPEG file");
  EXPECT_EQ(message(with_size(good, 20000, 20000)),
            "test.jpg: an image of 20000x20000 has more than 178,956,970 pixels, the most we decode");
  // Headers and quantisation tables, no frame: TurboJPEG reads it as a
  // tables-only stream and reports a size of 0x0 (found by fuzz_jpeg), as it
  // does for a photo cut before its frame header.
  const std::string tables_only(
      "\xff\xd8\xff\xe0\x00\x10\x4a\x46\x49\x46\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xdb\x00\x43"
      "\x00\x14\x0e\x0f\x12\x0f\x00\x00\x00\x00\x00\x00\x00\x00\xff\xd8\xff\xe0\x00\x10\x4a\x46\x49\x46"
      "\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xdb\x00\x43\x00\x1b\x12\x14\x17\x14\x11\x1b\x17\x16"
      "\x17\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x1e\x1c\x1b\x20\x28\x42\x2b\x28\x25\x00\x00\x00\x0d"
      "\x14\x12\x10\x12\x17\x15\x14\x18\x1e\x32\x25\x28\x51\x3a\x3d\x30\x42\x60\x55\x65\x64\x21\x1e",
      119);  // tests/fuzz/corpus/fuzz_jpeg/tables_only.jpg
  EXPECT_EQ(message(tables_only),
            "test.jpg: corrupt JPEG: no image in its 119 bytes (no frame header: a file cut short, or tables only)");
  EXPECT_EQ(message(good.substr(0, 100)),
            "test.jpg: corrupt JPEG: no image in its 100 bytes (no frame header: a file cut short, or tables only)");
  // A scan that names an undefined Huffman table, in a file cut short:
  // TurboJPEG returns it with the warning code and decodes nothing, so it is
  // refused (Note [JPEG warnings]); kept, the output was whatever the buffer
  // held before (found by fuzz_image_folder).
  const std::string undefined_table =
      testing::read_whole_file(std::string(GLASSBOX_TEST_DATA_DIR) + "/jpeg/undefined_huffman_table.jpg");
  EXPECT_EQ(message(undefined_table), "test.jpg: corrupt JPEG: Huffman table 0x07 was not defined");
  EXPECT_EQ(message_of<ConfigError>([&] { decoded(good, {.channels = 2}); }),
            "JPEG decoding: channels must be 1 (grey) or 3 (RGB), got 2");
  Image kept;
  decode_jpeg(bytes_of(good), "f", {}, kept);
  EXPECT_EQ(kept.width, 256) << "a failed decode left the thread's decoder broken (Note [TurboJPEG after an error])";
}

// Note [JPEG warnings]: stray bytes before a marker are a warning, and the
// image is kept, whether libjpeg meets them in the header (before the scan)
// or after the scan (before the end-of-image marker).
// Note [A warning hides the file's end]: behind such a warning, a file cut
// short is still refused, though libjpeg reports only the first warning.
std::string with_bytes_before(const std::string& jpeg, std::string_view marker) {
  const size_t at = jpeg.rfind(marker);
  EXPECT_NE(at, std::string::npos);
  return jpeg.substr(0, at) + "abc" + jpeg.substr(at);
}

TEST(Jpeg, StrayBytesAreKeptButNotACutBehindThem) {
  const std::string good = encode_jpeg(smooth_image(64, 48, 3, 1));
  const Image reference = decoded(good);
  for (const std::string_view marker : {std::string_view("\xff\xda"), std::string_view("\xff\xd9")}) {
    const std::string what = marker[1] == '\xda' ? "before the scan" : "before the end";
    const Image kept = decoded(with_bytes_before(good, marker));
    EXPECT_EQ(kept.pixels, reference.pixels) << what;
  }
  const std::string stray = with_bytes_before(good, "\xff\xda");
  EXPECT_EQ(message_of<SampleError>([&] { decoded(stray.substr(0, stray.size() * 3 / 4)); }),
            "test.jpg: corrupt JPEG: Corrupt JPEG data: 3 extraneous bytes before marker 0xda, and the file ends "
            "before its end-of-image marker");
  Image after;
  decode_jpeg(bytes_of(good), "f", {}, after);
  EXPECT_EQ(after.pixels, reference.pixels) << "a refused file left the thread's decoder changed";
  // What follows the end marker (a motion photo's video, a trailer) is not
  // read, whatever markers its bytes seem to hold.
  const std::string trailer = with_bytes_before(good, "\xff\xd9") + std::string("\xff\xda\x00\x08junk", 8);
  EXPECT_EQ(decoded(trailer).pixels, reference.pixels);
}

// Note [JPEG warnings]: a baseline scan whose header holds spectral
// selection fields other than 0 and 63 (as some phones write) is a warning
// about the header only; the image decodes whole, as PIL loads it.
TEST(Jpeg, ABaselineScanWithOddSpectralFieldsIsKept) {
  const std::string good = encode_jpeg(smooth_image(64, 48, 3, 1));
  std::string odd = good;
  const size_t sos = odd.find("\xff\xda");
  ASSERT_NE(sos, std::string::npos);
  const auto components = static_cast<size_t>(static_cast<unsigned char>(odd[sos + 4]));
  const size_t se = sos + 5 + 2 * components + 1;  // after Ns, the components' pairs and Ss
  ASSERT_EQ(static_cast<unsigned char>(odd[se]), 63);
  odd[se] = 0;
  EXPECT_EQ(decoded(odd).pixels, decoded(good).pixels);
}

TEST(Jpeg, EncodingChecksItsImageAndQuality) {
  Image image = smooth_image(8, 8, 3, 1);
  EXPECT_EQ(message_of<ConfigError>([&] { encode_jpeg(image, {.quality = 0}); }),
            "JPEG encoding: quality must be from 1 to 100, got 0");
  image.pixels.pop_back();
  EXPECT_EQ(message_of<ShapeError>([&] { encode_jpeg(image); }),
            "JPEG encoding: an image of 8x8 with 3 channels (1, 3 or 4) and 191 bytes of pixels does not fit");
  const Image wide{.width = 70000, .height = 1, .channels = 1, .pixels = std::vector<uint8_t>(70000, 7)};
  const std::string failed = message_of<Error>([&] { encode_jpeg(wide); });
  EXPECT_TRUE(contains(failed, "JPEG encoding of an image of 70000x1 failed: ")) << failed;
  EXPECT_TRUE(contains(failed, "65500")) << "TurboJPEG's own message: " << failed;
}

// ---- resize ---------------------------------------------------------------------------------------------

// The output in pixel units: mean 0, stddev 1/255 makes (v/255 - 0)/(1/255) = v.
ResizeCropOptions in_pixel_units(ResizeCropOptions o) {
  o.stddev = {1.0f / 255, 1.0f / 255, 1.0f / 255};
  return o;
}

std::vector<float> resized(const Image& image, const ResizeCropOptions& o) {
  std::vector<float> out(static_cast<size_t>(image.channels) * o.crop_width * o.crop_height);
  resize_crop_normalise(image, o, out);
  return out;
}

// A one-row-per-value image: pixel (x, y) = f(x), in every channel.
Image ramp(int width, int height, int channels, int (*f)(int)) {
  Image image{.width = width, .height = height, .channels = channels};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) image.pixels.push_back(static_cast<uint8_t>(f(x)));
    }
  }
  return image;
}

TEST(Resize, AConstantImageStaysConstant) {
  Image flat{.width = 37, .height = 23, .channels = 3};
  for (int i = 0; i < 37 * 23; ++i) flat.pixels.insert(flat.pixels.end(), {200, 100, 50});
  for (const auto& [w, h] : {std::pair{11, 7}, std::pair{90, 61}, std::pair{37, 23}, std::pair{5, 80}}) {
    const ResizeCropOptions o{.resized_width = w, .resized_height = h, .crop_x = w / 3, .crop_y = h / 4,
                              .crop_width = w - w / 3, .crop_height = h - h / 4, .flip = true,
                              .mean = {0.5f, 0.4f, 0.3f}, .stddev = {0.2f, 0.3f, 0.4f}};
    const std::vector<float> out = resized(flat, o);
    const size_t plane = static_cast<size_t>(o.crop_width) * o.crop_height;
    for (size_t c = 0; c < 3; ++c) {
      const float expected = (flat.pixels[c] / 255.0f - o.mean[c]) / o.stddev[c];
      for (size_t i = 0; i < plane; ++i) ASSERT_NEAR(out[c * plane + i], expected, 1e-5) << w << "x" << h;
    }
  }
}

TEST(Resize, ShrinkingARampByTwoGivesItsValueAtTheWindowCentre) {
  // v(x) = 2x at source pixel x; output i covers source pixels around 2i + 0.5.
  const Image image = ramp(64, 4, 1, [](int x) { return 2 * x; });
  const std::vector<float> out =
      resized(image, in_pixel_units({.resized_width = 32, .resized_height = 2, .crop_width = 32, .crop_height = 2}));
  for (int i = 1; i < 31; ++i) EXPECT_NEAR(out[i], 4 * i + 1, 1e-3) << i;  // the borders are clipped windows
}

TEST(Resize, EnlargingARampByTwoIsBilinear) {
  // Output i samples the source at (i + 0.5) / 2 - 0.5 in pixel-centre coordinates.
  const Image image = ramp(16, 2, 1, [](int x) { return 10 * x; });
  const std::vector<float> out =
      resized(image, in_pixel_units({.resized_width = 32, .resized_height = 4, .crop_width = 32, .crop_height = 4}));
  for (int i = 1; i < 31; ++i) EXPECT_NEAR(out[i], 10 * ((i + 0.5) / 2 - 0.5), 1e-3) << i;
}

TEST(Resize, TheIdentitySizeIsExactAndCropsAndFlipsMoveValuesOnly) {
  const Image image = smooth_image(30, 20, 3, 7);
  const ResizeCropOptions o{.resized_width = 30, .resized_height = 20, .crop_x = 4, .crop_y = 3, .crop_width = 20,
                            .crop_height = 10, .mean = {0.0f, 0.0f, 0.0f}, .stddev = {1.0f, 1.0f, 1.0f}};
  ResizeCropOptions flipped = o;
  flipped.flip = true;
  const std::vector<float> out = resized(image, o), mirror = resized(image, flipped);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 10; ++y) {
      for (int x = 0; x < 20; ++x) {
        const float source = image.pixels[((y + 3) * 30 + x + 4) * 3 + c] * (1.0f / 255.0f);
        ASSERT_EQ(out[(c * 10 + y) * 20 + x], source);
        ASSERT_EQ(mirror[(c * 10 + y) * 20 + (19 - x)], source);
      }
    }
  }
}

// The filter evaluated directly: every output pixel a weighted sum over the
// whole source, weights the product of the two axes' triangles.
double tri(double distance, double radius) { return std::max(0.0, 1.0 - std::abs(distance) / radius); }

std::vector<double> axis_row(int in, int out, int i) {
  const double scale = static_cast<double>(in) / out, radius = std::max(scale, 1.0), centre = (i + 0.5) * scale;
  std::vector<double> w(static_cast<size_t>(in));
  double sum = 0.0;
  for (int x = 0; x < in; ++x) {
    // PIL's window: the source pixels [floor(centre - radius + 0.5), floor(centre + radius + 0.5)).
    const bool inside = x >= std::floor(centre - radius + 0.5) && x < std::floor(centre + radius + 0.5);
    w[static_cast<size_t>(x)] = inside ? tri(x + 0.5 - centre, radius) : 0.0;
    sum += w[static_cast<size_t>(x)];
  }
  for (double& v : w) v /= sum;
  return w;
}

TEST(Resize, AnyGeometryMatchesTheDirectEvaluation) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 12; ++trial) {
    const int w = 5 + static_cast<int>(rng() % 60), h = 5 + static_cast<int>(rng() % 60);
    const int rw = 3 + static_cast<int>(rng() % 80), rh = 3 + static_cast<int>(rng() % 80);
    const int cw = 1 + static_cast<int>(rng() % static_cast<uint64_t>(rw)), ch = 1 + static_cast<int>(rng() % static_cast<uint64_t>(rh));
    const int cx = static_cast<int>(rng() % static_cast<uint64_t>(rw - cw + 1)), cy = static_cast<int>(rng() % static_cast<uint64_t>(rh - ch + 1));
    Image image{.width = w, .height = h, .channels = 3};
    for (int i = 0; i < w * h * 3; ++i) image.pixels.push_back(static_cast<uint8_t>(rng() & 0xff));
    const bool flip = (trial & 1) != 0;
    const std::vector<float> out = resized(image, in_pixel_units({.resized_width = rw, .resized_height = rh,
                                                                   .crop_x = cx, .crop_y = cy, .crop_width = cw,
                                                                   .crop_height = ch, .flip = flip}));
    for (int y = 0; y < ch; ++y) {
      const std::vector<double> wy = axis_row(h, rh, cy + y);
      for (int x = 0; x < cw; ++x) {
        const std::vector<double> wx = axis_row(w, rw, cx + x);
        for (int c = 0; c < 3; ++c) {
          double expected = 0.0;
          for (int sy = 0; sy < h; ++sy) {
            for (int sx = 0; sx < w; ++sx) expected += wy[static_cast<size_t>(sy)] * wx[static_cast<size_t>(sx)] * image.pixels[(sy * w + sx) * 3 + c];
          }
          const int out_x = flip ? cw - 1 - x : x;
          ASSERT_NEAR(out[(static_cast<size_t>(c) * ch + y) * cw + out_x], expected, 2e-3)
              << w << "x" << h << " -> " << rw << "x" << rh << " window " << cw << "x" << ch << " at " << cx << "," << cy;
        }
      }
    }
  }
}

TEST(Resize, ResizeImageRoundsToBytes) {
  const Image image = ramp(64, 4, 1, [](int x) { return 2 * x; });
  const Image half = resize_image(image, 32, 2);
  ASSERT_EQ(half.pixels.size(), 64u);
  EXPECT_EQ(half.pixels[10], 41);  // 4 * 10 + 1
}

TEST(Resize, AWindowOutsideTheImageIsAShapeError) {
  const Image image = smooth_image(10, 10, 3, 1);
  std::vector<float> out(3 * 8 * 8);
  EXPECT_EQ(message_of<ShapeError>([&] {
              resize_crop_normalise(image, {.resized_width = 12, .resized_height = 12, .crop_x = 5, .crop_y = 0,
                                            .crop_width = 8, .crop_height = 8}, out);
            }),
            "resize: a 8x8 window at (5, 0) of a 10x10x3 image resized to 12x12 into 192 floats: the window must "
            "lie inside, sizes be positive, 1 or 3 channels, and the output hold channels x height x width floats");
  // A corner so far out that its sum with the width would pass INT_MAX.
  std::vector<float> small(3 * 2 * 2);
  for (const bool across : {true, false}) {
    const int far = std::numeric_limits<int>::max() - 1;
    EXPECT_THROW(resize_crop_normalise(image, {.resized_width = 4, .resized_height = 4, .crop_x = across ? far : 0,
                                               .crop_y = across ? 0 : far, .crop_width = 2, .crop_height = 2},
                                       small),
                 ShapeError)
        << (across ? "crop_x" : "crop_y");
  }
}

}  // namespace
}  // namespace glassbox
