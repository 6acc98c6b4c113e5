// tensor/float_lanes.h: one vector register of floats (GCC's and Clang's
// vector extension), for CPU kernels whose inner loop must stay in vector
// registers: 16 floats where the build targets AVX-512, 8 (one AVX2
// register) otherwise. Eigen's select() and a plain loop of ?: compiled to
// one scalar blend per lane (layers/pool2d/pool2d_max.cpp), so the kernels that need
// a compare, or sums held in registers, use this type. Kernels are written
// for any kFloatLanes.
//
// Note [Lanes as wide as the register]: a vector type wider than the ISA's
// registers is passed and returned differently from one that fits (GCC and
// Clang warn "-Wpsabi": the ABI changes with -mavx512f), so code built for
// AVX2 and code built for AVX-512 could not call each other's helpers. One
// register's width keeps every build's calls in registers and warning-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace glassbox {

#if defined(__AVX512F__)
inline constexpr int kFloatLanes = 16;
#else
inline constexpr int kFloatLanes = 8;
#endif
using FloatLanes = float __attribute__((vector_size(kFloatLanes * sizeof(float))));
// Their int32 counterpart: what a FloatLanes compare gives (all ones where
// true), and indices carried beside a running maximum.
using IntLanes = int32_t __attribute__((vector_size(kFloatLanes * sizeof(int32_t))));

// kFloatLanes floats from `from`, which need not be aligned.
inline FloatLanes load_lanes(const float* from) {
  FloatLanes v;
  std::memcpy(&v, from, sizeof v);
  return v;
}

namespace lanes_detail {
template <std::size_t... I>
inline FloatLanes even(FloatLanes a, FloatLanes b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (2 * I)...);
}
template <std::size_t... I>
inline FloatLanes odd(FloatLanes a, FloatLanes b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (2 * I + 1)...);
}
template <std::size_t... I>
constexpr IntLanes indices(std::index_sequence<I...>) {
  return IntLanes{static_cast<int32_t>(I)...};
}
template <std::size_t kFirst, std::size_t... I>
inline FloatLanes interleaved(FloatLanes a, FloatLanes b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (kFirst + I / 2 + (I % 2) * sizeof...(I))...);
}
}  // namespace lanes_detail

// 0, 1, ..., kFloatLanes - 1: each lane's own index.
inline constexpr IntLanes kLaneIndices = lanes_detail::indices(std::make_index_sequence<kFloatLanes>{});

// Lanes [0, kFloatLanes) of the pair (a, b), read as 2 * kFloatLanes floats:
// the even ones, the odd ones (a row's columns at stride 2, as max pooling's
// windows take them).
inline FloatLanes even_lanes(FloatLanes a, FloatLanes b) {
  return lanes_detail::even(a, b, std::make_index_sequence<kFloatLanes>{});
}
inline FloatLanes odd_lanes(FloatLanes a, FloatLanes b) {
  return lanes_detail::odd(a, b, std::make_index_sequence<kFloatLanes>{});
}

// Lanes [0, kFloatLanes) of the pair (a, b), read as 2 * kFloatLanes floats:
// a and b interleaved (a0 b0 a1 b1 ...), its first and its second half;
// even_lanes and odd_lanes take them apart.
inline FloatLanes interleaved_low(FloatLanes a, FloatLanes b) {
  return lanes_detail::interleaved<0>(a, b, std::make_index_sequence<kFloatLanes>{});
}
inline FloatLanes interleaved_high(FloatLanes a, FloatLanes b) {
  return lanes_detail::interleaved<kFloatLanes / 2>(a, b, std::make_index_sequence<kFloatLanes>{});
}

// The first n of v's kFloatLanes lanes to `to` (FloatLanes to floats,
// IntLanes to int32s), a whole vector where n is kFloatLanes.
template <typename T, typename Lanes>
void store_first_lanes(const Lanes& v, int64_t n, T* to) {
  static_assert(sizeof(Lanes) == kFloatLanes * sizeof(T));
  if (n == kFloatLanes) {
    std::memcpy(to, &v, sizeof v);
    return;
  }
  T out[kFloatLanes];
  std::memcpy(out, &v, sizeof v);
  std::copy_n(out, n, to);
}

}  // namespace glassbox
