// tensor/cpu_blas.h: which kernels run Eigen's matrix products on the CPU
// (cmake/CpuBlas.cmake chooses: OpenBLAS's OpenMP build, or Eigen's own), and
// which the convolutions (cmake/CpuConv.cmake: oneDNN, or Glassbox's own).
#pragma once

#include <cstdint>
#include <string>

namespace glassbox {

// "oneDNN 2.6.3 sgemm; A B^T on OpenBLAS 0.3.21 (OpenMP build, SkylakeX
// kernels)", "OpenBLAS 0.3.21 (OpenMP build, Cooperlake kernels)" or "Eigen
// 3.4.0 (its own kernels)": printed with every result, as cpu_blas.
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

// The widest vectors this CPU's float kernels can use: 512 (AVX-512F), 256
// (AVX2 with FMA) or 128.
int cpu_vector_bits();

// Whether OpenBLAS kernels of the set `core` (openblas_get_corename(), as
// "SkylakeX" or "Prescott") use vectors as wide as `cpu_bits` (Note [OpenBLAS
// on CPUs it does not know] in tensor/cpu_blas.cpp).
bool openblas_core_fits(const std::string& core, int cpu_bits);

// openblas_core_fits for the OpenBLAS loaded and this CPU: where it is false,
// the products Note [Eigen's GEMM on oneDNN's sgemm] sends to OpenBLAS run on
// oneDNN too. False in a build without OpenBLAS.
bool openblas_kernels_fit_cpu();

// Throws ConfigError when the OpenBLAS that the loader found is not the OpenMP
// build this one was linked against (Note [OpenBLAS's OpenMP build] in
// cmake/CpuBlas.cmake): another build would run its own threads beside
// OpenMP's. Called by Context::cpu(); nothing to check on Eigen's kernels.
void check_cpu_blas();

}  // namespace glassbox
