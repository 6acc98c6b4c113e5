// tests/test_convert.cpp: float32 <-> float16 / bfloat16 (tensor/convert.h):
// rounding to nearest even, NaN, infinity, float16's overflow and subnormals,
// bfloat16's range, exact widening of every 16-bit value, the threaded span
// conversions against the scalar ones, convert() on tensors and what it
// refuses, and the GPU's bits against the CPU's.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"  // message_of
#include "tests/support/devices.h"
#include "tests/support/fake_device.h"

namespace glassbox {
namespace {

constexpr DType kSixteenBitTypes[] = {DType::kFloat16, DType::kBFloat16};

float float_of(uint32_t bits) { return std::bit_cast<float>(bits); }
uint32_t bits_of(float value) { return std::bit_cast<uint32_t>(value); }

bool is_nan_16(uint16_t bits, DType dtype) {
  return dtype == DType::kFloat16 ? (bits & 0x7c00) == 0x7c00 && (bits & 0x03ff) != 0
                                  : (bits & 0x7f80) == 0x7f80 && (bits & 0x007f) != 0;
}

std::string hex(uint32_t bits) {
  std::ostringstream out;
  out << "0x" << std::hex << bits;
  return out.str();
}

// The value of 16-bit `bits`, from the fields of the format: float16's
// exponent is biased by 15 with 10 fraction bits, subnormal at exponent 0;
// bfloat16 is the top half of a float32.
float reference_widen(uint16_t bits, DType dtype) {
  if (dtype == DType::kBFloat16) return float_of(uint32_t{bits} << 16);
  const int exponent = (bits >> 10) & 0x1f;
  const int fraction = bits & 0x3ff;
  float magnitude = 0.0f;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(fraction), -24);
  } else if (exponent == 31) {
    magnitude = fraction == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else {
    magnitude = std::ldexp(static_cast<float>(1024 + fraction), exponent - 25);
  }
  return (bits & 0x8000) != 0 ? -magnitude : magnitude;
}

// "" when `actual` holds the 16-bit values `expected` does; else how many
// differ and the first. A NaN matches any NaN: only NaN-ness is promised
// (Note [NaN bits] in tensor/convert.cpp).
std::string compare_16_bit(const std::vector<uint16_t>& actual, const std::vector<uint16_t>& expected,
                           const std::vector<float>& inputs, DType dtype) {
  if (actual.size() != expected.size()) return cat(actual.size(), " values, expected ", expected.size());
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool same = actual[i] == expected[i] || (is_nan_16(actual[i], dtype) && is_nan_16(expected[i], dtype));
    if (!same && wrong++ == 0) first = i;
  }
  if (wrong == 0) return "";
  return cat(wrong, " of ", actual.size(), " differ; first: ", name_of(dtype), " of ", inputs[first], " (",
             hex(bits_of(inputs[first])), ") is ", hex(actual[first]), ", expected ", hex(expected[first]));
}

// The same for float32 values widened from 16-bit `inputs`, bit for bit (so
// -0 is not 0), a NaN matching any NaN.
std::string compare_widened(const std::vector<float>& actual, const std::vector<float>& expected,
                            const std::vector<uint16_t>& inputs, DType dtype) {
  if (actual.size() != expected.size()) return cat(actual.size(), " values, expected ", expected.size());
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool same = bits_of(actual[i]) == bits_of(expected[i]) || (std::isnan(actual[i]) && std::isnan(expected[i]));
    if (!same && wrong++ == 0) first = i;
  }
  if (wrong == 0) return "";
  return cat(wrong, " of ", actual.size(), " differ; first: ", name_of(dtype), " ", hex(inputs[first]), " widens to ",
             actual[first], " (", hex(bits_of(actual[first])), "), expected ", expected[first], " (",
             hex(bits_of(expected[first])), ")");
}

std::vector<uint16_t> narrowed_one_by_one(const std::vector<float>& values, DType dtype) {
  std::vector<uint16_t> bits;
  for (float v : values) bits.push_back(to_16_bit(v, dtype));
  return bits;
}

std::vector<float> widened_one_by_one(const std::vector<uint16_t>& bits, DType dtype) {
  std::vector<float> values;
  for (uint16_t b : bits) values.push_back(from_16_bit(b, dtype));
  return values;
}

