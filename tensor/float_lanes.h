// tensor/float_lanes.h: 16 floats as one vector (GCC's and Clang's vector
// extension), for CPU kernels whose inner loop must stay in vector registers:
// one AVX-512 register, or two AVX2 ones. Eigen's select() and a plain loop
// of ?: compiled to one scalar blend per lane (layers/pool2d_max.cpp), so the
// kernels that need a compare, or sums held in registers, use this type.
#pragma once

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

}  // namespace glassbox
