// tensor/convert.cpp: float32 <-> float16 / bfloat16 on the CPU with Eigen's
// `half` and `bfloat16`, and the checks in front of both devices' conversions.
#include "tensor/convert.h"

#include <type_traits>

#include <Eigen/Core>

#include "tensor/copy.h"
#include "tensor/cuda_entry.h"
#include "tensor/error.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

// The 16-bit values are stored as uint16_t and viewed as Eigen's types, which
// wrap exactly those bits.
static_assert(sizeof(Eigen::half) == 2 && sizeof(Eigen::bfloat16) == 2);
static_assert(std::is_standard_layout_v<Eigen::half> && std::is_standard_layout_v<Eigen::bfloat16>);
static_assert(std::is_trivially_copyable_v<Eigen::half> && std::is_trivially_copyable_v<Eigen::bfloat16>);

// Note [Eigen's casts to 16 bits]: Eigen 3.4 gives its cast functor no packet
// access, so `.cast<half>()` and `.cast<bfloat16>()` convert one value at a
// time with the same function as the scalar constructor: narrow_cpu and
// to_16_bit give the same bits by construction, and the speed comes from the
// chunks over the threads. Eigen turns on F16C only where
// `!defined(EIGEN_COMP_CLANG) || EIGEN_COMP_CLANG >= 380`, and defines
// EIGEN_COMP_CLANG as 0 under GCC, so a GCC build rounds float16 in software
// and a Clang build with F16C's instruction; both round to nearest even and
// overflow to inf, and differ only in a NaN's payload.
//
// Note [NaN bits]: a NaN converts to a quiet NaN on either device, but not to
// the same bits. Eigen keeps the sign (float16: 0x7e00 | sign in software, the
// payload too under F16C; bfloat16: 0x7fc0 | sign, though Eigen's AVX packet
// conversion, which these casts do not reach, drops the sign), while CUDA's
// conversions give 0x7fff whatever the input. Only NaN-ness is promised
// across devices.
template <typename Half>
using HalfArray = Eigen::Array<Half, Eigen::Dynamic, 1>;

template <typename Half>
void narrow_as(std::span<const float> src, std::span<uint16_t> half) {
  parallel_for(static_cast<int64_t>(src.size()), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const Eigen::Map<const Eigen::ArrayXf> from(src.data() + begin, end - begin);
    Eigen::Map<HalfArray<Half>> to(reinterpret_cast<Half*>(half.data() + begin), end - begin);
    to = from.template cast<Half>();
  });
}

template <typename Half>
void widen_as(std::span<const uint16_t> half, std::span<float> dst) {
  parallel_for(static_cast<int64_t>(dst.size()), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const Eigen::Map<const HalfArray<Half>> from(reinterpret_cast<const Half*>(half.data() + begin), end - begin);
    Eigen::Map<Eigen::ArrayXf> to(dst.data() + begin, end - begin);
    to = from.template cast<float>();
  });
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
    for (int64_t i = begin; i < end; ++i) out[i] += from_16_bit(half[i], dtype);
  });
}

void narrow_cpu(std::span<const float> src, std::span<uint16_t> half, DType dtype) {
  check_spans("narrow_cpu", dtype, src.size(), half.size());
  if (dtype == DType::kFloat16) {
    narrow_as<Eigen::half>(src, half);
  } else {
    narrow_as<Eigen::bfloat16>(src, half);
  }
}

void widen_cpu(std::span<const uint16_t> half, DType dtype, std::span<float> dst) {
  check_spans("widen_cpu", dtype, dst.size(), half.size());
  if (dtype == DType::kFloat16) {
    widen_as<Eigen::half>(half, dst);
  } else {
    widen_as<Eigen::bfloat16>(half, dst);
  }
}

uint16_t to_16_bit(float value, DType dtype) {
  check_16_bit(dtype, "to_16_bit");
  return dtype == DType::kFloat16 ? Eigen::numext::bit_cast<uint16_t>(Eigen::half(value))
                                  : Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(value));
}

float from_16_bit(uint16_t bits, DType dtype) {
  check_16_bit(dtype, "from_16_bit");
  return dtype == DType::kFloat16 ? static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits))
                                  : static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
}

float round_to_16_bit(float value, DType dtype) { return from_16_bit(to_16_bit(value, dtype), dtype); }

}  // namespace glassbox