std::vector<uint16_t> every_bit_pattern() {
  std::vector<uint16_t> bits(65536);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  return bits;
}

// Values over the whole float32 range: every other one random bits (any
// exponent, NaN and inf included), the others of the sizes activations have:
// a normal value scaled by 2^-20 to 2^20.
std::vector<float> random_floats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-20, 20);
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    values[i] = i % 2 == 0 ? float_of(static_cast<uint32_t>(rng())) : std::ldexp(normal(rng), scale(rng));
  }
  return values;
}

struct Case {
  uint32_t input;     // float32 bits
  uint16_t expected;  // 16-bit bits
};

// to_16_bit and narrow_cpu (one span of all the cases) both give `expected`.
void expect_narrows(const std::vector<Case>& cases, DType dtype) {
  std::vector<float> inputs;
  std::vector<uint16_t> expected;
  for (const Case& c : cases) {
    inputs.push_back(float_of(c.input));
    expected.push_back(c.expected);
    EXPECT_EQ(hex(to_16_bit(float_of(c.input), dtype)), hex(c.expected))
        << name_of(dtype) << " of " << float_of(c.input) << " (" << hex(c.input) << ")";
  }
  std::vector<uint16_t> spanned(inputs.size());
  narrow_cpu(inputs, spanned, dtype);
  EXPECT_EQ(compare_16_bit(spanned, expected, inputs, dtype), "");
}

Tensor host_tensor(Context& ctx, int64_t count, DType dtype) {
  return ctx.allocate(Shape{count}, dtype, MemoryCategory::kActivations);
}

std::vector<uint16_t> read_bits(const Tensor& t) {
  std::vector<uint16_t> bits(static_cast<size_t>(t.numel()));
  std::memcpy(bits.data(), t.raw(), t.bytes());
  return bits;
}

void write_bits(const Tensor& t, const std::vector<uint16_t>& bits) {
  ASSERT_EQ(static_cast<int64_t>(bits.size()), t.numel());
  std::memcpy(t.raw(), bits.data(), t.bytes());
}

// Exactly halfway between two neighbouring 16-bit values a float goes to the
// one with an even last bit; a float just off the middle goes to the nearer.
TEST(Convert, NarrowRoundsToNearestEven) {
  expect_narrows({{0x3f801000, 0x3c00},   // 1 + 2^-11: halfway between 1 (0x3c00) and 0x3c01
                  {0x3f803000, 0x3c02},   // 1 + 3 * 2^-11: halfway between 0x3c01 and 0x3c02
                  {0xbf803000, 0xbc02},   // the same, negative
                  {0x3f801001, 0x3c01},   // just above the first middle
                  {0x3f802fff, 0x3c01},   // just below the second
                  {0x3f800000, 0x3c00}},  // 1 exactly
                 DType::kFloat16);
  expect_narrows({{0x3f808000, 0x3f80},   // 1 + 2^-8: halfway between 1 (0x3f80) and 0x3f81
                  {0x3f818000, 0x3f82},   // halfway between 0x3f81 and 0x3f82
                  {0xbf818000, 0xbf82},   // the same, negative
                  {0x3f808001, 0x3f81},   // just above the first middle
                  {0x3f817fff, 0x3f81},   // just below the second
                  {0x7f7f7fff, 0x7f7f}},  // just below the middle above the largest finite bfloat16
                 DType::kBFloat16);
}

// Quiet and signalling NaNs of either sign stay NaN (a signalling NaN whose
// payload is all in the low bits would become inf if the bits were cut);
// infinities stay infinite, and widening keeps both.
TEST(Convert, NarrowKeepsNaNAndInfinity) {
  for (DType dtype : kSixteenBitTypes) {
    for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffa00000u}) {
      const uint16_t bits = to_16_bit(float_of(nan), dtype);
      EXPECT_TRUE(is_nan_16(bits, dtype)) << name_of(dtype) << " of NaN " << hex(nan) << " is " << hex(bits);
      EXPECT_TRUE(std::isnan(round_to_16_bit(float_of(nan), dtype))) << name_of(dtype) << " " << hex(nan);
    }
    const float inf = std::numeric_limits<float>::infinity();
    const uint16_t positive = dtype == DType::kFloat16 ? 0x7c00 : 0x7f80;
    expect_narrows({{bits_of(inf), positive}, {bits_of(-inf), static_cast<uint16_t>(positive | 0x8000)}}, dtype);
    EXPECT_EQ(from_16_bit(positive, dtype), inf);
    EXPECT_EQ(from_16_bit(static_cast<uint16_t>(positive | 0x8000), dtype), -inf);
    EXPECT_TRUE(std::isnan(from_16_bit(static_cast<uint16_t>(positive | 0x8001), dtype))) << name_of(dtype);
  }
}

