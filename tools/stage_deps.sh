#!/usr/bin/env bash
# tools/stage_deps.sh: stages into third_party/staged/ what a GPU machine
# without a package manager lacks for the build (DESIGN.md section 7), taken
# from this (Debian) machine's packages:
#   eigen3/      Eigen headers                (libeigen3-dev, /usr/include/eigen3)
#   googletest/  GoogleTest + GoogleMock sources, built from source there
#                                             (googletest, /usr/src/googletest)
#   benchmark/   Google Benchmark 1.7.1 headers and shared library
#                                             (libbenchmark-dev, libbenchmark1debian)
#   turbojpeg/   TurboJPEG header and shared library (libturbojpeg0-dev)
#   zlib/        zlib headers and shared library   (zlib1g-dev)
#   nlohmann/    nlohmann-json headers             (nlohmann-json3-dev)
# cmake/StagedDeps.cmake turns the folder into the build's targets when CMake
# is given -DGLASSBOX_STAGED_DEPS=third_party/staged.
#
# The folder is copied to the GPU machine beside the repository, by means
# that may keep a symbolic link only as a link: every file staged here is a
# real file, and the shared library is staged under both names it is needed
# by (the linker's libbenchmark.so and the loader's SONAME).
#
# It also copies Debian's Fashion-MNIST (dataset-fashion-mnist: the four IDX
# .gz files, 30 MiB) into third_party/fashion-mnist/, a second folder to
# copy, for tools/gpu_check.sh's training step.
#
# Usage: tools/stage_deps.sh [DEST]    (default: third_party/staged in the repo)
set -euo pipefail

die() { echo "stage_deps: $*" >&2; exit 1; }

