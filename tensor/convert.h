// tensor/convert.h: conversion between float32 and the 16-bit float types,
// the storage of mixed precision (bf16 and fp16: 16-bit values, fp32 arithmetic).
//   float32 -> float16 | bfloat16: round to nearest, ties to even. NaN stays
//     NaN (quiet); float16 overflows to +-inf past 65504 (65520 and above
//     round to inf), bfloat16, which has float32's range, only within half a
//     step of float32's largest value (from about 3.39e38); values below the
//     16-bit subnormals round to +-0, keeping the sign.
//   float16 | bfloat16 -> float32: exact.
// The CPU uses F16C's instructions for float16 and AVX2's integer rounding
// for bfloat16 (Note [16-bit conversions on the CPU] in tensor/convert.cpp), the
// GPU CUDA's `__half` and `__nv_bfloat16` conversions, which round alike: a
// number converts to the same bits on either device, a NaN to a NaN whose
// bits may differ (Note [NaN bits] there).
#pragma once

#include <cstdint>
#include <span>

#include "tensor/context.h"
#include "tensor/tensor.h"

namespace glassbox {

// Whether a dtype is one of the 16-bit float types.
constexpr bool is_16_bit_float(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

// dst <- src, converting the element type: float32 to float16 or bfloat16, one
// of those to float32, or the same dtype (a plain copy). Same element count,
// same device (the context's); queued on the context's stream. Throws
// ShapeError naming both tensors for another pair of dtypes, a different
// element count or another device.
void convert(Context& ctx, const Tensor& src, const Tensor& dst);

// dst += float32(src): src float16 or bfloat16, dst float32, same element
// count, on the context's device, queued on its stream (ShapeError naming both
// tensors otherwise). What a 16-bit layer's parameter gradient, computed in its
// 16-bit type by cuDNN or cuBLAS, adds into the fp32 gradients (Note [16-bit
// values in a layer], layers/layer.h), as autocast's cast back to an fp32
// parameter's .grad does.
void accumulate_widened(Context& ctx, const Tensor& src, const Tensor& dst);

// The CPU conversions over spans, split over the threads (parallel_for;
// called inside a parallel region, they run on the calling thread). `half` holds the 16-bit
// values' bits; `dtype` says which type they are (float16 or bfloat16; any
// other throws Error).
void narrow_cpu(std::span<const float> src, std::span<uint16_t> half, DType dtype);
void widen_cpu(std::span<const uint16_t> half, DType dtype, std::span<float> dst);

// One value, as a 16-bit type stores it: to_16_bit rounds (as narrow_cpu),
// from_16_bit is exact; round_to_16_bit(x, t) == from_16_bit(to_16_bit(x, t), t).
uint16_t to_16_bit(float value, DType dtype);
float from_16_bit(uint16_t bits, DType dtype);
float round_to_16_bit(float value, DType dtype);

}  // namespace glassbox
