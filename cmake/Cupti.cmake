# cmake/Cupti.cmake: CUPTI as CUDA::cupti, for the kernel collector
# (tensor/kernel_trace_cuda.cpp).
#
# FindCUDAToolkit makes CUDA::cupti when the toolkit has CUPTI (lib64/ or
# extras/CUPTI/). On GPU machines without a package manager the toolkit may
# lack it; PyTorch's pip dependencies have it (nvidia-cuda-cupti): under
# site-packages/nvidia/cu13/{include,lib} for CUDA 13, nvidia/cuda_cupti/ before
# (cmake/GlassboxPipPackages.cmake), versioned name libcupti.so.13 only.
# CUPTI_ROOT (CMake or environment variable) is searched first.
if(TARGET CUDA::cupti)
  return()
endif()
include(GlassboxPipPackages)
glassbox_pip_nvidia_roots(_cupti_pip_roots cu13 cuda_cupti)
set(_cupti_hints ${CUPTI_ROOT} $ENV{CUPTI_ROOT} ${_cupti_pip_roots})
find_path(CUPTI_INCLUDE_DIR cupti.h HINTS ${_cupti_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(CUPTI_LIBRARY NAMES cupti libcupti.so.13 libcupti.so.12 HINTS ${_cupti_hints}
             PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
if(NOT CUPTI_INCLUDE_DIR OR NOT CUPTI_LIBRARY)
  message(FATAL_ERROR "Glassbox: CUPTI not found (for tensor/kernel_trace_cuda.cpp): neither beside the CUDA "
                      "toolkit nor in pip's nvidia/cu13 or nvidia/cuda_cupti; set CUPTI_ROOT")
endif()
add_library(CUDA::cupti UNKNOWN IMPORTED)
set_target_properties(CUDA::cupti PROPERTIES
  IMPORTED_LOCATION "${CUPTI_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${CUPTI_INCLUDE_DIR}")
message(STATUS "Glassbox: CUPTI from ${CUPTI_LIBRARY}")
mark_as_advanced(CUPTI_INCLUDE_DIR CUPTI_LIBRARY)
