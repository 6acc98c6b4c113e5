# cmake/CpuBlas.cmake: which kernels run the CPU's matrix products behind Eigen
# (docs/performance.md, "The GEMM behind the CPU paths").
#
#   -DGLASSBOX_BLAS=OpenBLAS  (default) Eigen's products call Debian's OpenMP
#                             build of OpenBLAS (EIGEN_USE_BLAS); tools/install_deps.sh
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
set(GLASSBOX_BLAS "OpenBLAS" CACHE STRING "Kernels behind Eigen's CPU products: OpenBLAS or Eigen")
set_property(CACHE GLASSBOX_BLAS PROPERTY STRINGS OpenBLAS Eigen)

add_library(glassbox_cpu_blas INTERFACE)
if(GLASSBOX_BLAS STREQUAL "OpenBLAS")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "Glassbox: GLASSBOX_BLAS=OpenBLAS needs GCC's OpenMP runtime (Debian's OpenBLAS is "
                        "built on libgomp; clang links libomp); configure with -DGLASSBOX_BLAS=Eigen")
  endif()
  set(_openblas_dir "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp")
  find_library(GLASSBOX_OPENBLAS_LIBRARY NAMES openblas PATHS "${_openblas_dir}" NO_DEFAULT_PATH)
  find_path(GLASSBOX_OPENBLAS_INCLUDE_DIR NAMES cblas.h
            PATHS "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp" NO_DEFAULT_PATH)
  if(NOT GLASSBOX_OPENBLAS_LIBRARY OR NOT GLASSBOX_OPENBLAS_INCLUDE_DIR)
    message(FATAL_ERROR "Glassbox: GLASSBOX_BLAS=OpenBLAS needs Debian's OpenMP build of OpenBLAS in "
                        "${_openblas_dir} (apt-get install libopenblas-openmp-dev, or tools/install_deps.sh); "
                        "-DGLASSBOX_BLAS=Eigen builds on Eigen's own kernels instead")
  endif()
  target_compile_definitions(glassbox_cpu_blas INTERFACE EIGEN_USE_BLAS GLASSBOX_OPENBLAS=1)
  target_link_libraries(glassbox_cpu_blas INTERFACE "${GLASSBOX_OPENBLAS_LIBRARY}")
  message(STATUS "Glassbox: Eigen's products on OpenBLAS (${GLASSBOX_OPENBLAS_LIBRARY})")
elseif(GLASSBOX_BLAS STREQUAL "Eigen")
  target_compile_definitions(glassbox_cpu_blas INTERFACE GLASSBOX_OPENBLAS=0)
  message(STATUS "Glassbox: Eigen's products on Eigen's own kernels")
else()
  message(FATAL_ERROR "Glassbox: GLASSBOX_BLAS is OpenBLAS or Eigen, got '${GLASSBOX_BLAS}'")
endif()
