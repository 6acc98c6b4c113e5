# cmake/StagedDeps.cmake: the build's third-party targets from a folder staged
# by tools/stage_deps.sh, for GPU machines without a package manager
# (DESIGN.md section 7).
#
#   cmake -S . -B build-gpu -DGLASSBOX_STAGED_DEPS=third_party/staged ...
#
# Creates Eigen3::Eigen, GTest::gtest, GTest::gtest_main, GTest::gmock,
# GTest::gmock_main, benchmark::benchmark, libjpeg-turbo::turbojpeg, ZLIB::ZLIB
# and nlohmann_json::nlohmann_json; the find_package calls that would
# otherwise make them are guarded with `if(NOT TARGET ...)`. Without
# GLASSBOX_STAGED_DEPS this file does nothing. A relative path is taken from
# the source tree's top.
#
# GoogleTest is compiled here from its sources (a static library built only
# when a test links it). Google Benchmark is Debian's shared library (no
# sources ship), staged as real files under its linker name (libbenchmark.so)
# and its SONAME; the build tree's RUNPATH points at that folder.
set(GLASSBOX_STAGED_DEPS "" CACHE PATH "Folder made by tools/stage_deps.sh to take Eigen, GoogleTest and Google Benchmark from")
if(NOT GLASSBOX_STAGED_DEPS)
  return()
endif()

