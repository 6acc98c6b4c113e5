# Glassbox: the two commands.
#   make bench   install what is missing, build, run build/bench_nets --benchmark_filter=VGG16
#   make test    install what is missing, build both configurations, run every test
#
# `build/` is the main build: CUDA when nvcc is found (GLASSBOX_CUDA=AUTO).
# `build-cpu/` is the CPU-only build (GLASSBOX_CUDA=OFF), which `make test`
# also builds and tests, so both configurations stay green.
BUILD     ?= build
BUILD_CPU ?= build-cpu
JOBS      ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps build build-cpu bench test test-main test-cpu clean

all: build

deps:
	@tools/install_deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

build-cpu: deps
	cmake -S . -B $(BUILD_CPU) -DCMAKE_BUILD_TYPE=Release -DGLASSBOX_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD_CPU) -j $(JOBS)

bench: build
	$(BUILD)/bench_nets --benchmark_filter=VGG16

test: test-main test-cpu

test-main: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j $(JOBS)

test-cpu: build-cpu
	cd $(BUILD_CPU) && ctest --output-on-failure --timeout 900 -j $(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD_CPU)