repo=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-"$repo/third_party/staged"}
[ $# -le 1 ] || die "usage: tools/stage_deps.sh [DEST]"
max_mib=32  # what it stages is about 13 MiB: much more means something was staged by mistake

eigen_src=/usr/include/eigen3
gtest_src=/usr/src/googletest
bench_include=/usr/include/benchmark
bench_lib_dir=/usr/lib/x86_64-linux-gnu
bench_version=1.7.1
bench_lib="$bench_lib_dir/libbenchmark.so.$bench_version"
lib_dir=/usr/lib/x86_64-linux-gnu
turbojpeg_lib="$lib_dir/libturbojpeg.so.0"
zlib_lib="$lib_dir/libz.so.1"
json_include=/usr/include/nlohmann

missing=()
[ -f "$eigen_src/Eigen/Core" ] || missing+=(libeigen3-dev)
[ -f "$gtest_src/googletest/src/gtest-all.cc" ] || missing+=(googletest)
[ -f "$bench_include/benchmark.h" ] || missing+=(libbenchmark-dev)
[ -f "$bench_lib" ] || missing+=(libbenchmark1debian)
[ -f /usr/include/turbojpeg.h ] && [ -e "$turbojpeg_lib" ] || missing+=(libturbojpeg0-dev)
[ -f /usr/include/zlib.h ] && [ -e "$zlib_lib" ] || missing+=(zlib1g-dev)
[ -f "$json_include/json.hpp" ] || missing+=(nlohmann-json3-dev)
if [ ${#missing[@]} -gt 0 ]; then
  die "missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})"
fi
command -v objdump >/dev/null || die "objdump not found (apt-get install -y binutils)"

soname=$(objdump -p "$bench_lib" | awk '$1 == "SONAME" { print $2 }')
[ -n "$soname" ] || die "no SONAME in $bench_lib"

# Start from an empty folder so nothing stale travels.
if [ -e "$dest" ] && [ -n "$(ls -A "$dest")" ] && [ ! -f "$dest/STAGED" ]; then
  die "$dest is not empty and was not made by this script; refusing to replace it"
fi
rm -rf "$dest"
mkdir -p "$dest"

# -L: copy what links point to, so the folder holds real files only.
echo "stage_deps: Eigen from $eigen_src"
mkdir -p "$dest/eigen3"
cp -RL "$eigen_src/Eigen" "$eigen_src/unsupported" "$dest/eigen3/"
[ -f "$eigen_src/signature_of_eigen3_matrix_library" ] \
  && cp -L "$eigen_src/signature_of_eigen3_matrix_library" "$dest/eigen3/"

echo "stage_deps: GoogleTest sources from $gtest_src"
for part in googletest googlemock; do
  mkdir -p "$dest/googletest/$part"
  cp -RL "$gtest_src/$part/include" "$gtest_src/$part/src" "$dest/googletest/$part/"
done

echo "stage_deps: Google Benchmark $bench_version from $bench_lib (SONAME $soname)"
mkdir -p "$dest/benchmark/include" "$dest/benchmark/lib"
cp -RL "$bench_include" "$dest/benchmark/include/"
cp -L "$bench_lib" "$dest/benchmark/lib/$soname"          # what the loader looks for
cp -L "$bench_lib" "$dest/benchmark/lib/libbenchmark.so"  # what -lbenchmark looks for

# The data and checkpoint libraries: headers, and each shared library under
# its SONAME (the name the loader looks for, which the linker also accepts).
echo "stage_deps: TurboJPEG, zlib and nlohmann-json"
mkdir -p "$dest/turbojpeg/include" "$dest/turbojpeg/lib" "$dest/zlib/include" "$dest/zlib/lib" "$dest/nlohmann/include"
cp -L /usr/include/turbojpeg.h "$dest/turbojpeg/include/"
cp -L "$turbojpeg_lib" "$dest/turbojpeg/lib/"
cp -L /usr/include/zlib.h /usr/include/zconf.h "$dest/zlib/include/"
cp -L "$zlib_lib" "$dest/zlib/lib/"
cp -RL "$json_include" "$dest/nlohmann/include/"

mkdir -p "$dest/licenses"
for package in libeigen3-dev googletest libbenchmark-dev libturbojpeg0-dev zlib1g-dev nlohmann-json3-dev; do
  [ -f "/usr/share/doc/$package/copyright" ] && cp -L "/usr/share/doc/$package/copyright" "$dest/licenses/$package"
done

eigen_version=$(awk '/#define EIGEN_(WORLD|MAJOR|MINOR)_VERSION/ { v = v (v ? "." : "") $3 } END { print v }' \
                "$dest/eigen3/Eigen/src/Core/util/Macros.h")
gtest_version=$(dpkg-query -W -f='${Version}' googletest 2>/dev/null || echo unknown)
cat > "$dest/STAGED" <<EOF
Staged by tools/stage_deps.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(sed -n 's/^PRETTY_NAME="\(.*\)"$/\1/p' /etc/os-release).
eigen $eigen_version
googletest $gtest_version
benchmark $bench_version soname $soname
benchmark library needs: $(objdump -p "$bench_lib" | awk '$1 == "NEEDED" { printf "%s ", $2 }')
benchmark symbol versions: $(objdump -T "$bench_lib" | grep -oE '(GLIBC|GLIBCXX|CXXABI)_[0-9.]+' | sort -uV | tr '\n' ' ')
EOF

fashion_src=/usr/share/datasets/fashion-mnist
fashion_dest="$repo/third_party/fashion-mnist"
if [ -f "$fashion_src/train-images-idx3-ubyte.gz" ]; then
  echo "stage_deps: Fashion-MNIST from $fashion_src into $fashion_dest"
  rm -rf "$fashion_dest"
  mkdir -p "$fashion_dest"
  cp -L "$fashion_src"/*-ubyte.gz "$fashion_dest/"
else
  echo "stage_deps: no $fashion_src (apt-get install dataset-fashion-mnist): the GPU training step will say so"
fi

links=$(find "$dest" -type l | wc -l)
[ "$links" -eq 0 ] || die "$links symbolic links staged; expected real files only"
bytes=$(du -sb "$dest" | cut -f1)
mib=$(( (bytes + 1048575) / 1048576 ))
echo "stage_deps: staged $dest: $(find "$dest" -type f | wc -l) files, ${mib} MiB"
[ "$mib" -lt "$max_mib" ] || die "staged folder is ${mib} MiB, over the ${max_mib} MiB it should take: look for what was staged by mistake"
