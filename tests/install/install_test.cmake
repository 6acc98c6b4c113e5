# tests/install/install_test.cmake: installs this build into a fresh prefix,
# builds examples/train_mlp against it as a separate project would
# (find_package(Glassbox) through CMAKE_PREFIX_PATH), and runs it. CTest runs
# it as Install.ExampleBuildsAgainstTheInstalledPackage (tests/CMakeLists.txt).
#
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... -DBUILD_TYPE=...
#         -DGENERATOR=... -P tests/install/install_test.cmake
#
# The example is compiled by the build's own compiler and build type: a
# library built by clang under ASan links only with clang's sanitizer runtimes.
# Fails, saying which step, if a step fails, if the prefix lacks what a program
# needs (headers by their folders, the library, the config), or holds what it
# should not (tests, benchmarks).
cmake_minimum_required(VERSION 3.25)
foreach(var IN ITEMS BUILD_DIR SOURCE_DIR WORK_DIR CXX BUILD_TYPE GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test: -D${var}=... is missing")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
set(example_build "${WORK_DIR}/train_mlp")
file(REMOVE_RECURSE "${WORK_DIR}")  # a fresh prefix: nothing left from an earlier run can help

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE failed OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(failed)
    message(FATAL_ERROR "install_test: ${step} failed (${failed}):\n${out}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" --config "${BUILD_TYPE}")

# What a program needs, where it is promised, and nothing of the tests.
file(GLOB_RECURSE config LIST_DIRECTORIES false "${prefix}/*/GlassboxConfig.cmake")
file(GLOB_RECURSE library LIST_DIRECTORIES false "${prefix}/*/libglassbox.a")
foreach(header IN ITEMS tensor/tensor.h layers/layer.h graph/builder.h optim/sgd.h data/synthetic.h nets/nets.h)
  if(NOT EXISTS "${prefix}/include/glassbox/${header}")
    message(FATAL_ERROR "install_test: ${prefix}/include/glassbox/${header} was not installed")
  endif()
endforeach()
if(NOT config OR NOT library)
  message(FATAL_ERROR "install_test: no GlassboxConfig.cmake (${config}) or libglassbox.a (${library}) under ${prefix}")
endif()
file(GLOB_RECURSE unwanted LIST_DIRECTORIES false "${prefix}/*test_*" "${prefix}/*bench_*" "${prefix}/*fuzz_*"
     "${prefix}/*_cuda.h")
if(unwanted)
  message(FATAL_ERROR "install_test: installed what a program does not need: ${unwanted}")
endif()

run("configuring examples/train_mlp against ${prefix}"
    "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/examples/train_mlp" -B "${example_build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
run("building examples/train_mlp" "${CMAKE_COMMAND}" --build "${example_build}" --config "${BUILD_TYPE}")
file(GLOB_RECURSE program LIST_DIRECTORIES false "${example_build}/train_mlp" "${example_build}/*/train_mlp")
if(NOT program)
  message(FATAL_ERROR "install_test: the build made no train_mlp under ${example_build}")
endif()
list(GET program 0 program)
run("running ${program}" "${program}")
message(STATUS "${output}")
