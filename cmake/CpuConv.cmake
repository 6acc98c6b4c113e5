# cmake/CpuConv.cmake: what runs the CPU's convolutions (docs/cpu.md,
# "Building for a CPU").
#
#   -DGLASSBOX_CPU_CONV=oneDNN  (default) Conv2d layers whose kernel is larger
#                               than 1x1 call Debian's oneDNN (libdnnl-dev, which
#                               tools/install_deps.sh installs); 1x1 layers and
#                               stride-1 depthwise layers keep Glassbox's own paths
#   -DGLASSBOX_CPU_CONV=im2col  Glassbox's own im2col + GEMM for every layer:
#                               the sanitizer build, and GPU machines, whose
#                               staged dependencies have no oneDNN (40 MiB)
#
# Either way Glassbox's im2col + GEMM path stays in the library: it is the plain
# reference the oneDNN path is tested against, and a layer can be pinned to it
# (Conv2d::pin_cpu_path). Sets GLASSBOX_WITH_ONEDNN (ON/OFF) for the library's
# file selection: layers/*_onednn.cpp are compiled only with oneDNN.
#
# oneDNN's Debian build runs its threads on GCC's OpenMP runtime (libgomp), the
# one Glassbox's own parallel regions use: one thread pool, as for OpenBLAS
# (Note [OpenBLAS's OpenMP build] in cmake/CpuBlas.cmake), and clang's libomp
# beside it would make two, so that pairing is refused.
set(GLASSBOX_CPU_CONV "oneDNN" CACHE STRING "What runs the CPU's convolutions: oneDNN or im2col")
set_property(CACHE GLASSBOX_CPU_CONV PROPERTY STRINGS oneDNN im2col)

if(GLASSBOX_CPU_CONV STREQUAL "oneDNN")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "Glassbox: GLASSBOX_CPU_CONV=oneDNN needs GCC's OpenMP runtime (Debian's oneDNN is "
                        "built on libgomp; clang links libomp); configure with -DGLASSBOX_CPU_CONV=im2col")
  endif()
  find_path(GLASSBOX_ONEDNN_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.hpp)
  find_library(GLASSBOX_ONEDNN_LIBRARY NAMES dnnl)
  if(NOT GLASSBOX_ONEDNN_INCLUDE_DIR OR NOT GLASSBOX_ONEDNN_LIBRARY)
    message(FATAL_ERROR "Glassbox: GLASSBOX_CPU_CONV=oneDNN needs oneDNN (apt-get install libdnnl-dev, or "
                        "tools/install_deps.sh); -DGLASSBOX_CPU_CONV=im2col builds on Glassbox's own "
                        "convolutions instead")
  endif()
  set(GLASSBOX_WITH_ONEDNN ON)
  message(STATUS "Glassbox: CPU convolutions on oneDNN (${GLASSBOX_ONEDNN_LIBRARY})")
elseif(GLASSBOX_CPU_CONV STREQUAL "im2col")
  set(GLASSBOX_WITH_ONEDNN OFF)
  message(STATUS "Glassbox: CPU convolutions on Glassbox's own im2col + GEMM")
else()
  message(FATAL_ERROR "Glassbox: GLASSBOX_CPU_CONV is oneDNN or im2col, got '${GLASSBOX_CPU_CONV}'")
endif()
