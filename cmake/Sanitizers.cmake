# cmake/Sanitizers.cmake: AddressSanitizer + UndefinedBehaviorSanitizer (with
# LeakSanitizer, part of ASan on Linux) for the CPU-only build, and libFuzzer
# targets on top of it (docs/sanitizers_and_fuzzing.md).
#
#   cmake -S . -B build-sanitize -DCMAKE_CXX_COMPILER=clang++-14 -DGLASSBOX_CUDA=OFF \
#         -DGLASSBOX_SANITIZE=ON [-DGLASSBOX_FUZZ=ON]
#
# GLASSBOX_SANITIZE instruments every target (library, tests, tools); any
# report aborts the process (-fno-sanitize-recover, and halt_on_error in
# ASAN_OPTIONS from the Makefile), so a test with a report fails.
#
# GLASSBOX_FUZZ builds the libFuzzer targets of tests/fuzz, and compiles the
# library with libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link:
# a counter on every edge, a callback on every comparison) for them and the
# tests alike, but for Eigen's kernels (tests/fuzz/coverage_ignore.txt): the
# tests' hot loops, and no parser's branches. One library instead of a second,
# instrumented copy for the fuzzers: 399 CPU-s less compiling, for a suite
# that took 225 s in `make test` instead of 216 s (2-core EPYC;
# docs/sanitizers_and_fuzzing.md, section 7).
option(GLASSBOX_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer (CPU-only)" OFF)
option(GLASSBOX_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; implies GLASSBOX_SANITIZE)" OFF)

if(GLASSBOX_FUZZ)
  set(GLASSBOX_SANITIZE ON CACHE BOOL "" FORCE)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "Glassbox: GLASSBOX_FUZZ needs clang (libFuzzer); configure with "
                        "-DCMAKE_CXX_COMPILER=clang++ (this is ${CMAKE_CXX_COMPILER_ID})")
  endif()
endif()
if(NOT GLASSBOX_SANITIZE)
  return()
endif()

if(GLASSBOX_WITH_CUDA)
  # ASan and the CUDA driver want the same address ranges (the driver needs
  # ASAN_OPTIONS=protect_shadow_gap=0 even to start), and device memory is
  # outside what ASan sees anyway: GPU memory checking is compute-sanitizer's
  # job (tools/gpu_check.sh).
  message(FATAL_ERROR "Glassbox: GLASSBOX_SANITIZE is for the CPU-only build; add -DGLASSBOX_CUDA=OFF")
endif()

# -fno-omit-frame-pointer: whole stacks in reports (ASan's fast unwinder).
# -fno-sanitize-recover=undefined: UBSan aborts at the first report instead of
# printing and going on, so a report fails the test that made it.
set(GLASSBOX_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${GLASSBOX_SANITIZER_FLAGS}>")
add_link_options(${GLASSBOX_SANITIZER_FLAGS})
# libstdc++'s own checks (vector::operator[] past size(), front() of an empty
# container, ...): ASan sees an index past size() but inside capacity() as a
# valid access. No ABI change, so uninstrumented libraries still link.
add_compile_definitions("$<$<COMPILE_LANGUAGE:CXX>:_GLIBCXX_ASSERTIONS>")

message(STATUS "Glassbox: sanitizers on (${GLASSBOX_SANITIZER_FLAGS}); libFuzzer targets: ${GLASSBOX_FUZZ}")
