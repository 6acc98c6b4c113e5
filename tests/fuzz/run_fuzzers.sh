#!/usr/bin/env bash
# tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS] [TARGET...]: runs each libFuzzer
# target built in BUILD_DIR/fuzz (by -DGLASSBOX_FUZZ=ON) for SECONDS (default
# 60), starting from its seeds in tests/fuzz/corpus/<target>/ and with its
# dictionary tests/fuzz/<target>.dict when there is one. What `make test`
# runs in CI (make test-fuzz).
#
# The fuzzer grows its corpus in a temporary folder, copied from the seeds and
# removed at the end: nothing new is written into the source tree. A crash,
# a sanitizer report, a leak, a timeout (10 s per input) or an
# out-of-memory stops that fuzzer; its input is kept as
# BUILD_DIR/fuzz-artifacts/<target>-crash-<sha1> (or leak-, timeout-, oom-),
# the script goes on with the others and exits 1 at the end. Reproduce
# with BUILD_DIR/fuzz/<target> BUILD_DIR/fuzz-artifacts/<file>.
#
# FUZZ_JOBS fuzzers run at once (default: one per core), each on one core:
# every target still gets its SECONDS, and the run takes 1/FUZZ_JOBS of the
# time (two cores, 30 s each: 3 minutes for 12 targets instead of 6). The reports
# come in target order once all have finished.
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [SECONDS] [TARGET...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
here=$(cd "$(dirname "$0")" && pwd)

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for binary in "$build"/fuzz/fuzz_*; do
    [ -x "$binary" ] && targets+=("$(basename "$binary")")
  done
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "run_fuzzers: no fuzz targets in $build/fuzz (configure with -DGLASSBOX_FUZZ=ON)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/glassbox-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

at_once=${FUZZ_JOBS:-$(nproc)}

# Runs one target; its exit status goes to $work/<target>.status.
fuzz_one() {
  local target=$1 corpus="$work/$1"
  mkdir -p "$corpus"
  if [ -d "$here/corpus/$target" ]; then cp "$here/corpus/$target"/* "$corpus"/; fi
  # Command lines fit in 512 bytes; a target whose input is a file (a JPEG's
  # tables alone take about 600 bytes) names its own limit in <target>.max_len.
  local max_len=512
  [ -f "$here/$target.max_len" ] && max_len=$(cat "$here/$target.max_len")
  local options=(-max_total_time="$seconds" -timeout=10 -max_len="$max_len" -print_final_stats=1
                 -artifact_prefix="$artifacts/$target-")
  [ -f "$here/$target.dict" ] && options+=(-dict="$here/$target.dict")
  echo "run_fuzzers: $target for ${seconds} s, from $(ls "$corpus" | wc -l) seeds"
  "$build/fuzz/$target" "${options[@]}" "$corpus" > "$work/$target.log" 2>&1
  echo $? > "$work/$target.status"
}

for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$at_once" ]; do wait -n; done
  fuzz_one "$target" &
done
wait

failed=()
for target in "${targets[@]}"; do
  log="$work/$target.log"
  if [ "$(cat "$work/$target.status" 2>/dev/null)" = 0 ]; then
    # The last status line and the final statistics: executions, coverage.
    echo "run_fuzzers: $target"
    grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log"
  else
    echo "run_fuzzers: $target FAILED; its log:" >&2
    tail -n 60 "$log" >&2
    failed+=("$target")
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "run_fuzzers: findings in ${failed[*]}; inputs kept in $artifacts" >&2
  exit 1
fi
echo "run_fuzzers: ${#targets[@]} fuzzers, ${seconds} s each, ${at_once} at a time, no findings"