// float16's largest value is 65504; the middle between it and the next step
// (65536, which float16 cannot hold) is 65520: below it rounds down, from it on
// to inf.
TEST(Convert, Float16OverflowsToInfinityPast65504) {
  expect_narrows({{bits_of(65504.0f), 0x7bff},
                  {0x477fefff, 0x7bff},  // 65519.996, the float just below 65520
                  {bits_of(65520.0f), 0x7c00},
                  {bits_of(-65520.0f), 0xfc00},
                  {bits_of(-65504.0f), 0xfbff},
                  {bits_of(1e10f), 0x7c00},
                  {bits_of(std::numeric_limits<float>::max()), 0x7c00}},
                 DType::kFloat16);
  EXPECT_EQ(round_to_16_bit(float_of(0x477fefff), DType::kFloat16), 65504.0f);
  EXPECT_EQ(round_to_16_bit(65520.0f, DType::kFloat16), std::numeric_limits<float>::infinity());
}

// float16's subnormals are steps of 2^-24; half a step is a tie with 0 (even),
// anything above it rounds to the first step.
TEST(Convert, Float16SubnormalsRoundToNearestEven) {
  expect_narrows({{bits_of(std::ldexp(1.0f, -24)), 0x0001},
                  {bits_of(std::ldexp(1.0f, -25)), 0x0000},
                  {bits_of(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001},
                  {bits_of(std::ldexp(3.0f, -25)), 0x0002},  // halfway between 0x0001 and 0x0002
                  {bits_of(-std::ldexp(1.0f, -25)), 0x8000},
                  {bits_of(std::ldexp(1023.0f, -24)), 0x03ff},  // the largest subnormal
                  {bits_of(std::ldexp(1.0f, -14)), 0x0400},     // the smallest normal
                  {bits_of(std::numeric_limits<float>::denorm_min()), 0x0000}},
                 DType::kFloat16);
  EXPECT_EQ(round_to_16_bit(std::ldexp(1.0f, -24), DType::kFloat16), std::ldexp(1.0f, -24));
}

// bfloat16 has float32's exponent: 3e38 and float32's subnormals stay
// nonzero; only the last half step below float32's largest value rounds up to
// inf. Zero keeps its sign in both types.
TEST(Convert, BFloat16KeepsFloatRangeAndSignOfZero) {
  const float large = round_to_16_bit(3e38f, DType::kBFloat16);
  EXPECT_TRUE(std::isfinite(large)) << large;
  EXPECT_NEAR(large, 3e38f, 3e38f * std::ldexp(1.0f, -9));
  expect_narrows({{bits_of(std::numeric_limits<float>::min()), 0x0080},
                  {0x00010000, 0x0001},  // a float32 subnormal that bfloat16 holds exactly
                  {bits_of(-0.0f), 0x8000},
                  {bits_of(0.0f), 0x0000},
                  {bits_of(std::numeric_limits<float>::max()), 0x7f80}},
                 DType::kBFloat16);
  expect_narrows({{bits_of(-0.0f), 0x8000}, {bits_of(0.0f), 0x0000}}, DType::kFloat16);
  EXPECT_TRUE(std::signbit(from_16_bit(0x8000, DType::kBFloat16)));
  EXPECT_TRUE(std::signbit(from_16_bit(0x8000, DType::kFloat16)));
}

// Every 16-bit value is a float32: widening gives exactly the value its fields
// say, and narrowing it again gives the same bits. widen_cpu over all 65536
// agrees with from_16_bit.
TEST(Convert, WidenIsExactForEveryBitPattern) {
  const std::vector<uint16_t> patterns = every_bit_pattern();
  for (DType dtype : kSixteenBitTypes) {
    std::vector<float> reference;
    std::vector<uint16_t> expected_round_trip;
    for (uint16_t b : patterns) {
      reference.push_back(reference_widen(b, dtype));
      const uint16_t back = to_16_bit(from_16_bit(b, dtype), dtype);
      // A NaN's bits are not promised, only that it stays NaN.
      expected_round_trip.push_back(is_nan_16(b, dtype) ? back : b);
      if (is_nan_16(b, dtype)) {
        EXPECT_TRUE(is_nan_16(back, dtype)) << name_of(dtype) << " " << hex(b);
      }
    }
    const std::vector<float> widened = widened_one_by_one(patterns, dtype);
    EXPECT_EQ(compare_widened(widened, reference, patterns, dtype), "");
    std::vector<uint16_t> round_trip;
    for (float v : widened) round_trip.push_back(to_16_bit(v, dtype));
    EXPECT_EQ(compare_16_bit(round_trip, expected_round_trip, widened, dtype), "");
    std::vector<float> spanned(patterns.size());
    widen_cpu(patterns, dtype, spanned);
    EXPECT_EQ(compare_widened(spanned, widened, patterns, dtype), "");
  }
}

// narrow_cpu and widen_cpu split a span over the threads and convert blocks of
// it (F16C eight values at a time, a vectorised loop for bfloat16); each
// element comes out as the scalar conversion gives it.
// 300,007 values: several chunks of kElementwiseGrain and a ragged last one.
TEST(Convert, SpansMatchTheScalarConversion) {
  const size_t count = 300'007;
  const std::vector<float> floats = random_floats(count, 7);
  std::mt19937 rng(8);
  std::vector<uint16_t> halves(count);
  for (uint16_t& b : halves) b = static_cast<uint16_t>(rng());
  for (DType dtype : kSixteenBitTypes) {
    std::vector<uint16_t> narrowed(count);
    narrow_cpu(floats, narrowed, dtype);
    EXPECT_EQ(compare_16_bit(narrowed, narrowed_one_by_one(floats, dtype), floats, dtype), "");
    std::vector<float> widened(count);
    widen_cpu(halves, dtype, widened);
    EXPECT_EQ(compare_widened(widened, widened_one_by_one(halves, dtype), halves, dtype), "");
  }
}

// The bits of the float16 or bfloat16 value nearest a float that is not NaN,
// found without the conversion code: the finite non-negative 16-bit values,
// in the order of their bit patterns, increase, so the two around |value| are
// found by binary search; the nearer wins, a tie going to the even pattern.
// One step past the largest finite value stands inf's pattern, which comes
// next: half a step past the largest value or more rounds there.
class NearestSixteenBit {
 public:
  explicit NearestSixteenBit(DType dtype) {
    const uint16_t largest = dtype == DType::kFloat16 ? 0x7bff : 0x7f7f;
    for (uint32_t bits = 0; bits <= largest; ++bits) {
      magnitudes_.push_back(static_cast<double>(reference_widen(static_cast<uint16_t>(bits), dtype)));
    }
    magnitudes_.push_back(2 * magnitudes_[largest] - magnitudes_[largest - 1]);  // inf: 0x7c00, 0x7f80
  }

  uint16_t operator()(float value) const {
    const auto sign = static_cast<uint16_t>(std::signbit(value) ? 0x8000 : 0);
    const double magnitude = std::fabs(static_cast<double>(value));
    const size_t inf = magnitudes_.size() - 1;
    if (magnitude >= magnitudes_[inf]) return static_cast<uint16_t>(sign | inf);
    // magnitudes_[0] is 0, so some value is at most `magnitude`.
    const size_t low = static_cast<size_t>(std::upper_bound(magnitudes_.begin(), magnitudes_.end(), magnitude) -
                                           magnitudes_.begin()) - 1;
    const size_t high = low + 1;
    const double below = magnitude - magnitudes_[low], above = magnitudes_[high] - magnitude;
    const size_t nearest = below < above ? low : above < below ? high : low % 2 == 0 ? low : high;
    return static_cast<uint16_t>(sign | nearest);
  }

 private:
  std::vector<double> magnitudes_;
};

// narrow_cpu and to_16_bit give the nearest 16-bit value (NearestSixteenBit)
// for every 193rd float32 bit pattern, which meets every exponent, float32's
// subnormals, infinities and NaNs; a NaN becomes a quiet NaN of its sign.
TEST(Convert, NarrowGivesTheNearestValueOverFloat32BitPatterns) {
  constexpr uint64_t kStride = 193;
  constexpr size_t kBlock = 1 << 20;
  for (DType dtype : kSixteenBitTypes) {
    const NearestSixteenBit nearest(dtype);
    const uint16_t quiet_bit = dtype == DType::kFloat16 ? 0x0200 : 0x0040;
    std::vector<float> inputs;
    uint64_t wrong = 0, checked = 0, nans = 0;
    std::string first;
    const auto check_block = [&] {
      std::vector<uint16_t> spanned(inputs.size());
      narrow_cpu(inputs, spanned, dtype);
      for (size_t i = 0; i < inputs.size(); ++i) {
        const float value = inputs[i];
        const uint16_t scalar = to_16_bit(value, dtype);
        const bool nan = std::isnan(value);
        const auto sign = static_cast<uint16_t>(std::signbit(value) ? 0x8000 : 0);
        const uint16_t want = nan ? 0 : nearest(value);
        const bool right = nan ? spanned[i] == scalar && is_nan_16(scalar, dtype) && (scalar & quiet_bit) != 0 &&
                                     (scalar & 0x8000) == sign
                               : spanned[i] == want && scalar == want;
        nans += nan ? 1 : 0;
        if (!right && wrong++ == 0) {
          first = cat(name_of(dtype), " of ", hex(bits_of(value)), ": span ", hex(spanned[i]), ", scalar ",
                      hex(scalar), ", expected ", nan ? cat("a quiet NaN of sign ", hex(sign)) : hex(want));
        }
      }
      checked += inputs.size();
      inputs.clear();
    };
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += kStride) {
      inputs.push_back(float_of(static_cast<uint32_t>(bits)));
      if (inputs.size() == kBlock) check_block();
    }
    check_block();
    EXPECT_EQ(checked, (uint64_t{0xffffffffu} / kStride) + 1);
    EXPECT_GT(nans, 0u);
    EXPECT_EQ(wrong, 0u) << first;
  }
}

