// tests/test_cpu_features.cpp: what a result says of the CPU's vector units,
// the build's and oneDNN's (tensor/cpu_features.h). The expectations follow
// this CPU: they ask cpuid and oneDNN, then check what that CPU should get.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/context.h"
#include "tensor/cpu_features.h"
#include "tensor/runtime_info.h"
#include "tests/support/strings.h"

namespace glassbox {
namespace {

using testing::contains;

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item.substr(item.find_first_not_of(' ')));
  return out;
}

TEST(CpuFeatures, TheBuildUsesOnlyWhatThisCpuHas) {
  const std::string cpu = cpu_simd();
  for (const std::string& feature : split_list(cpu_build_simd())) {
    EXPECT_TRUE(contains(cpu, feature)) << "built for " << cpu_build_simd() << ", CPU has " << cpu;
  }
}

TEST(CpuFeatures, TheCpuHasTheBaselineEveryTestAssumes) {
  // Every supported CPU has AVX2 with FMA (x86-64-v3).
  const std::vector<std::string> cpu = split_list(cpu_simd());
  EXPECT_EQ(cpu.front(), "AVX2") << cpu_simd();
  EXPECT_TRUE(contains(cpu_simd(), "FMA")) << cpu_simd();
}

TEST(CpuFeatures, OneDnnRunsTheWidestIsaTheCpuHasUnlessCapped) {
  if (!GLASSBOX_WITH_ONEDNN) {
    EXPECT_EQ(onednn_cpu_isa(), "");
    GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  }
  const bool cpu_avx512 = contains(cpu_simd(), "AVX-512F");
  if (std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr && std::getenv("DNNL_MAX_CPU_ISA") == nullptr) {
    EXPECT_EQ(onednn_runs_avx512(), cpu_avx512) << "oneDNN runs " << onednn_cpu_isa() << ", CPU has " << cpu_simd();
  } else if (!cpu_avx512) {
    EXPECT_FALSE(onednn_runs_avx512()) << onednn_cpu_isa();
  }
  if (!onednn_runs_avx512()) {
    EXPECT_TRUE(onednn_cpu_isa().starts_with("avx2")) << onednn_cpu_isa();
  }
}

TEST(CpuFeatures, EveryResultNamesTheBuildsTheCpusAndOneDnnsVectors) {
  const RuntimeInfo info = runtime_info(Context::cpu());
  std::string simd;
  for (const auto& [key, value] : info.fields()) {
    if (key == "cpu_simd") simd = value;
  }
  EXPECT_EQ(simd, cpu_simd_description());
  EXPECT_TRUE(simd.starts_with("build " + cpu_build_simd() + "; CPU " + cpu_simd())) << simd;
  EXPECT_EQ(contains(simd, "; oneDNN "), GLASSBOX_WITH_ONEDNN != 0) << simd;
}

}  // namespace
}  // namespace glassbox
