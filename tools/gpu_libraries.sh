# tools/gpu_libraries.sh: step 2 of tools/gpu_check.sh, sourced by it (not
# run alone): finds the CUDA libraries on a GPU machine without a package
# manager (pip's NVIDIA packages, the toolkit, the staged Google Benchmark),
# puts them on LD_LIBRARY_PATH for the loader, checks that each one the build
# and the tests need is there, and points CMake at pip's cuBLAS where the
# toolkit has none. Reads gpu_check.sh's $python, $staged and $build.
# shellcheck shell=bash
# shellcheck disable=SC2154  # python, staged and build are gpu_check.sh's

# Sets: pip_roots (array), cmake_extra (array), LD_LIBRARY_PATH.
declare -a pip_roots=() cmake_extra=()
find_libraries() {
  local nvcc_path cuda_home base lib_dirs="" ok=1
  nvcc_path=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cuda_home=$(cd "$(dirname "$(readlink -f "$nvcc_path")")/.." 2>/dev/null && pwd || echo /usr/local/cuda)
  echo "CUDA toolkit: $cuda_home"
  if [ -n "$python" ]; then
    mapfile -t pip_roots < <("$python" -c 'import nvidia
for p in list(nvidia.__path__): print(p)' 2>/dev/null)
  fi
  if [ ${#pip_roots[@]} -eq 0 ]; then
    echo "pip NVIDIA packages: none found (python3 -c 'import nvidia' failed); relying on the toolkit"
  fi
  for base in "${pip_roots[@]}"; do
    echo "pip NVIDIA root: $base"
    for dir in "$base"/*/lib; do
      [ -d "$dir" ] && lib_dirs="$lib_dirs:$dir"
    done
  done
  [ -d "$staged/benchmark/lib" ] && lib_dirs="$lib_dirs:$staged/benchmark/lib"
  for dir in "$cuda_home/lib64" "$cuda_home/lib"; do [ -d "$dir" ] && lib_dirs="$lib_dirs:$dir"; done
  export LD_LIBRARY_PATH="${lib_dirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The staged TurboJPEG last, for a machine whose system has none: a build
  # carried from elsewhere finds it through a RUNPATH only where the
  # repository lies at the same path. Not the staged zlib, which would hide
  # the system's newer one.
  [ -d "$staged/turbojpeg/lib" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$staged/turbojpeg/lib"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

  local name found
  for name in libcudnn.so.9 libnccl.so.2 libcublas.so.13 libcublasLt.so.13 libcudart.so.13 libcupti.so.13; do
    found=$(IFS=:; for d in $LD_LIBRARY_PATH; do [ -e "$d/$name" ] && { echo "$d/$name"; break; }; done)
    if [ -n "$found" ]; then echo "  $name: $found"; else echo "  $name: NOT FOUND"; ok=0; fi
  done

  # Debian's libbenchmark needs a libstdc++ at least as new as GCC 12's.
  local bench_so
  for bench_so in "$staged"/benchmark/lib/libbenchmark.so.*; do
    [ -f "$bench_so" ] || continue
    if ldd "$bench_so" 2>&1 | grep -q 'not found'; then
      echo "  $(basename "$bench_so"): cannot load here:"; ldd "$bench_so" 2>&1 | grep 'not found' | sed 's/^/    /'; ok=0
    else
      echo "  $(basename "$bench_so"): loads ($staged/benchmark/lib)"
    fi
  done

  # A prebuilt build's programs, which the steps run: every library they
  # link must load here, or each step fails in its first second.
  local program
  for program in "$build/glassbox" "$build/bench_nets"; do
    [ -x "$program" ] || continue
    if ldd "$program" 2>&1 | grep -q 'not found'; then
      echo "  $program: cannot load here:"; ldd "$program" 2>&1 | grep 'not found' | sed 's/^/    /'; ok=0
    else
      echo "  $program: every library it links loads"
    fi
  done

  # cuBLAS: CMake's FindCUDAToolkit looks only beside the toolkit and only for
  # the unversioned name; where the toolkit has none, point it at pip's.
  if [ "${GPU_CHECK_CUBLAS:-}" = pip ] || { ! compgen -G "$cuda_home/lib64/libcublas.so*" >/dev/null \
       && ! compgen -G "$cuda_home/targets/*/lib/libcublas.so*" >/dev/null; }; then
    local cu13="" root
    for root in "${pip_roots[@]}"; do
      for dir in "$root"/cu*; do [ -f "$dir/include/cublas_v2.h" ] && cu13=$dir; done
    done
    if [ -n "$cu13" ]; then
      local cublas cublaslt
      cublas=$(compgen -G "$cu13/lib/libcublas.so.*" | head -n 1)
      cublaslt=$(compgen -G "$cu13/lib/libcublasLt.so.*" | head -n 1)
      echo "cuBLAS: using pip's $cu13 ($cublas)${GPU_CHECK_CUBLAS:+ (GPU_CHECK_CUBLAS=$GPU_CHECK_CUBLAS)}"
      cmake_extra+=("-DCUDA_cublas_LIBRARY=$cublas" "-DCUDA_cublasLt_LIBRARY=$cublaslt"
                    "-DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=$cu13/include"
                    "-DCMAKE_CUDA_STANDARD_INCLUDE_DIRECTORIES=$cu13/include")
    else
      echo "cuBLAS: neither in the toolkit nor in pip's NVIDIA packages"; ok=0
    fi
  fi
  [ "$ok" -eq 1 ]
}
