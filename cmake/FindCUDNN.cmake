# cmake/FindCUDNN.cmake: cuDNN as the imported target CUDNN::cudnn.
#
# Searched, in order: CUDNN_ROOT (CMake or environment variable), the CUDA
# toolkit (Debian/NVIDIA installs put cuDNN beside it), and pip's
# site-packages/nvidia/cudnn. Pip ships only versioned names (libcudnn.so.9),
# so those are listed too. Sets CUDNN_FOUND, CUDNN_VERSION, CUDNN_INCLUDE_DIR,
# CUDNN_LIBRARY.
include(GlassboxPipPackages)
glassbox_pip_nvidia_roots(_cudnn_pip_roots cudnn)
set(_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR}
    ${_cudnn_pip_roots})

find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)

if(CUDNN_INCLUDE_DIR)
  foreach(_header cudnn_version.h cudnn.h)
    if(EXISTS "${CUDNN_INCLUDE_DIR}/${_header}")
      file(STRINGS "${CUDNN_INCLUDE_DIR}/${_header}" _cudnn_version_lines
           REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
      if(_cudnn_version_lines)
        string(REGEX REPLACE ".*CUDNN_MAJOR +([0-9]+).*" "\\1" _major "${_cudnn_version_lines}")
        string(REGEX REPLACE ".*CUDNN_MINOR +([0-9]+).*" "\\1" _minor "${_cudnn_version_lines}")
        string(REGEX REPLACE ".*CUDNN_PATCHLEVEL +([0-9]+).*" "\\1" _patch "${_cudnn_version_lines}")
        set(CUDNN_VERSION "${_major}.${_minor}.${_patch}")
        break()
      endif()
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
                                  VERSION_VAR CUDNN_VERSION)
if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
