# cmake/FindNCCL.cmake: NCCL as the imported target NCCL::nccl.
#
# Searched, in order: NCCL_ROOT (CMake or environment variable), the CUDA
# toolkit, and pip's site-packages/nvidia/nccl (versioned name libnccl.so.2
# only). Sets NCCL_FOUND, NCCL_VERSION, NCCL_INCLUDE_DIR, NCCL_LIBRARY.
include(GlassboxPipPackages)
glassbox_pip_nvidia_roots(_nccl_pip_roots nccl)
set(_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR}
    ${_nccl_pip_roots})

find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines
       REGEX "#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  if(_nccl_version_lines)
    string(REGEX REPLACE ".*NCCL_MAJOR +([0-9]+).*" "\\1" _major "${_nccl_version_lines}")
    string(REGEX REPLACE ".*NCCL_MINOR +([0-9]+).*" "\\1" _minor "${_nccl_version_lines}")
    string(REGEX REPLACE ".*NCCL_PATCH +([0-9]+).*" "\\1" _patch "${_nccl_version_lines}")
    set(NCCL_VERSION "${_major}.${_minor}.${_patch}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
                                  VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