// convert() on CPU tensors: float32 to 16 bits stores to_16_bit's bits, and
// back gives round_to_16_bit of each value.
TEST(Convert, TensorsRoundTripOnTheCpu) {
  Context ctx = Context::cpu();
  const int64_t count = 100'003;
  const std::vector<float> values = random_floats(static_cast<size_t>(count), 9);
  for (DType dtype : kSixteenBitTypes) {
    const Tensor src = host_tensor(ctx, count, DType::kFloat32);
    const Tensor half = host_tensor(ctx, count, dtype);
    const Tensor back = host_tensor(ctx, count, DType::kFloat32);
    from_vector<float>(ctx, values, src);
    convert(ctx, src, half);
    convert(ctx, half, back);
    EXPECT_EQ(compare_16_bit(read_bits(half), narrowed_one_by_one(values, dtype), values, dtype), "");
    std::vector<float> rounded;
    for (float v : values) rounded.push_back(round_to_16_bit(v, dtype));
    EXPECT_EQ(compare_widened(to_vector<float>(ctx, back), rounded, read_bits(half), dtype), "");
  }
}

// The same dtype on both sides copies, bits unchanged (a NaN's too).
TEST(Convert, SameDTypeIsAPlainCopy) {
  Context ctx = Context::cpu();
  const std::vector<float> values = {1.0f, -0.0f, 1e-40f, std::nanf("7"), 3.14159f};
  const Tensor a = host_tensor(ctx, 5, DType::kFloat32);
  const Tensor b = ctx.allocate(Shape{5, 1}, DType::kFloat32, MemoryCategory::kActivations);
  from_vector<float>(ctx, values, a);
  convert(ctx, a, b);
  const std::vector<float> copied = to_vector<float>(ctx, b);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(bits_of(copied[i]), bits_of(values[i])) << i;
  const std::vector<uint16_t> bits = {0x3f80, 0x7fc1, 0x8000, 0x0001, 0xffff};
  const Tensor c = host_tensor(ctx, 5, DType::kBFloat16);
  const Tensor d = host_tensor(ctx, 5, DType::kBFloat16);
  write_bits(c, bits);
  convert(ctx, c, d);
  EXPECT_EQ(read_bits(d), bits);
}