get_filename_component(_staged "${GLASSBOX_STAGED_DEPS}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
if(NOT EXISTS "${_staged}/STAGED")
  message(FATAL_ERROR "Glassbox: GLASSBOX_STAGED_DEPS=${GLASSBOX_STAGED_DEPS}: ${_staged} was not made by "
                      "tools/stage_deps.sh (no STAGED file); run tools/stage_deps.sh on a Debian machine")
endif()

# ---- Eigen (headers) ----------------------------------------------------------
set(_eigen_macros "${_staged}/eigen3/Eigen/src/Core/util/Macros.h")
if(NOT EXISTS "${_eigen_macros}")
  message(FATAL_ERROR "Glassbox: staged Eigen missing (${_eigen_macros})")
endif()
file(STRINGS "${_eigen_macros}" _eigen_lines REGEX "#define EIGEN_(WORLD|MAJOR|MINOR)_VERSION")
string(REGEX REPLACE ".*WORLD_VERSION ([0-9]+).*MAJOR_VERSION ([0-9]+).*MINOR_VERSION ([0-9]+).*"
       "\\1.\\2.\\3" _eigen_version "${_eigen_lines}")
if(_eigen_version VERSION_LESS 3.4)
  message(FATAL_ERROR "Glassbox: staged Eigen is ${_eigen_version}; 3.4 or newer is needed")
endif()
if(NOT TARGET Eigen3::Eigen)
  add_library(Eigen3::Eigen INTERFACE IMPORTED)
  set_target_properties(Eigen3::Eigen PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_staged}/eigen3")
endif()

# ---- GoogleTest (sources) ----------------------------------------------------------
set(_gtest "${_staged}/googletest/googletest")
set(_gmock "${_staged}/googletest/googlemock")
if(NOT EXISTS "${_gtest}/src/gtest-all.cc" OR NOT EXISTS "${_gmock}/src/gmock-all.cc")
  message(FATAL_ERROR "Glassbox: staged GoogleTest sources missing under ${_staged}/googletest")
endif()
if(NOT TARGET GTest::gtest)
  find_package(Threads REQUIRED)
  # The *-all.cc files include the rest of src/ relative to the part's root.
  add_library(glassbox_staged_gtest STATIC EXCLUDE_FROM_ALL "${_gtest}/src/gtest-all.cc")
  target_include_directories(glassbox_staged_gtest SYSTEM PUBLIC "${_gtest}/include")
  target_include_directories(glassbox_staged_gtest PRIVATE "${_gtest}")
  target_link_libraries(glassbox_staged_gtest PUBLIC Threads::Threads)
  add_library(glassbox_staged_gtest_main STATIC EXCLUDE_FROM_ALL "${_gtest}/src/gtest_main.cc")
  target_link_libraries(glassbox_staged_gtest_main PUBLIC glassbox_staged_gtest)
  add_library(glassbox_staged_gmock STATIC EXCLUDE_FROM_ALL "${_gmock}/src/gmock-all.cc")
  target_include_directories(glassbox_staged_gmock SYSTEM PUBLIC "${_gmock}/include")
  target_include_directories(glassbox_staged_gmock PRIVATE "${_gmock}")
  target_link_libraries(glassbox_staged_gmock PUBLIC glassbox_staged_gtest)
  add_library(glassbox_staged_gmock_main STATIC EXCLUDE_FROM_ALL "${_gmock}/src/gmock_main.cc")
  target_link_libraries(glassbox_staged_gmock_main PUBLIC glassbox_staged_gmock)
  add_library(GTest::gtest ALIAS glassbox_staged_gtest)
  add_library(GTest::gtest_main ALIAS glassbox_staged_gtest_main)
  add_library(GTest::gmock ALIAS glassbox_staged_gmock)
  add_library(GTest::gmock_main ALIAS glassbox_staged_gmock_main)
endif()

# ---- Google Benchmark (headers + shared library) ----------------------------------------
set(_bench_lib "${_staged}/benchmark/lib/libbenchmark.so")
if(NOT EXISTS "${_staged}/benchmark/include/benchmark/benchmark.h" OR NOT EXISTS "${_bench_lib}")
  message(FATAL_ERROR "Glassbox: staged Google Benchmark missing under ${_staged}/benchmark")
endif()
file(STRINGS "${_staged}/STAGED" _bench_line REGEX "^benchmark [0-9.]+ soname ")
string(REGEX REPLACE ".* soname ([^ ]+).*" "\\1" _bench_soname "${_bench_line}")
if(NOT EXISTS "${_staged}/benchmark/lib/${_bench_soname}")
  message(FATAL_ERROR "Glassbox: staged Google Benchmark has no ${_bench_soname} beside ${_bench_lib}")
endif()
if(NOT TARGET benchmark::benchmark)
  find_package(Threads REQUIRED)
  add_library(benchmark::benchmark SHARED IMPORTED)
  # Linked by path; the binary records the SONAME (libbenchmark.so.1debian,
  # staged beside it as a real file) for the loader.
  set_target_properties(benchmark::benchmark PROPERTIES
    IMPORTED_LOCATION "${_bench_lib}"
    IMPORTED_SONAME "${_bench_soname}"
    INTERFACE_INCLUDE_DIRECTORIES "${_staged}/benchmark/include"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()

# ---- TurboJPEG, zlib (headers + shared library under its SONAME), nlohmann-json (headers) ----
foreach(_part IN ITEMS "turbojpeg/include/turbojpeg.h" "turbojpeg/lib/libturbojpeg.so.0" "zlib/include/zlib.h"
                       "zlib/lib/libz.so.1" "nlohmann/include/nlohmann/json.hpp")
  if(NOT EXISTS "${_staged}/${_part}")
    message(FATAL_ERROR "Glassbox: staged ${_part} missing under ${_staged}; run tools/stage_deps.sh again")
  endif()
endforeach()
if(NOT TARGET libjpeg-turbo::turbojpeg)
  add_library(libjpeg-turbo::turbojpeg SHARED IMPORTED)
  set_target_properties(libjpeg-turbo::turbojpeg PROPERTIES
    IMPORTED_LOCATION "${_staged}/turbojpeg/lib/libturbojpeg.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_staged}/turbojpeg/include")
endif()
if(NOT TARGET ZLIB::ZLIB)
  add_library(ZLIB::ZLIB SHARED IMPORTED)
  set_target_properties(ZLIB::ZLIB PROPERTIES
    IMPORTED_LOCATION "${_staged}/zlib/lib/libz.so.1"
    INTERFACE_INCLUDE_DIRECTORIES "${_staged}/zlib/include")
endif()
if(NOT TARGET nlohmann_json::nlohmann_json)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_staged}/nlohmann/include")
endif()

message(STATUS "Glassbox: staged dependencies from ${_staged}: Eigen ${_eigen_version}, "
               "GoogleTest (sources), Google Benchmark (${_bench_soname}), TurboJPEG, zlib, nlohmann-json")
