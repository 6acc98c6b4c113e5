// tensor/product.h: `dst = lhs * rhs` for the layers' float products, on the
// build's sgemm without Eigen's pass that zeroes dst first.
//
// Note [Products without Eigen's zeroing pass]: Eigen 3.4 evaluates
// `dst.noalias() = lhs * rhs` as dst.setZero(), then dst += lhs * rhs: under
// EIGEN_USE_BLAS an sgemm with beta = 1, which reads the zeros back. Two extra
// passes over dst, which cost most where the product is short (k, the summed
// dimension, small against dst's size): VGG16's conv1_1 (64 x 50176 x 27) runs
// at about half the speed of one sgemm with beta = 0, and even 2048^3 loses a
// tenth. So the layers' assigned products come here: one sgemm_ call with
// beta = 0, with the operands read as Eigen's own BLAS path reads them
// (internal::blas_traits: data, outer stride, storage order, through Transpose
// and Block). A build on Eigen's own kernels (GLASSBOX_BLAS=Eigen) has no
// sgemm_ and keeps Eigen's product, as do products too small for Eigen to hand
// to a BLAS.
#pragma once

#include <Eigen/Core>
#include <type_traits>

namespace glassbox {

namespace product_detail {

// The BLAS transpose flag of an operand as a column-major sgemm_ sees it: a
// row-major matrix's memory is the column-major transpose, so a row-major
// operand of the row-major product is passed as is ('N', in C^T = B^T A^T).
template <typename Extracted>
constexpr char column_major_flag() {
  using Plain = std::remove_cv_t<std::remove_reference_t<Extracted>>;
  return (int(Eigen::internal::traits<Plain>::Flags) & Eigen::RowMajorBit) ? 'N' : 'T';
}

// Eigen's own rule for handing a product to the GEMM (EIGEN_GEMM_TO_COEFFBASED_THRESHOLD).
inline bool small_for_blas(Eigen::Index depth, Eigen::Index rows, Eigen::Index cols) {
  return depth + rows + cols < EIGEN_GEMM_TO_COEFFBASED_THRESHOLD || depth == 0;
}

}  // namespace product_detail

// dst = lhs * rhs (beta 0) or, with accumulate, dst += lhs * rhs (beta 1, as
// write_or_add's kAdd: pass mode == GradMode::kAdd);
// dst a row-major float matrix, map or block with unit inner stride, lhs and
// rhs float matrices, maps, blocks or their transposes, none aliasing dst.
template <typename Dst, typename Lhs, typename Rhs>
void product_into(Dst&& dst, const Lhs& lhs, const Rhs& rhs, bool accumulate = false) {
  static_assert(int(std::remove_reference_t<Dst>::Flags) & Eigen::RowMajorBit, "dst must be row-major");
#if GLASSBOX_OPENBLAS  // EIGEN_USE_BLAS: sgemm_ is declared by Eigen/src/misc/blas.h
  const Eigen::Index m = dst.rows(), n = dst.cols(), k = lhs.cols();
  using LhsBlas = Eigen::internal::blas_traits<Lhs>;
  using RhsBlas = Eigen::internal::blas_traits<Rhs>;
  static_assert(LhsBlas::HasUsableDirectAccess && RhsBlas::HasUsableDirectAccess,
                "product_into reads its operands in place: unit inner stride");
  if (!product_detail::small_for_blas(k, m, n) && n > 1 && m > 1) {
    const auto& a = LhsBlas::extract(lhs);  // a reference, or a Transpose view holding one
    const auto& b = RhsBlas::extract(rhs);
    const char a_flag = product_detail::column_major_flag<decltype(a)>();
    const char b_flag = product_detail::column_major_flag<decltype(b)>();
    const float alpha = LhsBlas::extractScalarFactor(lhs) * RhsBlas::extractScalarFactor(rhs);
    const float beta = accumulate ? 1.0f : 0.0f;
    const int rows = static_cast<int>(m), cols = static_cast<int>(n), depth = static_cast<int>(k);
    const int lda = static_cast<int>(a.outerStride()), ldb = static_cast<int>(b.outerStride());
    const int ldc = static_cast<int>(dst.outerStride());
    // Row-major C = A B is column-major C^T = B^T A^T.
    sgemm_(&b_flag, &a_flag, &cols, &rows, &depth, &alpha, b.data(), &ldb, a.data(), &lda, &beta, dst.data(),
           &ldc);
    return;
  }
#endif
  if (accumulate) {
    dst.noalias() += lhs * rhs;
  } else {
    dst.noalias() = lhs * rhs;
  }
}

}  // namespace glassbox
