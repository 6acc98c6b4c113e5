#!/usr/bin/env bash
# tools/install_deps.sh: installs the Debian packages Glassbox builds and
# tests with, if any are missing. As root it runs apt-get; otherwise it prints the one
# apt-get line to run and fails. The CUDA toolkit (with cuDNN and NCCL) is not
# a Debian package: when nvcc is absent the build is CPU-only (CMake's
# GLASSBOX_CUDA=AUTO).
set -euo pipefail

packages=(cmake make ninja-build g++ git python3 libeigen3-dev libgtest-dev libbenchmark-dev)
# Real data and checkpoints (data/, train/checkpoint.h): libjpeg-turbo's
# TurboJPEG API, zlib (gzip-compressed IDX files), nlohmann-json (the
# safetensors header), and Fashion-MNIST itself (its four IDX .gz files under
# /usr/share/datasets/fashion-mnist), for `glassbox train LeNet --data fashion-mnist`.
packages+=(libturbojpeg0-dev zlib1g-dev nlohmann-json3-dev dataset-fashion-mnist)
# The word-level text corpus of the LSTM language model (data/text_corpus.h):
# the fortune cookies' text files under /usr/share/games/fortunes.
packages+=(fortunes)
# The kernels under Eigen's CPU products (cmake/CpuBlas.cmake): OpenBLAS's
# OpenMP build, which shares OpenMP's threads (Note [OpenBLAS's OpenMP build]);
# the serial build only stands in for a wrong one in tests/test_cpu_blas.cpp.
packages+=(libopenblas-openmp-dev libopenblas0-serial)
# The CPU's convolutions above 1x1 (cmake/CpuConv.cmake): oneDNN, whose Debian
# build runs on the same OpenMP runtime (libgomp) as Glassbox's own loops.
packages+=(libdnnl-dev)
# Data-parallel jobs (optim/communicator.h, docs/data_parallel.md): Open MPI's
# headers and library (the CPU communicator, and the exchange of NCCL's unique
# id between GPU ranks) and mpirun (openmpi-bin), which launches the ranks and
# runs the multi-rank tests. Without them the build has no MPI (GLASSBOX_MPI=AUTO).
packages+=(libopenmpi-dev openmpi-bin)
# The sanitizer and fuzzing build (make test-sanitize, make test-fuzz;
# docs/sanitizers_and_fuzzing.md): clang 14, its ASan/UBSan/LSan and libFuzzer
# runtimes (libclang-rt-14-dev: clang-14 does not depend on it, and installs
# without it under --no-install-recommends), the OpenMP runtime clang's
# -fopenmp links (libomp-14-dev: omp.h and libomp.so), and llvm-symbolizer-14
# (llvm-14) for file:line in reports. Versioned names, so that the compiler
# and its runtimes always match.
packages+=(clang-14 libclang-rt-14-dev libomp-14-dev llvm-14)
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "glassbox: missing Debian packages. Run as root:" >&2
  echo "  apt-get update && $line" >&2
  exit 1
fi
echo "glassbox: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$line
