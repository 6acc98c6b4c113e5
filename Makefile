# Glassbox: the two commands.
#   make bench   install what is missing, build, run build/bench_nets --benchmark_filter=VGG16
#   make test    install what is missing, build the three configurations, run every
#                test in build/ and build-sanitize/, then each fuzz target for
#                FUZZ_SECONDS (one per core at a time); every part runs, and
#                the last line names the parts that failed
#
# `build/` is the main build: CUDA when nvcc is found (GLASSBOX_CUDA=AUTO).
# `build-cpu/` is the CPU-only build (GLASSBOX_CUDA=OFF) with GCC: `make test`
# compiles its library, CLI and benchmarks (not the tests: the suite runs
# CPU-only in build-sanitize/), so that configuration stays green.
# `build-sanitize/` is CPU-only, built with clang under ASan + UBSan (+ LSan),
# with the libFuzzer targets of tests/fuzz: `make test` runs the whole suite
# there (test-sanitize), then each fuzzer for FUZZ_SECONDS (test-fuzz).
# docs/sanitizers_and_fuzzing.md says what each run checks.
BUILD          ?= build
BUILD_CPU      ?= build-cpu
BUILD_SANITIZE ?= build-sanitize
JOBS           ?= $(shell nproc)
# Ninja where it is installed (tools/install_deps.sh installs it): a build
# folder that exists keeps the generator it was made with (CMake refuses to
# change it). An up-to-date build-cpu/ took 1.2-1.4 s to find nothing to do
# with Makefiles, 0.05-0.07 s with Ninja (`cmake --build`, three runs each,
# 2-core EPYC, quiet): the generator's own overhead, which a full build pays
# per target too.
generator = $(if $(wildcard $(1)/CMakeCache.txt),,$(if $(shell command -v ninja),-G Ninja,))
CMAKE_ARGS     ?=
CLANGXX        ?= clang++-14
FUZZ_SECONDS   ?= 30

# Every sanitizer report fails: halt_on_error (ASan), -fno-sanitize-recover
# (UBSan, cmake/Sanitizers.cmake), LSan at exit (detect_leaks). Only
# test_tensor adds allocator_may_return_null=1 (tests/CMakeLists.txt): it asks
# for 512 TiB on purpose. tests/sanitizers/lsan.supp: third-party leaks, each
# with its reason. llvm-symbolizer-14 (package llvm-14) names the lines.
SANITIZE_ENV = ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1 \
               UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
               LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp:print_suppressions=0 \
               ASAN_SYMBOLIZER_PATH=$(shell command -v llvm-symbolizer-14 2>/dev/null)

# CTest runs TEST_JOBS tests at once, each with an OpenMP team of one thread per
# core: more threads than cores, and a team that spins at its barriers holds a
# core that another test's thread waits for. Passive waiting gives it up.
# Spinning made build/'s suite 1.6-2.1 times slower (`ctest -j2`, 2-core EPYC).
TEST_ENV       ?= OMP_WAIT_POLICY=passive
# One test more than cores: many tests wait on programs they start (the CLI,
# mpirun, Python) or on files, and the extra test fills that time. build/'s
# suite on a 2-core EPYC: 246-249 s at -j2, 223 s at -j3.
TEST_JOBS      ?= $(shell echo $$(( $(JOBS) + 1 )))

.PHONY: all deps build build-cpu build-sanitize bench test test-main test-sanitize test-fuzz clean

all: build

deps:
	@tools/install_deps.sh

build: deps
	cmake -S . -B $(BUILD) $(call generator,$(BUILD)) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# build-cpu/ compiles without the precompiled headers (Note [Precompiled
# headers] in CMakeLists.txt), so a source that misses an #include fails here.
# No tests: build/ runs them with GCC, build-sanitize/ without CUDA, and
# compiling and running them a third time took a quarter of `make test`.
build-cpu: deps
	cmake -S . -B $(BUILD_CPU) $(call generator,$(BUILD_CPU)) -DCMAKE_BUILD_TYPE=Release -DGLASSBOX_CUDA=OFF \
	  -DGLASSBOX_PCH=OFF -DGLASSBOX_TESTS=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD_CPU) -j $(JOBS)

bench: build
	$(BUILD)/bench_nets --benchmark_filter=VGG16

# Every part runs, whatever the parts before it did, and the last line names
# each part that failed: a failure in build/ does not hide one in
# build-sanitize/ or in a fuzzer. Each part's time (build and tests) is printed
# as it ends, and all of them at the end.
TEST_PARTS = test-main build-cpu test-sanitize test-fuzz
test:
	@failed=""; times=""; \
	for part in $(TEST_PARTS); do \
	  start=$$(date +%s); \
	  $(MAKE) --no-print-directory $$part || failed="$$failed $$part"; \
	  took=$$(( $$(date +%s) - start )); times="$$times $$part $${took}s"; \
	  echo "make test: $$part took $$took s"; \
	done; \
	echo "make test: times:$$times"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed (of $(TEST_PARTS))"; exit 1; fi; \
	echo "make test: all parts passed ($(TEST_PARTS))"

test-main: build
	cd $(BUILD) && $(TEST_ENV) ctest --output-on-failure --timeout 900 -j $(TEST_JOBS)

# The sanitizer build: clang (libFuzzer, and ASan + UBSan in one runtime),
# RelWithDebInfo with line tables only (-O2 -gline-tables-only: optimised
# enough to run the suite in CI time; reports name each frame's function, file
# and line, inlined frames too; 17% less compile time than -g, measured on
# seven of the heaviest files), no Google Benchmark binaries (nothing there
# that the tests and fuzzers do not already cover: bench_flags.cpp has its own
# fuzzer), no tests of the Python tools (build/ runs them; they run nothing
# built here).
SANITIZE_FLAGS ?= -O2 -gline-tables-only -DNDEBUG
build-sanitize: deps
	cmake -S . -B $(BUILD_SANITIZE) $(call generator,$(BUILD_SANITIZE)) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SANITIZE_FLAGS)" \
	  -DCMAKE_CXX_COMPILER=$(CLANGXX) \
	  -DGLASSBOX_CUDA=OFF -DGLASSBOX_FUZZ=ON -DGLASSBOX_BENCHMARKS=OFF -DGLASSBOX_BLAS=Eigen \
	  -DGLASSBOX_CPU_CONV=im2col -DGLASSBOX_SCRIPT_TESTS=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD_SANITIZE) -j $(JOBS)

# VGG11's whole-network gradient check and training steps are left out here:
# they took a minute each under the sanitizers (a sixth of the run), AlexNet's
# two run the same kinds of layers, and build/ runs VGG11's. Empty: none left out.
SANITIZE_CTEST_EXCLUDE ?= (WholeNetGradientTest|TrainingTest).*/VGG11
test-sanitize: build-sanitize
	cd $(BUILD_SANITIZE) && $(SANITIZE_ENV) $(TEST_ENV) ctest --output-on-failure --timeout 900 -j $(TEST_JOBS) \
	  $(if $(SANITIZE_CTEST_EXCLUDE),-E '$(SANITIZE_CTEST_EXCLUDE)')

test-fuzz: build-sanitize
	$(SANITIZE_ENV) FUZZ_JOBS=$(JOBS) tests/fuzz/run_fuzzers.sh $(BUILD_SANITIZE) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(BUILD_CPU) $(BUILD_SANITIZE)
