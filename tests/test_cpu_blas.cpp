// tests/test_cpu_blas.cpp: the kernels under Eigen's CPU products
// (cmake/CpuBlas.cmake): what a result says they were, and the refusal of an
// OpenBLAS build other than the OpenMP one the library was linked against.
#include <gtest/gtest.h>

#include <filesystem>

#include "tensor/context.h"
#include "tensor/cpu_blas.h"
#include "tensor/eigen_maps.h"
#include "tensor/runtime_info.h"
#include "tests/support/command.h"

namespace glassbox {
namespace {

using testing::contains;

TEST(CpuBlas, EveryResultNamesTheKernelsItRanOn) {
  const Context ctx = Context::cpu();
  const RuntimeInfo info = runtime_info(ctx);
  bool listed = false;
  for (const auto& [key, value] : info.fields()) listed |= key == "cpu_blas" && value == cpu_blas_description();
  EXPECT_TRUE(listed) << "cpu_blas is missing from the run context";
#if GLASSBOX_OPENBLAS
  EXPECT_TRUE(contains(cpu_blas_description(), "OpenBLAS 0.")) << cpu_blas_description();
  EXPECT_TRUE(contains(cpu_blas_description(), "(OpenMP build, ")) << cpu_blas_description();
#else
  EXPECT_TRUE(contains(cpu_blas_description(), "(its own kernels)")) << cpu_blas_description();
#endif
}

// Note [OpenBLAS on CPUs it does not know]: a kernel set fits a CPU when its
// vectors are as wide as the CPU's widest.
TEST(CpuBlas, OpenBlasKernelsFitOnlyCpusNoWiderThanTheirVectors) {
  EXPECT_FALSE(openblas_core_fits("Prescott", 512));
  EXPECT_FALSE(openblas_core_fits("Prescott", 256));
  EXPECT_TRUE(openblas_core_fits("Prescott", 128));
  EXPECT_FALSE(openblas_core_fits("Sandybridge", 256)) << "AVX without AVX2's FMA";
  EXPECT_FALSE(openblas_core_fits("Haswell", 512));
  EXPECT_TRUE(openblas_core_fits("Haswell", 256));
  EXPECT_TRUE(openblas_core_fits("Zen", 256));
  EXPECT_TRUE(openblas_core_fits("SkylakeX", 512));
  EXPECT_TRUE(openblas_core_fits("COOPERLAKE", 512)) << "core names compare without case";
  EXPECT_TRUE(openblas_core_fits("SapphireRapids", 512));
}

// Whether OpenBLAS takes its products is said in cpu_blas (every result) and
// in the CPU path that `glassbox time` heads its table with.
TEST(CpuBlas, TheDescriptionSaysWhetherOpenBlasTakesItsProducts) {
#if !GLASSBOX_GEMM_ONEDNN
  GTEST_SKIP() << "no sgemm_ of Glassbox's own in this build (GLASSBOX_BLAS is not oneDNN): nothing routed";
#else
  const bool fits = openblas_kernels_fit_cpu();
  EXPECT_EQ(contains(cpu_blas_description(), "; A B^T on OpenBLAS"), fits) << cpu_blas_description();
  EXPECT_EQ(contains(cpu_blas_description(), ", every layout: OpenBLAS"), !fits) << cpu_blas_description();
  EXPECT_EQ(contains(cpu_path_name(), "and OpenBLAS"), fits) << cpu_path_name();
  const int bits = cpu_vector_bits();
  if (bits < 256) GTEST_SKIP() << "no AVX2 on this CPU: no OpenBLAS kernels to force that would not fit";
  // OPENBLAS_CORETYPE, read by OpenBLAS as it loads, forces its kernels.
  const std::string fitting = bits == 512 ? "SkylakeX" : "Haswell";
  const std::string time_lenet = testing::program_path(GLASSBOX_CLI_PATH) + " time LeNet --batch 1";
  const testing::CommandOutcome narrow = testing::run_command("OPENBLAS_CORETYPE=Prescott " + time_lenet);
  EXPECT_EQ(narrow.exit_code, 0) << narrow.output;
  EXPECT_TRUE(contains(narrow.output, "CPU path: Eigen on oneDNN's sgemm, oneDNN convolutions")) << narrow.output;
  const testing::CommandOutcome wide = testing::run_command("OPENBLAS_CORETYPE=" + fitting + " " + time_lenet);
  EXPECT_EQ(wide.exit_code, 0) << wide.output;
  EXPECT_TRUE(contains(wide.output, "CPU path: Eigen on oneDNN's sgemm and OpenBLAS, oneDNN")) << wide.output;
#endif
}

// The product Eigen hands to the BLAS (large enough not to be Eigen's
// coefficient-wise small product) against a plain triple loop.
TEST(CpuBlas, AStridedProductMatchesThePlainSum) {
  const int64_t m = 37, k = 53, n = 29, stride = 61;
  std::vector<float> a(m * k), b(k * stride), c(m * n, 1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
  StridedMatrixMap bm(b.data(), k, n, Eigen::OuterStride<>(stride));
  MatrixMap(c.data(), m, n).noalias() += MatrixMap(a.data(), m, k) * bm;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 1.0;
      for (int64_t p = 0; p < k; ++p) sum += double{a[i * k + p]} * b[p * stride + j];
      ASSERT_NEAR(c[i * n + j], sum, 1e-3) << "at (" << i << ", " << j << ")";
    }
  }
}

// Note [OpenBLAS's OpenMP build] (cmake/CpuBlas.cmake): the loader may find
// another build first (LD_PRELOAD, LD_LIBRARY_PATH); the program must refuse
// it by name rather than run two thread pools. The serial or pthreads build
// stands in for the wrong one (tools/install_deps.sh installs the serial one).
TEST(CpuBlas, AnotherOpenBlasBuildIsRefusedByName) {
#if !GLASSBOX_OPENBLAS
  GTEST_SKIP() << "built on Eigen's own kernels (GLASSBOX_BLAS=Eigen): no OpenBLAS to check";
#else
  const char* candidates[][2] = {{"openblas-serial", "sequential build"}, {"openblas-pthread", "pthreads build"}};
  for (const auto& [folder, build] : candidates) {
    const std::string library = std::string("/usr/lib/" GLASSBOX_LIBRARY_ARCH "/") + folder + "/libopenblas.so.0";
    if (!std::filesystem::exists(library)) continue;
    const testing::CommandOutcome r = testing::run_command("LD_PRELOAD=" + library + " " +
                                                           testing::program_path(GLASSBOX_CLI_PATH) + " time LeNet --batch 1");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, std::string("the OpenBLAS loaded at run time is its ") + build +
                                       ", not the OpenMP build Glassbox was linked against"))
        << r.output;
    return;
  }
  GTEST_SKIP() << "no other OpenBLAS build installed to stand in for the wrong one "
                  "(apt-get install libopenblas0-serial)";
#endif
}

}  // namespace
}  // namespace glassbox
