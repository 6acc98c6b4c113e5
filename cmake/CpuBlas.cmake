# cmake/CpuBlas.cmake: which kernels run the CPU's matrix products behind Eigen
# (docs/cpu.md, "Building for a CPU").
#
#   -DGLASSBOX_BLAS=oneDNN    (default) Eigen's products call Glassbox's sgemm_
#                             (tensor/gemm_onednn.cpp): oneDNN's sgemm, and for
#                             A B^T OpenBLAS (Note [Eigen's GEMM on oneDNN's
#                             sgemm]); needs both, and oneDNN for the
#                             convolutions (GLASSBOX_CPU_CONV=oneDNN, checked
#                             in CMakeLists.txt once cmake/CpuConv.cmake has run)
#   -DGLASSBOX_BLAS=OpenBLAS  Eigen's products call Debian's OpenMP build of
#                             OpenBLAS (EIGEN_USE_BLAS); tools/install_deps.sh
#                             installs it (libopenblas-openmp-dev)
#   -DGLASSBOX_BLAS=Eigen     Eigen's own kernels: the sanitizer build, and GPU
#                             machines, whose staged dependencies have no OpenBLAS
#
# Eigen stays the CPU code's math API either way; only the kernel under a
# product changes. Defines glassbox_cpu_blas, an interface target the library
# links publicly: EIGEN_USE_BLAS must be the same in every file that includes
# Eigen, the library's and the programs' (their products are other
# specialisations otherwise, one definition each), so it travels with the library.
#
# Note [OpenBLAS's OpenMP build]: Debian ships OpenBLAS three ways (pthreads,
# OpenMP, serial), chosen at run time through update-alternatives, with
# pthreads first. The pthreads build would start its own threads under
# Glassbox's OpenMP teams: 2 x 2 threads on 2 cores. The OpenMP build runs on
# one thread inside an active parallel region (omp_in_parallel) and uses
# OpenMP's own threads outside one: one thread pool. So the library is linked
# by its full path in the openmp folder, which CMake turns into a RUNPATH there,
# ahead of the alternatives link; Context::cpu() checks the build that loaded
# (tensor/cpu_blas.cpp). The clang of the sanitizer build links LLVM's libomp,
# and this OpenBLAS needs GCC's libgomp: two OpenMP runtimes in one process is
# not a supported combination, so that pairing is refused.
#
# Note [OpenBLAS under an address-space limit]: Debian's OpenBLAS 0.3.21
# (OpenMP build) retries its start-up buffers' mmap forever, before main(),
# where `ulimit -v` leaves too little room: a program that only links it
# hangs at `ulimit -v 300000` (OpenMathLib/OpenBLAS issue 5289). No code of
# Glassbox runs yet; OMP_NUM_THREADS=1 avoids it, or a larger limit
# (docs/cpu.md).
set(GLASSBOX_BLAS "oneDNN" CACHE STRING "Kernels behind Eigen's CPU products: oneDNN, OpenBLAS or Eigen")
set_property(CACHE GLASSBOX_BLAS PROPERTY STRINGS oneDNN OpenBLAS Eigen)

add_library(glassbox_cpu_blas INTERFACE)
if(GLASSBOX_BLAS STREQUAL "OpenBLAS" OR GLASSBOX_BLAS STREQUAL "oneDNN")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "Glassbox: GLASSBOX_BLAS=${GLASSBOX_BLAS} needs GCC's OpenMP runtime (Debian's OpenBLAS is "
                        "built on libgomp; clang links libomp); configure with -DGLASSBOX_BLAS=Eigen")
  endif()
  set(_openblas_dir "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp")
  find_library(GLASSBOX_OPENBLAS_LIBRARY NAMES openblas PATHS "${_openblas_dir}" NO_DEFAULT_PATH)
  find_path(GLASSBOX_OPENBLAS_INCLUDE_DIR NAMES cblas.h
            PATHS "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp" NO_DEFAULT_PATH)
  if(NOT GLASSBOX_OPENBLAS_LIBRARY OR NOT GLASSBOX_OPENBLAS_INCLUDE_DIR)
    message(FATAL_ERROR "Glassbox: GLASSBOX_BLAS=${GLASSBOX_BLAS} needs Debian's OpenMP build of OpenBLAS in "
                        "${_openblas_dir} (apt-get install libopenblas-openmp-dev, or tools/install_deps.sh); "
                        "-DGLASSBOX_BLAS=Eigen builds on Eigen's own kernels instead")
  endif()
  set(_gemm_onednn 0)
  if(GLASSBOX_BLAS STREQUAL "oneDNN")
    set(_gemm_onednn 1)
  endif()
  target_compile_definitions(glassbox_cpu_blas INTERFACE EIGEN_USE_BLAS GLASSBOX_OPENBLAS=1
                                                         GLASSBOX_GEMM_ONEDNN=${_gemm_onednn})
  target_link_libraries(glassbox_cpu_blas INTERFACE "${GLASSBOX_OPENBLAS_LIBRARY}")
  if(GLASSBOX_BLAS STREQUAL "oneDNN")
    message(STATUS "Glassbox: Eigen's products on oneDNN's sgemm, A B^T on OpenBLAS (${GLASSBOX_OPENBLAS_LIBRARY})")
  else()
    message(STATUS "Glassbox: Eigen's products on OpenBLAS (${GLASSBOX_OPENBLAS_LIBRARY})")
  endif()
elseif(GLASSBOX_BLAS STREQUAL "Eigen")
  target_compile_definitions(glassbox_cpu_blas INTERFACE GLASSBOX_OPENBLAS=0 GLASSBOX_GEMM_ONEDNN=0)
  message(STATUS "Glassbox: Eigen's products on Eigen's own kernels")
else()
  message(FATAL_ERROR "Glassbox: GLASSBOX_BLAS is oneDNN, OpenBLAS or Eigen, got '${GLASSBOX_BLAS}'")
endif()
