// tensor/cublas_loader_cuda.h: cuBLAS and cuBLASLt, opened at run time
// (Note [cuBLAS by dlopen] in tensor/cublas_loader_cuda.cpp).
#pragma once

#include <string>
#include <vector>

namespace glassbox {

// The libraries' names, as the dynamic loader looks them up
// (LD_LIBRARY_PATH, the program's RUNPATH, the system's).
std::string cublas_library_name();    // libcublas.so.<major>
std::string cublas_lt_library_name();  // libcublasLt.so.<major>

// Why cuBLAS cannot be used, "" where it can: a library that does not open
// (with the loader's reason) or lacks an entry point Glassbox calls.
// Opened, and answered, once per process.
const std::string& cublas_load_problem();

// The opened cuBLAS's version ("13.1.0", cublasGetProperty), "" where it
// cannot be opened. Opens it.
std::string cublas_version();

// Throws Error with cublas_load_problem() where it is not "". A CUDA context
// asks before its first cuBLAS handle, so that a missing library is named
// once, not as the status of a later call.
void require_cublas();

// The entry points Glassbox calls, by their exported names, with the library
// that holds each (for the test that every one resolves).
struct CublasEntryPoint {
  const char* name;
  bool in_lt;  // cuBLASLt's, else cuBLAS's
};
const std::vector<CublasEntryPoint>& cublas_entry_points();

// Opens `blas` and `lt` (names or paths) and resolves every entry point in
// them, without keeping anything: the same answer as cublas_load_problem()
// for other names (the test of the refusals).
std::string cublas_open_problem(const std::string& blas, const std::string& lt);

}  // namespace glassbox
