// tensor/convert.cpp: float32 <-> float16 / bfloat16 on the CPU (F16C's
// instructions, and bfloat16's rounding in AVX2's integer arithmetic), and the
// checks in front of both devices' conversions.
#include "tensor/convert.h"

#include <algorithm>
#include <bit>

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif
#if !defined(__F16C__)
#include <Eigen/Core>
#endif

#include "tensor/copy.h"
#include "tensor/cuda_entry.h"
#include "tensor/error.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

// Note [16-bit conversions on the CPU]: Eigen 3.4's `.cast<half>()` converts
// one value at a time (its cast functor has no packet access), and Eigen turns
// on F16C only where `!defined(EIGEN_COMP_CLANG) || EIGEN_COMP_CLANG >= 380`,
// which is false under GCC (EIGEN_COMP_CLANG is defined there, as 0): under
// GCC it rounds float16 in software, which made LeNet's fp16 step 3.3 times as
// long as fp32's (`glassbox time LeNet --precision fp16`, 2-core Zen 3). So
// float16 goes through F16C's instructions and bfloat16 through integer
// rounding in AVX2's registers, eight values at a time (x86-64-v3 includes
// both; a build for a baseline without them converts one value at a time,
// float16 with Eigen's software rounding). Both round to nearest even and
// overflow to inf (tests/test_convert.cpp checks them against the nearest
// 16-bit value over float32's bit patterns), and the scalar to_16_bit and
// from_16_bit use the same functions, so a span converts to the bits of its
// values one by one.
//
// Note [NaN bits]: narrowing turns a NaN into a quiet NaN on either device,
// but not into the same bits. The CPU keeps the sign (float16 the top of the
// payload too under F16C, 0x7e00 | sign in software; bfloat16 gives 0x7fc0 |
// sign), while CUDA's conversions give 0x7fff whatever the input. Widening
// keeps NaN-ness (F16C sets the quiet bit; bfloat16's shift keeps the bits).
// Only NaN-ness is promised across devices.
#if defined(__F16C__)
uint16_t float16_of(float value) {
  return static_cast<uint16_t>(_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT));
}
float float_of_float16(uint16_t bits) { return _cvtsh_ss(bits); }
#else
uint16_t float16_of(float value) { return Eigen::numext::bit_cast<uint16_t>(Eigen::half(value)); }
float float_of_float16(uint16_t bits) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits)); }
#endif

// bfloat16 is float32's top half: add just under half of the dropped part
// (plus its last kept bit, for ties to even) and cut. A NaN becomes the quiet
// NaN of its sign, as Eigen's; rounding a large finite value may carry into
// the exponent and give inf, which is the correct rounding.
uint16_t bfloat16_of(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? ((bits >> 16) & 0x8000u) | 0x7fc0u : rounded);
}
float float_of_bfloat16(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

void narrow_float16(const float* from, uint16_t* to, int64_t count) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= count; i += 8) {
    const __m128i narrowed = _mm256_cvtps_ph(_mm256_loadu_ps(from + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i), narrowed);
  }
#endif
  for (; i < count; ++i) to[i] = float16_of(from[i]);
}

void widen_float16(const uint16_t* from, float* to, int64_t count) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(to + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i))));
  }
#endif
  for (; i < count; ++i) to[i] = float_of_float16(from[i]);
}

#if defined(__AVX2__)
// Eight bfloat16_of at once: the same integer steps on 32-bit lanes, then
// packed to 16 bits (each lane holds at most 0xffff, so packus keeps it).
void narrow_bfloat16_8(const float* from, uint16_t* to) {
  const __m256i bits = _mm256_castps_si256(_mm256_loadu_ps(from));
  const __m256i high = _mm256_srli_epi32(bits, 16);
  const __m256i last_kept = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), last_kept), 16);
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
  const __m256i quiet_nan =
      _mm256_or_si256(_mm256_and_si256(high, _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(0x7fc0));
  const __m256i narrowed = _mm256_blendv_epi8(rounded, quiet_nan, nan);
  // packus works within each 128-bit half: lanes 0-3 land in quadword 0, 4-7 in quadword 2.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(narrowed, narrowed), 0b1000);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(to), _mm256_castsi256_si128(packed));
}

void widen_bfloat16_8(const uint16_t* from, float* to) {
  const __m256i bits = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
  _mm256_storeu_ps(to, _mm256_castsi256_ps(_mm256_slli_epi32(bits, 16)));
}
#endif

void narrow_bfloat16(const float* from, uint16_t* to, int64_t count) {
  int64_t i = 0;
#if defined(__AVX2__)
  for (; i + 8 <= count; i += 8) narrow_bfloat16_8(from + i, to + i);
#endif
  for (; i < count; ++i) to[i] = bfloat16_of(from[i]);
}

void widen_bfloat16(const uint16_t* from, float* to, int64_t count) {
  int64_t i = 0;
#if defined(__AVX2__)
  for (; i + 8 <= count; i += 8) widen_bfloat16_8(from + i, to + i);
#endif
  for (; i < count; ++i) to[i] = float_of_bfloat16(from[i]);
}

