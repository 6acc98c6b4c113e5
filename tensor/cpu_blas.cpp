// tensor/cpu_blas.cpp: the CPU products' kernels, described and checked.
#include "tensor/cpu_blas.h"

#include <Eigen/Core>

#include "tensor/error.h"

#if GLASSBOX_OPENBLAS
#include <cblas.h>  // openblas_get_parallel, openblas_get_config: OpenBLAS's own extensions
#endif
#if GLASSBOX_WITH_ONEDNN
#include "oneapi/dnnl/dnnl.h"  // dnnl_version
#endif

namespace glassbox {

#if GLASSBOX_OPENBLAS

namespace {
const char* threading_of(int parallel) {
  switch (parallel) {
    case OPENBLAS_SEQUENTIAL: return "sequential build";
    case OPENBLAS_THREAD: return "pthreads build";
    case OPENBLAS_OPENMP: return "OpenMP build";
    default: return "unknown build";
  }
}

std::string openblas_description() {
  // The config string starts "OpenBLAS 0.3.21 ..."; keep its name and version only.
  const std::string config = openblas_get_config();
  const size_t second_space = config.find(' ', config.find(' ') + 1);
  return cat(config.substr(0, second_space), " (", threading_of(openblas_get_parallel()), ", ",
             openblas_get_corename(), " kernels)");
}
}  // namespace

#if GLASSBOX_GEMM_ONEDNN
// Note [Eigen's GEMM on oneDNN's sgemm] (tensor/gemm_onednn.cpp).
std::string cpu_blas_description() {
  const dnnl_version_t* v = dnnl_version();
  return cat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " sgemm; A B^T on ", openblas_description());
}

const char* cpu_gemm_name() { return "oneDNN"; }
#else
std::string cpu_blas_description() { return openblas_description(); }

const char* cpu_gemm_name() { return "OpenBLAS"; }
#endif

void check_cpu_blas() {
  const int parallel = openblas_get_parallel();
  if (parallel == OPENBLAS_OPENMP) return;
  throw ConfigError(cat("the OpenBLAS loaded at run time is its ", threading_of(parallel),
                        ", not the OpenMP build Glassbox was linked against: its GEMMs would not share OpenMP's "
                        "threads. Check LD_LIBRARY_PATH and LD_PRELOAD; Debian's OpenMP build lives in "
                        "/usr/lib/<arch>/openblas-openmp (libopenblas0-openmp)"));
}

#else

std::string cpu_blas_description() {
  return cat("Eigen ", EIGEN_WORLD_VERSION, ".", EIGEN_MAJOR_VERSION, ".", EIGEN_MINOR_VERSION, " (its own kernels)");
}

const char* cpu_gemm_name() { return "Eigen"; }

void check_cpu_blas() {}

#endif

#if !GLASSBOX_GEMM_ONEDNN
GemmCalls cpu_gemm_calls() { return {}; }  // no sgemm_ of Glassbox's own (tensor/gemm_onednn.cpp)
#endif

std::string cpu_path_name() {
  std::string name = GLASSBOX_GEMM_ONEDNN ? "Eigen on oneDNN's sgemm and OpenBLAS"
                     : GLASSBOX_OPENBLAS  ? "Eigen on OpenBLAS"
                                          : "Eigen";
  if (GLASSBOX_WITH_ONEDNN) name += ", oneDNN convolutions and linear forwards";
  return name;
}

std::string cpu_conv_description() {
#if GLASSBOX_WITH_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  return cat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " (kernels above 1x1, and the forward of 1x1 ones; their backward on im2col + GEMM)");
#else
  return "Glassbox im2col + GEMM";
#endif
}

}  // namespace glassbox
