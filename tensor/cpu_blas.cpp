// tensor/cpu_blas.cpp: the CPU products' kernels, described and checked.
#include "tensor/cpu_blas.h"

#include <Eigen/Core>
#include <strings.h>  // strcasecmp

#include <utility>

#include "tensor/error.h"

#if GLASSBOX_OPENBLAS
#include <cblas.h>  // openblas_get_parallel, openblas_get_config: OpenBLAS's own extensions
#endif
#if GLASSBOX_WITH_ONEDNN
#include "oneapi/dnnl/dnnl.h"  // dnnl_version
#endif

namespace glassbox {

// Note [OpenBLAS on CPUs it does not know]: Debian's OpenBLAS 0.3.21 (a
// DYNAMIC_ARCH build) picks its kernels when it loads, from the CPU's model
// number, and on a model it does not know it takes its Prescott kernels
// (SSE3, 128-bit), whatever vectors the CPU has. A Xeon it does not know
// (family 6, model 207, AVX-512) gets them, and there OpenBLAS runs the A B^T
// products of linear layers and of 1x1 convolutions' weight gradients at a
// third of oneDNN's sgemm speed or less; oneDNN picks its kernels from the
// CPU's feature flags. Even with its SkylakeX kernels forced
// (OPENBLAS_CORETYPE=SkylakeX) OpenBLAS is no faster than oneDNN there
// (bench/probes/gemm_same_process.py). So OpenBLAS keeps the products of
// Note [Eigen's GEMM on oneDNN's sgemm] only where its kernels use the CPU's
// widest vectors; elsewhere every product runs on oneDNN, and cpu_blas says
// so and why. OPENBLAS_CORETYPE, read by OpenBLAS as it loads, overrides its
// choice, and this check follows it.

int cpu_vector_bits() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 256;
#endif
  return 128;
}

bool openblas_core_fits(const std::string& core, int cpu_bits) {
  // OpenBLAS's x86-64 kernel sets that use AVX2 with FMA or AVX-512; every
  // other set (Prescott, Nehalem, Sandybridge, ...) uses narrower vectors.
  static constexpr std::pair<const char*, int> kWideCores[] = {
      {"SkylakeX", 512}, {"Cooperlake", 512}, {"SapphireRapids", 512},
      {"Haswell", 256},  {"Zen", 256},        {"Excavator", 256}};
  int core_bits = 128;
  for (const auto& [name, bits] : kWideCores) {
    if (strcasecmp(core.c_str(), name) == 0) core_bits = bits;
  }
  return core_bits >= cpu_bits;
}

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
  // Note [OpenBLAS on CPUs it does not know]
  const std::string unfit = openblas_kernels_fit_cpu()
                                ? ""
                                : cat(", narrower than this CPU's ", cpu_vector_bits(),
                                      "-bit vectors; OPENBLAS_CORETYPE chooses others");
  return cat(config.substr(0, second_space), " (", threading_of(openblas_get_parallel()), ", ",
             openblas_get_corename(), " kernels", unfit, ")");
}
}  // namespace

bool openblas_kernels_fit_cpu() {
  static const bool fits = openblas_core_fits(openblas_get_corename(), cpu_vector_bits());
  return fits;
}

#if GLASSBOX_GEMM_ONEDNN
// Note [Eigen's GEMM on oneDNN's sgemm] (tensor/gemm_onednn.cpp).
std::string cpu_blas_description() {
  const dnnl_version_t* v = dnnl_version();
  const std::string onednn = cat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " sgemm");
  if (!openblas_kernels_fit_cpu()) return cat(onednn, ", every layout: ", openblas_description());
  return cat(onednn, "; A B^T on ", openblas_description());
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

bool openblas_kernels_fit_cpu() { return false; }

#endif

#if !GLASSBOX_GEMM_ONEDNN
GemmCalls cpu_gemm_calls() { return {}; }  // no sgemm_ of Glassbox's own (tensor/gemm_onednn.cpp)
#endif

std::string cpu_path_name() {
  std::string name = GLASSBOX_GEMM_ONEDNN ? (openblas_kernels_fit_cpu() ? "Eigen on oneDNN's sgemm and OpenBLAS"
                                                                       : "Eigen on oneDNN's sgemm")
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
