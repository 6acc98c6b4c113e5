// tensor/float_lanes.h: 16 floats as one vector (GCC's and Clang's vector
// extension), for CPU kernels whose inner loop must stay in vector registers:
// one AVX-512 register, or two AVX2 ones. Eigen's select() and a plain loop
// of ?: compiled to one scalar blend per lane (layers/pool2d_max.cpp), so the
// kernels that need a compare, or sums held in registers, use this type.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace glassbox {

inline constexpr int kFloatLanes = 16;
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

// Lanes [0, 16) of the pair (a, b), read as 32 floats: the even ones, the odd
// ones (a row's columns at stride 2, as max pooling's windows take them).
inline FloatLanes even_lanes(FloatLanes a, FloatLanes b) {
  return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
inline FloatLanes odd_lanes(FloatLanes a, FloatLanes b) {
  return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
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