TEST(Convert, RefusesOtherDTypesCountsAndDevices) {
  Context ctx = Context::cpu();
  const Tensor f32 = host_tensor(ctx, 4, DType::kFloat32);
  const Tensor bf16 = host_tensor(ctx, 4, DType::kBFloat16);
  const char* kPairs = "; float32 converts to float16 or bfloat16, and those to float32";
  EXPECT_THROW(convert(ctx, f32, host_tensor(ctx, 4, DType::kInt32)), ShapeError);
  EXPECT_EQ(testing::message_of<ShapeError>([&] { convert(ctx, f32, host_tensor(ctx, 4, DType::kInt32)); }),
            cat("convert: no conversion from float32 (4) on cpu to int32 (4) on cpu", kPairs));
  EXPECT_EQ(testing::message_of<ShapeError>([&] { convert(ctx, host_tensor(ctx, 4, DType::kFloat16), bf16); }),
            cat("convert: no conversion from float16 (4) on cpu to bfloat16 (4) on cpu", kPairs));
  const Tensor six = ctx.allocate(Shape{2, 3}, DType::kFloat32, MemoryCategory::kActivations);
  EXPECT_THROW(convert(ctx, six, bf16), ShapeError);
  EXPECT_EQ(testing::message_of<ShapeError>([&] { convert(ctx, six, bf16); }),
            "convert: source float32 (2, 3) on cpu and destination bfloat16 (4) on cpu differ in element count");
  const Tensor on_gpu = testing::tensor_claiming(Device::cuda(0), Shape{4});
  EXPECT_THROW(convert(ctx, on_gpu, bf16), ShapeError);
  EXPECT_EQ(testing::message_of<ShapeError>([&] { convert(ctx, on_gpu, bf16); }),
            "convert: source float32 (4) on cuda:0 and destination bfloat16 (4) on cpu must be on the context's "
            "device, cpu");
  EXPECT_EQ(testing::message_of<ShapeError>([&] { convert(ctx, f32, on_gpu); }),
            "convert: source float32 (4) on cpu and destination float32 (4) on cuda:0 must be on the context's "
            "device, cpu");
}

