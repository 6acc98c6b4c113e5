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

}  // namespace glassbox