void narrow_block(const float* from, uint16_t* to, int64_t count, DType dtype) {
  if (dtype == DType::kFloat16) {
    narrow_float16(from, to, count);
  } else {
    narrow_bfloat16(from, to, count);
  }
}

void widen_block(const uint16_t* from, float* to, int64_t count, DType dtype) {
  if (dtype == DType::kFloat16) {
    widen_float16(from, to, count);
  } else {
    widen_bfloat16(from, to, count);
  }
}

// `what`: the function, for the message.
void check_16_bit(DType dtype, std::string_view what) {
  if (!is_16_bit_float(dtype)) throw Error(cat(what, ": 16-bit dtype expected, got ", name_of(dtype)));
}

void check_spans(std::string_view what, DType dtype, size_t floats, size_t halves) {
  check_16_bit(dtype, what);
  if (floats != halves) {
    throw ShapeError(cat(what, ": ", floats, " float32 values but ", halves, " ", name_of(dtype), " values"));
  }
}

bool convertible(DType from, DType to) {
  return from == to || (from == DType::kFloat32 && is_16_bit_float(to)) ||
         (is_16_bit_float(from) && to == DType::kFloat32);
}

}  // namespace

void convert(Context& ctx, const Tensor& src, const Tensor& dst) {
  if (!convertible(src.dtype(), dst.dtype())) {
    throw ShapeError(cat("convert: no conversion from ", src.str(), " to ", dst.str(),
                         "; float32 converts to float16 or bfloat16, and those to float32"));
  }
  if (src.numel() != dst.numel()) {
    throw ShapeError(cat("convert: source ", src.str(), " and destination ", dst.str(), " differ in element count"));
  }
  if (src.device() != ctx.device() || dst.device() != ctx.device()) {
    throw ShapeError(cat("convert: source ", src.str(), " and destination ", dst.str(),
                         " must be on the context's device, ", ctx.device().str()));
  }
  if (src.dtype() == dst.dtype()) {
    copy(ctx, src, dst);
    return;
  }
  if (ctx.device().is_cuda()) {
    cuda_entry::convert(*ctx.cuda_state(), src.raw(), src.dtype(), dst.raw(), dst.dtype(), src.numel());
    return;
  }
  const auto count = static_cast<size_t>(src.numel());
  if (src.dtype() == DType::kFloat32) {
    narrow_cpu({static_cast<const float*>(src.raw()), count}, {static_cast<uint16_t*>(dst.raw()), count},
               dst.dtype());
  } else {
    widen_cpu({static_cast<const uint16_t*>(src.raw()), count}, src.dtype(),
              {static_cast<float*>(dst.raw()), count});
  }
}

void accumulate_widened(Context& ctx, const Tensor& src, const Tensor& dst) {
  if (!is_16_bit_float(src.dtype()) || dst.dtype() != DType::kFloat32 || src.numel() != dst.numel() ||
      src.device() != ctx.device() || dst.device() != ctx.device()) {
    throw ShapeError(cat("accumulate_widened: needs a float16 or bfloat16 source and a float32 destination of "
                         "as many elements on ", ctx.device().str(), ", got ", src.str(), " and ", dst.str()));
  }
  if (ctx.device().is_cuda()) {
    cuda_entry::accumulate_widened(*ctx.cuda_state(), src.raw(), src.dtype(), static_cast<float*>(dst.raw()),
                                   src.numel());
    return;
  }
  const auto* half = static_cast<const uint16_t*>(src.raw());
  float* out = static_cast<float*>(dst.raw());
  const DType dtype = src.dtype();
  parallel_for(src.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    constexpr int64_t kBlock = 256;  // widened on the stack, then added
    float widened[kBlock];
    for (int64_t i = begin; i < end; i += kBlock) {
      const int64_t count = std::min(kBlock, end - i);
      widen_block(half + i, widened, count, dtype);
      for (int64_t j = 0; j < count; ++j) out[i + j] += widened[j];
    }
  });
}

void narrow_cpu(std::span<const float> src, std::span<uint16_t> half, DType dtype) {
  check_spans("narrow_cpu", dtype, src.size(), half.size());
  parallel_for(static_cast<int64_t>(src.size()), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    narrow_block(src.data() + begin, half.data() + begin, end - begin, dtype);
  });
}

void widen_cpu(std::span<const uint16_t> half, DType dtype, std::span<float> dst) {
  check_spans("widen_cpu", dtype, dst.size(), half.size());
  parallel_for(static_cast<int64_t>(dst.size()), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    widen_block(half.data() + begin, dst.data() + begin, end - begin, dtype);
  });
}

uint16_t to_16_bit(float value, DType dtype) {
  check_16_bit(dtype, "to_16_bit");
  return dtype == DType::kFloat16 ? float16_of(value) : bfloat16_of(value);
}

float from_16_bit(uint16_t bits, DType dtype) {
  check_16_bit(dtype, "from_16_bit");
  return dtype == DType::kFloat16 ? float_of_float16(bits) : float_of_bfloat16(bits);
}

float round_to_16_bit(float value, DType dtype) { return from_16_bit(to_16_bit(value, dtype), dtype); }

}  // namespace glassbox