TEST(Convert, SpanConversionsRefuseOtherDTypesAndSizes) {
  std::vector<float> floats(4, 1.0f);
  std::vector<uint16_t> halves(4);
  EXPECT_THROW(narrow_cpu(floats, halves, DType::kFloat32), Error);
  EXPECT_EQ(testing::message_of<Error>([&] { narrow_cpu(floats, halves, DType::kFloat32); }),
            "narrow_cpu: 16-bit dtype expected, got float32");
  EXPECT_EQ(testing::message_of<Error>([&] { widen_cpu(halves, DType::kInt32, floats); }),
            "widen_cpu: 16-bit dtype expected, got int32");
  EXPECT_EQ(testing::message_of<Error>([&] { (void)to_16_bit(1.0f, DType::kFloat32); }),
            "to_16_bit: 16-bit dtype expected, got float32");
  EXPECT_EQ(testing::message_of<Error>([&] { (void)from_16_bit(0, DType::kInt32); }),
            "from_16_bit: 16-bit dtype expected, got int32");
  std::vector<float> five(5, 1.0f);
  EXPECT_THROW(narrow_cpu(five, halves, DType::kBFloat16), ShapeError);
  EXPECT_EQ(testing::message_of<ShapeError>([&] { narrow_cpu(five, halves, DType::kBFloat16); }),
            "narrow_cpu: 5 float32 values but 4 bfloat16 values");
  EXPECT_EQ(testing::message_of<ShapeError>([&] { widen_cpu(halves, DType::kFloat16, five); }),
            "widen_cpu: 5 float32 values but 4 float16 values");
}

