// bench/support/sgemm_reference.h: the yardsticks. A large float32 matrix
// product through the library each backend leans on (Eigen's threaded GEMM on
// the CPU, cuBLAS on the GPU) shows what the machine can do, so a network's
// TFLOP/s can be read against it in the same run.
#pragma once

#include <benchmark/benchmark.h>

#include "tensor/context.h"

namespace glassbox::bench {

// C = A * B with A, B, C n x n float32 from U(-1, 1); counter TFLOP/s = 2 n^3 / time.
void sgemm_eigen(benchmark::State& state, int n);
void sgemm_cublas(benchmark::State& state, int n, Precision precision);  // CUDA builds only

}  // namespace glassbox::bench
