// tensor/eigen_maps.h: Eigen views of tensor memory, for the CPU paths.
// Tensors are row-major (C order), so matrices are mapped RowMajor: a (N, F)
// tensor is an N x F matrix whose rows are samples.
#pragma once

#include <Eigen/Core>

#include "tensor/tensor.h"

namespace glassbox {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
// A block of a larger row-major matrix: `rows` x `cols` with rows `stride` apart.
using StridedMatrixMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

inline MatrixMap as_matrix(const Tensor& t, int64_t rows, int64_t cols) {
  return MatrixMap(t.data<float>(), rows, cols);
}
inline ArrayMap as_array(const Tensor& t) { return ArrayMap(t.data<float>(), t.numel()); }
inline ArrayMap as_array(float* data, int64_t count) { return ArrayMap(data, count); }

// Note [Eigen's own threads]: Eigen splits a large product over OpenMP
// threads itself unless omp_get_num_threads() > 1, i.e. unless it is called
// from a team of several threads. The CPU paths call Eigen from their own
// parallel regions, but some teams have one thread (a layer planned for one
// thread, a loop with a single block), and from there Eigen opens a nested
// team whose threads busy-wait for each other in its GEMM while OpenMP's idle
// threads spin too: a small product (LeNet's fc4 backward) then takes a
// hundred times as long. All of Glassbox's CPU parallelism is its own (tiles,
// blocks, chunks), so Eigen is kept on one thread; the SGEMM yardstick turns
// Eigen's threads back on for its own timing
// (bench/support/sgemm_reference.cpp). Called by Context::cpu().
inline void keep_eigen_single_threaded() { Eigen::setNbThreads(1); }

}  // namespace glassbox