// dst += float32(src): what a 16-bit layer's parameter gradient adds into
// the fp32 gradients. Widening is exact, so each sum is one float addition.
TEST(Convert, AccumulateWidenedAddsTheExactValues) {
  Context ctx = Context::cpu();
  const std::vector<float> values = random_floats(10'001, 11);
  for (DType dtype : kSixteenBitTypes) {
    const auto count = static_cast<int64_t>(values.size());
    const Tensor floats = host_tensor(ctx, count, DType::kFloat32);
    const Tensor half = host_tensor(ctx, count, dtype);
    const Tensor sums = host_tensor(ctx, count, DType::kFloat32);
    from_vector<float>(ctx, values, floats);
    convert(ctx, floats, half);
    from_vector<float>(ctx, values, sums);
    accumulate_widened(ctx, half, sums);
    const std::vector<float> got = to_vector<float>(ctx, sums);
    for (size_t i = 0; i < values.size(); ++i) {
      const float expected = values[i] + round_to_16_bit(values[i], dtype);
      if (std::isnan(expected)) {
        ASSERT_TRUE(std::isnan(got[i])) << i;  // a NaN's bits are not promised (Note [NaN bits])
      } else {
        ASSERT_EQ(bits_of(got[i]), bits_of(expected)) << i;
      }
    }
  }
  const Tensor f32 = host_tensor(ctx, 4, DType::kFloat32);
  EXPECT_EQ(testing::message_of<ShapeError>([&] { accumulate_widened(ctx, f32, f32); }),
            "accumulate_widened: needs a float16 or bfloat16 source and a float32 destination of as many elements "
            "on cpu, got float32 (4) on cpu and float32 (4) on cpu");
  EXPECT_THROW(accumulate_widened(ctx, host_tensor(ctx, 3, DType::kBFloat16), f32), ShapeError);
}

// The GPU's kernels give the CPU's bits, both directions and both types: the
// special values of the tests above and random ones narrowed, every 16-bit
// value widened. NaN matches any NaN (Note [NaN bits] in tensor/convert.cpp).
TEST(Convert, CudaMatchesTheCpuBitForBit) {
  GLASSBOX_REQUIRE_CUDA();
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 65504.0f, float_of(0x477fefff), 65520.0f, -65520.0f,
                               std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(3.0f, -25),
                               std::nextafter(std::ldexp(1.0f, -25), 1.0f), 3e38f, std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                               float_of(0x00010000), float_of(0x3f801000), float_of(0x3f803000), float_of(0x3f808000),
                               float_of(0x3f818000), float_of(0x7f7f7fff), float_of(0x7f7f8000),
                               std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                               float_of(0x7fc00000), float_of(0xffc00000), float_of(0x7f800001)};
  const std::vector<float> random = random_floats(200'001, 10);
  values.insert(values.end(), random.begin(), random.end());
  const auto count = static_cast<int64_t>(values.size());
  const std::vector<uint16_t> patterns = every_bit_pattern();
  const auto pattern_count = static_cast<int64_t>(patterns.size());
  for (DType dtype : kSixteenBitTypes) {
    const Tensor floats = host_tensor(gpu, count, DType::kFloat32);
    const Tensor narrowed = host_tensor(gpu, count, dtype);
    const Tensor narrowed_host = host_tensor(cpu, count, dtype);
    from_vector<float>(gpu, values, floats);
    convert(gpu, floats, narrowed);
    copy(gpu, narrowed, narrowed_host);
    gpu.synchronize();
    EXPECT_EQ(compare_16_bit(read_bits(narrowed_host), narrowed_one_by_one(values, dtype), values, dtype), "");

    const Tensor patterns_host = host_tensor(cpu, pattern_count, dtype);
    const Tensor halves = host_tensor(gpu, pattern_count, dtype);
    const Tensor widened = host_tensor(gpu, pattern_count, DType::kFloat32);
    write_bits(patterns_host, patterns);
    copy(gpu, patterns_host, halves);
    convert(gpu, halves, widened);
    EXPECT_EQ(compare_widened(to_vector<float>(gpu, widened), widened_one_by_one(patterns, dtype), patterns, dtype),
              "");
  }
}

}  // namespace
}  // namespace glassbox
