// tensor/cpu_blas.h: which kernels run Eigen's matrix products on the CPU
// (cmake/CpuBlas.cmake chooses: OpenBLAS's OpenMP build, or Eigen's own), and
// which the convolutions (cmake/CpuConv.cmake: oneDNN, or Glassbox's own).
#pragma once

#include <cstdint>
#include <string>

namespace glassbox {

// "OpenBLAS 0.3.21 (OpenMP build, Cooperlake kernels)" or "Eigen 3.4.0 (its own
// kernels)": printed with every result, as cpu_blas.
std::string cpu_blas_description();

// "OpenBLAS" or "Eigen": whose kernels a product runs on, for short labels
// ("OpenBLAS GEMM 1024^3", "CPU path: Eigen on OpenBLAS + OpenMP").
const char* cpu_gemm_name();

// "Eigen on OpenBLAS, oneDNN convolutions and linear forwards" (or "Eigen",
// without either): the CPU path's maths, as `glassbox time` heads its table.
std::string cpu_path_name();

// What runs the CPU's convolutions (cmake/CpuConv.cmake): "oneDNN 2.6.3 (kernels
// above 1x1; 1x1 on im2col + GEMM)" or "Glassbox im2col + GEMM". Printed with
// every result, as cpu_conv.
std::string cpu_conv_description();

// How many of Eigen's float products ran on each library since the start
// (Note [Eigen's GEMM on oneDNN's sgemm] in tensor/gemm_onednn.cpp); both stay
// 0 in a build without it.
struct GemmCalls {
  int64_t onednn = 0;
  int64_t openblas = 0;
};
GemmCalls cpu_gemm_calls();

// A row-major A^T B with fewer columns than this runs on OpenBLAS (Note
// [Eigen's GEMM on oneDNN's sgemm]).
inline constexpr int kNarrowColumnsOnOpenBlas = 256;

// Throws ConfigError when the OpenBLAS that the loader found is not the OpenMP
// build this one was linked against (Note [OpenBLAS's OpenMP build] in
// cmake/CpuBlas.cmake): another build would run its own threads beside
// OpenMP's. Called by Context::cpu(); nothing to check on Eigen's kernels.
void check_cpu_blas();

}  // namespace glassbox
