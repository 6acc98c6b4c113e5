# cmake/Install.cmake: `cmake --install <build> --prefix <dir>`, so that another
# CMake project can use Glassbox as a library (docs/library.md):
#
#   find_package(Glassbox 0.1 REQUIRED)      # CMAKE_PREFIX_PATH=<dir>
#   target_link_libraries(app PRIVATE Glassbox::glassbox)
#
# Installs, under <dir>:
#   lib/libglassbox.a
#   include/glassbox/{tensor,layers,graph,optim,data,nets,train}/**.h, each folder as
#     in the tree, since headers include each other as "tensor/tensor.h"; the
#     *_cuda.h headers (CUDA types, for the library's own CUDA files) are left out
#   bin/glassbox                 the command-line tool; no tests, no benchmarks
#   lib/cmake/Glassbox/          GlassboxConfig.cmake, its version file, the
#     targets file, and in a CUDA build the find modules for cuDNN and NCCL
#
# Glassbox::glassbox carries what a program needs to compile and link against
# it: the include directory, C++20, GLASSBOX_WITH_CUDA and
# GLASSBOX_DETERMINISTIC as this build set them, Eigen and OpenMP (public), and
# the static library's own dependencies (TurboJPEG, zlib, nlohmann-json; cudart,
# cuDNN, NCCL in a CUDA build, where cuBLAS is opened at run time; MPI's C library in an MPI build), which
# GlassboxConfig.cmake finds again in the program's configure (cmake/GlassboxConfig.cmake.in).
include(CMakePackageConfigHelpers)

set(GLASSBOX_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Glassbox")

# (The include directory comes with the target: its INSTALL_INTERFACE in CMakeLists.txt.)
install(TARGETS glassbox glassbox_cpu_blas EXPORT GlassboxTargets ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
# The folders, not a list of files: a header added to a folder is installed
# without an edit here (the folders are read at install time).
foreach(folder IN LISTS library_folders)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${folder}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/glassbox"
          FILES_MATCHING PATTERN "*.h" PATTERN "*_cuda.h" EXCLUDE)
endforeach()
install(EXPORT GlassboxTargets NAMESPACE Glassbox:: DESTINATION "${GLASSBOX_INSTALL_CMAKEDIR}")

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/GlassboxConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/GlassboxConfig.cmake"
                              INSTALL_DESTINATION "${GLASSBOX_INSTALL_CMAKEDIR}")
# 0.x: a minor version may change the API, so 0.1 accepts 0.1.* only.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/GlassboxConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
set(config_files "${PROJECT_BINARY_DIR}/GlassboxConfig.cmake" "${PROJECT_BINARY_DIR}/GlassboxConfigVersion.cmake")
if(GLASSBOX_WITH_CUDA)
  # CMake has no targets for cuDNN and NCCL, nor for pip's CUPTI: the program finds them with ours.
  list(APPEND config_files "${CMAKE_CURRENT_LIST_DIR}/FindCUDNN.cmake" "${CMAKE_CURRENT_LIST_DIR}/FindNCCL.cmake"
       "${CMAKE_CURRENT_LIST_DIR}/Cupti.cmake" "${CMAKE_CURRENT_LIST_DIR}/GlassboxPipPackages.cmake")
endif()
install(FILES ${config_files} DESTINATION "${GLASSBOX_INSTALL_CMAKEDIR}")
