// tensor/gemm_onednn.cpp: the float GEMM that Eigen's products call
// (EIGEN_USE_BLAS: the Fortran BLAS symbol sgemm_), on oneDNN's sgemm for
// most layouts and on OpenBLAS for the two it does better.
//
// Note [Eigen's GEMM on oneDNN's sgemm]: with EIGEN_USE_BLAS every float
// product of Eigen matrices calls sgemm_, the Fortran BLAS interface, which
// this file defines; OpenBLAS (cmake/CpuBlas.cmake) defines it too, and the
// definition in the program wins (a static library's object is linked before
// the shared library is searched). Against torch.matmul (PyTorch's, on MKL),
// oneDNN's dnnl_sgemm (Debian's libdnnl, which runs the convolutions
// already) and OpenBLAS's cblas_sgemm split the layouts of Glassbox's
// row-major products, C = L R, as follows:
// - A B (a layer's backward-data, an im2col convolution's forward, the 2048^3
//   yardstick): oneDNN is ahead.
// - A^T B (weight gradients of linear layers, a 1x1 convolution's
//   backward-data): oneDNN is ahead, except with fewer than 256 columns (one
//   image's 7x7 or 14x14 pixels in ResNet-50's last stages), where OpenBLAS
//   is.
// - A B^T (a linear layer's forward, an LSTM's input projections, a 1x1
//   convolution's weight gradient): OpenBLAS is ahead.
// So A B^T and narrow A^T B run on OpenBLAS, the rest on oneDNN; all of them
// on oneDNN where OpenBLAS has no kernels for this CPU's widest vectors (Note
// [OpenBLAS on CPUs it does not know] in tensor/cpu_blas.cpp). The libraries
// take turns in one process (bench/probes/gemm_same_process.py).
//
// Inside an OpenMP team (a convolution's tiles, a product's blocks) both
// libraries run a product on the calling thread (omp_in_parallel); outside
// one, on OpenMP's threads: one pool either way (Note [OpenBLAS's OpenMP
// build]).
#include "tensor/cpu_blas.h"

#if GLASSBOX_GEMM_ONEDNN  // -DGLASSBOX_BLAS=oneDNN (cmake/CpuBlas.cmake)

#include <cblas.h>

#include <atomic>

#include "oneapi/dnnl/dnnl.h"
#include "tensor/error.h"

namespace glassbox {
namespace {
const char* dnnl_status_name(dnnl_status_t status) {
  return status == dnnl_invalid_arguments ? "invalid arguments" : "oneDNN error";
}
std::atomic<int64_t> g_onednn_calls{0}, g_openblas_calls{0};
}  // namespace

GemmCalls cpu_gemm_calls() { return {g_onednn_calls.load(), g_openblas_calls.load()}; }

}  // namespace glassbox

// The Fortran BLAS signature, column-major, every argument by pointer, as
// Eigen's GeneralMatrixMatrix_BLAS.h declares it (Eigen/src/misc/blas.h).
extern "C" int sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                      const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                      const float* beta, float* c, const int* ldc) {
  const bool a_transposed = *transa != 'N' && *transa != 'n';
  const bool b_transposed = *transb != 'N' && *transb != 'n';
  // Column-major C (m x n) = op(A) op(B) is row-major C^T (n x m) = op(B)^T op(A)^T:
  // in row-major terms B's memory is the left operand L, transposed when transb
  // is, A's the right one R, and the row-major product has m columns.
  const bool l_transposed = b_transposed, r_transposed = a_transposed;
  const bool openblas = glassbox::openblas_kernels_fit_cpu() &&  // decided once, at the first call
                        ((!l_transposed && r_transposed) ||
                         (l_transposed && !r_transposed && *m < glassbox::kNarrowColumnsOnOpenBlas));
  if (openblas) {
    glassbox::g_openblas_calls.fetch_add(1, std::memory_order_relaxed);
    cblas_sgemm(CblasColMajor, a_transposed ? CblasTrans : CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans,
                *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c, *ldc);
    return 0;
  }
  glassbox::g_onednn_calls.fetch_add(1, std::memory_order_relaxed);
  // Only arguments that no Eigen matrix can produce fail (dnnl_invalid_arguments);
  // Eigen's products are not noexcept, so the error reaches the layer's caller.
  GLASSBOX_CHECK_STATUS(dnnl_sgemm(b_transposed ? 'T' : 'N', a_transposed ? 'T' : 'N', *n, *m, *k, *alpha, b, *ldb,
                                   a, *lda, *beta, c, *ldc),
                        dnnl_success, glassbox::dnnl_status_name, "oneDNN");
  return 0;
}

#endif  // GLASSBOX_GEMM_ONEDNN
