// tests/test_cublas_loader_cuda.cpp: cuBLAS is opened when first used, not at
// start (Note [cuBLAS by dlopen]), and every entry point Glassbox calls
// resolves in the cuBLAS this machine has; a library that does not open, or
// lacks the entry points, is named. Built with CUDA only; no GPU needed.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>

#include "tensor/context.h"
#include "tensor/cublas_loader_cuda.h"
#include "tensor/error.h"
#include "tensor/runtime_info.h"
#include "tests/support/strings.h"

namespace glassbox {
namespace {

using testing::contains_match;

bool loaded(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);  // RTLD_NOLOAD took a reference
  return true;
}

// The first two tests need a process that has not opened cuBLAS: under
// CTest each test runs in a process of its own, and a run of the whole binary
// takes them in file order, before the third opens it.
TEST(CublasLoader, NoCublasLibraryIsLoadedAtStart) {
  EXPECT_FALSE(loaded(cublas_lt_library_name())) << cublas_lt_library_name();
  EXPECT_FALSE(loaded(cublas_library_name())) << cublas_library_name();
}

// A CPU run in a CUDA build describes its runtime without opening cuBLAS,
// which it does not use.
TEST(CublasLoader, ACpuContextsRuntimeInfoLeavesCublasClosed) {
  const RuntimeInfo info = runtime_info(Context::cpu());
  EXPECT_EQ(info.cublas, "");
  EXPECT_FALSE(loaded(cublas_lt_library_name()));
}

TEST(CublasLoader, EveryEntryPointResolvesAndCallsGoThrough) {
  EXPECT_EQ(cublas_load_problem(), "");
  EXPECT_NO_THROW(require_cublas());
  EXPECT_TRUE(loaded(cublas_lt_library_name()));
  EXPECT_TRUE(loaded(cublas_library_name()));
  // cublasGetProperty through the forwarding function: the version of the
  // library opened, whose major version is in its name.
  const std::string version = cublas_version();
  const std::string name = cublas_library_name();
  const std::string major = name.substr(name.rfind('.') + 1);
  EXPECT_EQ(version.substr(0, major.size() + 1), major + ".") << version;
}

TEST(CublasLoader, EntryPointsAreNamedOnceEach) {
  const auto& entries = cublas_entry_points();
  ASSERT_GE(entries.size(), 20u);
  for (size_t i = 0; i < entries.size(); ++i) {
    for (size_t j = i + 1; j < entries.size(); ++j) EXPECT_STRNE(entries[i].name, entries[j].name);
    EXPECT_EQ(std::string(entries[i].name).starts_with("cublasLt"), entries[i].in_lt) << entries[i].name;
  }
}

TEST(CublasLoader, ALibraryThatDoesNotOpenIsNamedWithTheLoadersReason) {
  const std::string lt_missing = cublas_open_problem(cublas_library_name(), "libcublasLt.so.999");
  EXPECT_TRUE(contains_match(lt_missing, "^cannot open libcublasLt\\.so\\.999 \\(.*No such file")) << lt_missing;
  const std::string blas_missing = cublas_open_problem("libcublas.so.999", cublas_lt_library_name());
  EXPECT_TRUE(contains_match(blas_missing, "^cannot open libcublas\\.so\\.999 \\(")) << blas_missing;
}

TEST(CublasLoader, ALibraryWithoutTheEntryPointsIsNamedWithTheFirstMissing) {
  // cuBLASLt stands in for cuBLAS: it opens, and has none of cuBLAS's own functions.
  const auto& entries = cublas_entry_points();
  size_t blas_count = 0;
  std::string first_blas;
  for (const auto& entry : entries) {
    if (entry.in_lt) continue;
    if (blas_count++ == 0) first_blas = entry.name;
  }
  const std::string lt = cublas_lt_library_name();
  const std::string problem = cublas_open_problem(lt, lt);
  EXPECT_TRUE(problem.starts_with(cat(lt, " and ", lt, " lack ", blas_count, " of the ", entries.size(),
                                     " entry points Glassbox calls (", first_blas, " first)")))
      << problem;
  EXPECT_TRUE(contains_match(problem, "a cuBLAS older than the headers Glassbox was built with \\(\\d+\\.\\d+\\)\\?$"))
      << problem;
}

}  // namespace
}  // namespace glassbox
