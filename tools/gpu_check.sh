#!/usr/bin/env bash
# tools/gpu_check.sh: the GPU suite (DESIGN.md section 6), run from the repo
# root on a GPU machine, typically one without a package manager (section 7):
#
#   1 system     nvidia-smi, tool and library versions
#   2 libraries  pip's NVIDIA roots (cuDNN, NCCL, cuBLAS) and the staged
#                Google Benchmark on LD_LIBRARY_PATH for the loader
#   3 build      CMake (Ninja, CUDA on, sm_90, -DGLASSBOX_STAGED_DEPS=third_party/staged)
#                into build-gpu with every core; or --prebuilt DIR
#   4 tests      every tests/test_* binary with GLASSBOX_REQUIRE_GPU=1 (a GPU
#                test that skips is a failure)
#   5 memcheck   compute-sanitizer --tool memcheck over the layer tests (all
#                but test_nets, test_graph, test_optim)
#   6 bench      build-gpu/bench_nets --device=cuda --cudnn-search and the PyTorch peer
#                (NCHW and channels_last) for LeNet, AlexNet, VGG16, ResNet50 at the
#                default GPU batches, then bench/compare.py -> bench/results/<gpu>/table.json
#                and bench/ratio_table.py -> bench/results/<gpu>/table.md; then
#                ResNet50/train_step fp32 and tf32 interleaved with PyTorch
#                (bench/interleave.py) -> bench/results/<gpu>/resnet50-<precision>.json
#   7 train      LeNet on Fashion-MNIST, ResNet-56 on a JPEG folder, ResNet-50 on real
#                JPEGs beside synthetic data -> <gpu>/lenet-fashion-mnist.jsonl,
#                resnet56-folder.jsonl, resnet50-real-data.json (tools/gpu_training.sh)
#   8 parallel   NCCL with one rank: bench_allreduce, ResNet-50 train_step with and without
#                the communicator, glassbox scale from the GPU's step -> <gpu>/allreduce-nccl.json,
#                resnet50-nccl-one-rank.json (tools/gpu_parallel.sh)
#   9 precision  bf16, fp16 and channels-last: the tests of the 16-bit path and of NHWC values,
#                `glassbox time` of ResNet50 in bf16, `kernels` at batch 256 -> <gpu>/resnet50-bf16-256-
#                kernels.{json,md} (tools/kernels_summary.py), ResNet50/train_step tf32 (NCHW and NHWC)
#                and bf16 interleaved with PyTorch
#                -> <gpu>/resnet50-{tf32-nchw,tf32-nhwc,bf16}.json (tools/gpu_precision.sh); alone,
#                within 450 s (GPU_CHECK_BUDGET): --prebuilt DIR --only precision
#  10 fusion     fused ReLUs, Linear on cuBLASLt, CUDA-graph replay, the autotune cache: their tests,
#                `glassbox time` fused and not and replayed, ResNet50/train_step bf16 at batch 256
#                fused (against PyTorch eager and torch.compile), unfused and replayed, LeNet and
#                ResNet56 replayed, interleaved with PyTorch -> <gpu>/resnet50-bf16-256*.json,
#                cuda-graph.json (tools/gpu_fusion.sh); alone, within 450 s: --prebuilt DIR --only fusion
#  11 engines    convolutions through cuDNN's graph API: their tests, `glassbox time` of ResNet50 bf16
#                with each pass's engine and knobs, ResNet50/train_step bf16 at batch 256 with the
#                search over both APIs and over the legacy one, interleaved with PyTorch
#                -> <gpu>/resnet50-bf16-256-{both-apis,legacy-api}.json (tools/gpu_engines.sh); alone,
#                within 450 s: --prebuilt DIR --only engines
#
# <gpu> is the GPU's name as nvidia-smi gives it, lower case, without the vendor
# and the memory type ("NVIDIA H100 80GB HBM3" -> h100-80gb): one folder per
# machine, each file replaced by the run that writes it (git keeps the old).
#
# Every step runs even when an earlier one failed (a step that needs the build
# is reported as failed when there is none); the exit status is 1 if any step
# failed, 2 for bad usage. Logs go to build-gpu-check/ and, when $OUT is set,
# are also copied there as each step ends, so that a run cut short by a time
# limit still leaves what it did.
#
# Usage: bash tools/gpu_check.sh [--prebuilt DIR] [--skip STEPS] [--only STEPS]
#                                [--bench-filter REGEX] [--dry-run]
#   --prebuilt DIR   use binaries built elsewhere for sm_90: DIR/tests/test_*
#                    and DIR/bench_nets (skips configure and build)
#   --skip / --only  comma-separated steps among build,tests,memcheck,bench,train,parallel,precision,fusion,
#                    engines
#                    (system and libraries always run)
#   --bench-filter   default '^(LeNet|AlexNet|VGG16|ResNet50)/'
#   --dry-run        detect and print what would run, run nothing
#
# Environment: GPU_CHECK_BUDGET (seconds for the whole run: each command's
# timeout is cut to what is left of it, and a command with under 20 s left is
# skipped and named; default 450 with --only, none otherwise),
# GPU_CHECK_TEST_TIMEOUT (seconds per test binary, default 600),
# GPU_CHECK_JOBS (parallel test binaries and build jobs, default nproc),
# GLASSBOX_PYTHON (the Python with PyTorch, default python3),
# GPU_CHECK_CUBLAS=pip (take cuBLAS from pip's nvidia/cu13 even where the
# toolkit has one; it does so anyway where the toolkit has none).
#
# Not `set -e`: a failed step must not end the run. Each step runs in a
# subshell with `set -e` of its own; failures are collected.
# The step_* functions are called by name through run_step, which shellcheck
# cannot follow (SC2317: "command appears to be unreachable").
# shellcheck disable=SC2317
set -uo pipefail

usage() { sed -n '/^# Usage:/,/^# toolkit has one/p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "gpu_check: $*" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || die "cannot enter $repo"

prebuilt=""
dry_run=0
skip=""
only=""
bench_filter='^(LeNet|AlexNet|VGG16|ResNet50)/'
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) [ $# -ge 2 ] || die "--prebuilt needs a directory"; prebuilt=$2; shift 2 ;;
    --prebuilt=*) prebuilt=${1#*=}; shift ;;
    --skip) [ $# -ge 2 ] || die "--skip needs steps"; skip=$2; shift 2 ;;
    --skip=*) skip=${1#*=}; shift ;;
    --only) [ $# -ge 2 ] || die "--only needs steps"; only=$2; shift 2 ;;
    --only=*) only=${1#*=}; shift ;;
    --bench-filter) [ $# -ge 2 ] || die "--bench-filter needs a regex"; bench_filter=$2; shift 2 ;;
    --bench-filter=*) bench_filter=${1#*=}; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
for step in ${skip//,/ } ${only//,/ }; do
  case "$step" in build|tests|memcheck|bench|train|parallel|precision|fusion|engines) ;;
    *) die "unknown step '$step' (steps: build,tests,memcheck,bench,train,parallel,precision,fusion,engines)" ;; esac
done
if [ -n "$prebuilt" ]; then
  [ -d "$prebuilt" ] || die "--prebuilt $prebuilt: no such directory"
  prebuilt=$(cd "$prebuilt" && pwd)
fi

wanted() {  # wanted STEP: not skipped, and in --only when given
  case ",$skip," in *",$1,"*) return 1 ;; esac
  [ -z "$only" ] && return 0
  case ",$only," in *",$1,"*) return 0 ;; esac
  return 1
}

# The run's deadline, where it has a budget (GPU_CHECK_BUDGET; --only: 450 s,
# so that a run of one step comes back whole from an 8-minute slot).
budget=${GPU_CHECK_BUDGET:-}
[ -n "$budget" ] || [ -z "$only" ] || budget=450
case "$budget" in ''|*[!0-9]*) [ -z "$budget" ] || die "GPU_CHECK_BUDGET must be a number of seconds, got '$budget'" ;; esac
deadline=""
[ -z "$budget" ] || deadline=$(( $(date +%s) + budget ))
export PYTHONUNBUFFERED=1  # the interleaved runs' lines reach the logs as they are printed

jobs=${GPU_CHECK_JOBS:-$(nproc)}
test_timeout=${GPU_CHECK_TEST_TIMEOUT:-600}
# Paths below the repository are relative to it (the script runs there), so
# that the results files name no machine's folders.
logs="build-gpu-check"
# The measured cuDNN search of every convolution the benchmarks time, kept
# for the whole run (Note [Autotune cache], layers/conv2d/autotune_cache.h):
# each problem is searched once, by the first process that meets it, and
# the later rounds and steps reuse the choice instead of searching again.
autotune_cache="$logs/autotune-cache.json"
build=${prebuilt:-build-gpu}
build=${build#"$repo"/}
staged="$repo/third_party/staged"
# By name where it is found on PATH, so that the commands results record name no machine's folders.
python=${GLASSBOX_PYTHON:-python3}
command -v "$python" >/dev/null || python=""
mkdir -p "$logs"
# The autotune cache stays: a later run on the same GPU reuses its searches.
find "$logs" -maxdepth 1 -type f \( -name '*.log' -o -name '*.json' -o -name summary.txt \) \
  ! -name "${autotune_cache##*/}" -delete

declare -a summary=()
failed=0
record() {  # record STEP STATUS DETAIL
  summary+=("$(printf '%-10s %-7s %s' "$1" "$2" "$3")")
  [ "$2" = "FAILED" ] && failed=1
  return 0
}

to_out() {  # copies files to $OUT, where a caller collects what the run leaves
  [ -n "${OUT:-}" ] || return 0
  mkdir -p "$OUT" || return 0
  cp -f "$@" "$OUT/" 2>/dev/null || echo "gpu_check: could not copy $* to \$OUT"
}

banner() { printf '\n==== %s ====\n' "$*"; }

show() {  # prints a command as it will run; runs it unless --dry-run
  printf '+'; printf ' %q' "$@"; printf '\n'
  [ "$dry_run" -eq 1 ] && return 0
  "$@"
}

# limit_for SECONDS: SECONDS, or what is left of the budget less 10 s if
# that is less; fails (printing nothing) when under 20 s are left.
limit_for() {
  local left
  if [ -z "$deadline" ]; then echo "$1"; return 0; fi
  left=$(( deadline - $(date +%s) - 10 ))
  [ "$left" -ge 10 ] || return 1
  if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# bounded SECONDS COMMAND...: runs COMMAND (through show) under `timeout`,
# within the budget; a command the budget has no time left for is skipped,
# named, and fails.
bounded() {
  local limit
  if ! limit=$(limit_for "$1"); then
    printf 'SKIPPED (the %s s budget, GPU_CHECK_BUDGET, is spent):' "$budget"; printf ' %q' "${@:2}"; printf '\n'
    return 3
  fi
  show timeout "$limit" "${@:2}"
}

# gpu_interleave LIMIT JSON ARG...: bench/interleave.py on the GPU with ARG...
# (its networks last), Glassbox's cuDNN searches kept in the run's autotune
# cache, within LIMIT s and the budget (bounded), into JSON, replaced.
gpu_interleave() {
  local limit=$1 json=$2
  shift 2
  [ "$dry_run" -eq 1 ] || rm -f "$json"
  bounded "$limit" "$python" bench/interleave.py --device cuda --bench "$build/bench_nets" --python "$python" \
    --glassbox-autotune-cache "$autotune_cache" --json "$json" "$@"
}

# The tests' cuBLAS workspace configuration, unless the caller set one:
# cuDNN's RNN calls run cuBLAS on streams of their own, where cuBLAS gives
# the same bits run to run only with a fixed configuration (its "Results
# reproducibility"), which the LSTM's replay and determinism tests compare.
# Not for the benchmarks: the PyTorch peer would inherit it.
export_cublas_workspace_config() { export CUBLAS_WORKSPACE_CONFIG=${CUBLAS_WORKSPACE_CONFIG:-:4096:8}; }

# run_tests TEST...: runs the named test binaries of $build/tests with
# GLASSBOX_REQUIRE_GPU=1 (a GPU test that skips fails), all at once (one GPU
# runs several test processes), each within 240 s and the budget; prints each
# one's output after all ended; returns 1 if any is missing or fails. A TEST
# of the form BINARY@FILTER runs BINARY with --gtest_filter=FILTER.
run_tests() {
  local t rc=0 limit code results="$logs/tests-$$.d"
  local -a list=()
  local -A filters=()
  export GLASSBOX_REQUIRE_GPU=1  # for the rest of the step, which runs in a subshell of its own
  export_cublas_workspace_config
  for t in "$@"; do
    case "$t" in *@*) filters[${t%%@*}]=${t#*@}; t=${t%%@*} ;; esac
    if [ "$dry_run" -eq 0 ] && [ ! -x "$build/tests/$t" ]; then echo "$t: not built"; rc=1; continue; fi
    list+=("$t")
  done
  [ ${#list[@]} -gt 0 ] || return "$rc"
  if ! limit=$(limit_for 240); then
    echo "SKIPPED (the $budget s budget, GPU_CHECK_BUDGET, is spent): ${list[*]}"; return 3
  fi
  echo "---- ${list[*]}: at once, each within $limit s"
  if [ "$dry_run" -eq 1 ]; then
    for t in "${list[@]}"; do
      printf '+ timeout %s %s --gtest_color=no --gtest_brief=1%s\n' "$limit" "$build/tests/$t" \
        "${filters[$t]:+ --gtest_filter=${filters[$t]}}"
    done
    return 0
  fi
  rm -rf "$results" && mkdir -p "$results"
  for t in "${list[@]}"; do
    ( timeout "$limit" "$build/tests/$t" --gtest_color=no --gtest_brief=1 \
        ${filters[$t]:+"--gtest_filter=${filters[$t]}"} >"$results/$t.log" 2>&1
      echo $? >"$results/$t.rc" ) &
  done
  wait
  for t in "${list[@]}"; do
    code=$(cat "$results/$t.rc" 2>/dev/null || echo 1)
    echo "---- $t (exit $code)"
    cat "$results/$t.log"
    case "$code" in 0) ;; 124) echo "$t: TIMED OUT after $limit s"; rc=1 ;; *) echo "$t: FAILED"; rc=1 ;; esac
  done
  rm -rf "$results"
  return "$rc"
}

# run_step NAME LOG FUNCTION: runs FUNCTION in a subshell with set -e, output
# to the console and LOG, and, as it is printed, to $OUT (a run cut short by a
# time limit still leaves what it did); returns its status.
run_step() {
  local name=$1 log=$2 fn=$3 rc
  banner "$name"
  if [ -n "${OUT:-}" ] && mkdir -p "$OUT"; then
    ( set -e; "$fn" ) 2>&1 | tee -a "$log" "$OUT/${log##*/}"
  else
    ( set -e; "$fn" ) 2>&1 | tee -a "$log"
  fi
  rc=${PIPESTATUS[0]}
  return "$rc"
}

# ---- 1 system -------------------------------------------------------------------------------
step_system() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)   host: $(hostname)   cores: $(nproc)"
  echo "repo: $repo   commit: $(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo 'unknown (no .git)')"
  local ok=1
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi || ok=0
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv || ok=0
  else
    echo "nvidia-smi: not found"; ok=0
  fi
  for tool in nvcc cmake ninja; do
    if command -v "$tool" >/dev/null; then "$tool" --version | sed -n '1,4p'; else echo "$tool: not found"; ok=0; fi
  done
  if [ -n "$sanitizer" ]; then "$sanitizer" --version | tail -n 2; else echo "compute-sanitizer: not found"; fi
  if [ -n "$python" ]; then
    "$python" -c 'import sys, torch, torchvision
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "torchvision", torchvision.__version__, "CUDA", torch.version.cuda,
      "cuDNN", torch.backends.cudnn.version(), "GPU available:", torch.cuda.is_available())' || ok=0
  else
    echo "python3: not found"; ok=0
  fi
  if [ -f "$staged/STAGED" ]; then echo "staged dependencies ($staged):"; sed 's/^/  /' "$staged/STAGED"
  else echo "staged dependencies: $staged/STAGED missing (run tools/stage_deps.sh on the build machine and copy third_party/staged here)"; fi
  [ "$ok" -eq 1 ] || { echo "system: something essential is missing (above)"; return 1; }
}

# ---- 2 libraries (in this shell: it exports LD_LIBRARY_PATH) ----------------------------------------
# find_libraries: tools/gpu_libraries.sh. Sets pip_roots, cmake_extra and LD_LIBRARY_PATH.
# shellcheck source=tools/gpu_libraries.sh
. "$repo/tools/gpu_libraries.sh"

# ---- 3 build -------------------------------------------------------------------------------------
step_build() {
  if [ ! -f "$staged/STAGED" ]; then
    echo "build: third_party/staged is missing: run tools/stage_deps.sh on the build machine and copy third_party/staged here"
    return 1
  fi
  show cmake -S "$repo" -B "$repo/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGLASSBOX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGLASSBOX_STAGED_DEPS="$staged" \
    -DGLASSBOX_BLAS=Eigen -DGLASSBOX_CPU_CONV=im2col ${python:+-DGLASSBOX_PYTHON="$(command -v "$python")"} "${cmake_extra[@]}"
  show cmake --build "$repo/build-gpu" -j "$jobs"
}

have_build() {
  [ "$dry_run" -eq 1 ] && return 0
  compgen -G "$build/tests/test_*" >/dev/null || compgen -G "$build/bench_nets" >/dev/null
}

test_binaries() {  # test_binaries [layer]: the test executables, sorted
  local t name
  for t in "$build"/tests/test_*; do
    if [ ! -f "$t" ] || [ ! -x "$t" ]; then continue; fi
    name=$(basename "$t")
    if [ "${1:-}" = layer ]; then
      case "$name" in test_nets|test_graph|test_optim) continue ;; esac
    fi
    echo "$t"
  done
}

# ---- 4 tests ---------------------------------------------------------------------------------------
step_tests() {
  local t name code skips status rc=0 results="$logs/tests.d"
  local -a list
  mapfile -t list < <(test_binaries)
  [ ${#list[@]} -gt 0 ] || [ "$dry_run" -eq 0 ] || list=("$build/tests/test_*")
  [ ${#list[@]} -gt 0 ] || { echo "tests: no test binaries in $build/tests"; return 1; }
  export GLASSBOX_REQUIRE_GPU=1
  export_cublas_workspace_config
  echo "GLASSBOX_REQUIRE_GPU=1; ${#list[@]} binaries, $jobs at a time, ${test_timeout} s each"
  if [ "$dry_run" -eq 1 ]; then printf '+ %s --gtest_color=no\n' "${list[@]}"; return 0; fi
  rm -rf "$results" && mkdir -p "$results"
  # One log per binary, run in parallel, each within the test timeout and what
  # is left of the budget (limit_for; exit 3: none left), copied to $OUT/tests
  # as it ends; printed in order afterwards.
  export deadline
  export -f limit_for
  # shellcheck disable=SC2016  # expanded by the inner bash
  printf '%s\0' "${list[@]}" | xargs -0 -P "$jobs" -I{} bash -c '
    log="$2/$(basename "$1").log"
    if ! limit=$(limit_for "$3"); then
      echo "SKIPPED: the budget (GPU_CHECK_BUDGET) is spent" >"$log"; echo 3 >"$log.rc"; exit 0
    fi
    timeout "$limit" "$1" --gtest_color=no >"$log" 2>&1; echo $? >"$log.rc"
    if [ -n "${OUT:-}" ]; then mkdir -p "$OUT/tests" && cp -f "$log" "$OUT/tests/"; fi
    exit 0' _ {} "$results" "$test_timeout"
  for t in "${list[@]}"; do
    name=$(basename "$t")
    echo "---- $name (exit $(cat "$results/$name.log.rc"))"
    cat "$results/$name.log"
  done
  echo "---- summary (GLASSBOX_REQUIRE_GPU=1)"
  for t in "${list[@]}"; do
    name=$(basename "$t")
    code=$(cat "$results/$name.log.rc")
    skips=$(sed -n 's/^\[  SKIPPED \] \([^ ]*\.[^ ]*\).*/\1/p' "$results/$name.log" | sort -u | wc -l)
    case "$code" in
      0) status=passed ;; 3) status="SKIPPED (budget spent)" ;; 124) status="TIMED OUT" ;;
      *) status="FAILED (exit $code)" ;;
    esac
    [ "$skips" -eq 0 ] || status="$status, $skips skipped"
    printf '  %-28s %s\n' "$name" "$status"
    [ "$code" -eq 0 ] || rc=1
  done
  if grep -q '^\[  SKIPPED \] [^ ]*\.' "$results"/*.log; then
    echo "WARNING: tests skipped although GLASSBOX_REQUIRE_GPU=1 (see '[  SKIPPED ]' lines above): on a GPU machine"
    echo "         a GPU test must run; the test support turns GPU skips into failures under that variable"
  fi
  return "$rc"
}

# ---- 5 memcheck -----------------------------------------------------------------------------------
step_memcheck() {
  [ -n "$sanitizer" ] || { echo "memcheck: compute-sanitizer not found"; return 1; }
  local t rc=0 code limit
  local -a list
  mapfile -t list < <(test_binaries layer)
  [ ${#list[@]} -gt 0 ] || [ "$dry_run" -eq 0 ] || list=("$build/tests/test_* (but test_nets, test_graph, test_optim)")
  [ ${#list[@]} -gt 0 ] || { echo "memcheck: no layer test binaries in $build/tests"; return 1; }
  export GLASSBOX_REQUIRE_GPU=1
  for t in "${list[@]}"; do
    echo "---- $(basename "$t")"
    # CUPTI takes one subscriber, and under compute-sanitizer that is the
    # sanitizer: the kernel trace's tests fail with CUPTI error 39
    # (MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), seen on the H100.
    if [ "$(basename "$t")" = test_kernel_map ]; then
      echo "memcheck test_kernel_map: not run (the sanitizer holds CUPTI, which the kernel trace needs)"; continue
    fi
    code=0
    if ! limit=$(limit_for "$test_timeout"); then
      echo "memcheck: SKIPPED from $(basename "$t") on (the $budget s budget, GPU_CHECK_BUDGET, is spent)"; rc=1; break
    fi
    show timeout "$limit" "$sanitizer" --tool memcheck --error-exitcode 99 --print-limit 50 \
      "$t" --gtest_color=no --gtest_brief=1 2>&1 | tee "$logs/memcheck.one" || code=${PIPESTATUS[0]}
    # A binary whose tests make no CUDA call in its own process (the CLI tests
    # run glassbox as a child) passes, and the sanitizer then exits 255 with
    # this message: nothing for memcheck to check, not a failure.
    if [ "$code" -eq 255 ] && grep -q 'terminated before first instrumented API call' "$logs/memcheck.one" \
       && grep -q '^\[  PASSED  \]' "$logs/memcheck.one"; then
      echo "memcheck $(basename "$t"): tests passed, no CUDA call in this process (nothing to check)"; continue
    fi
    case "$code" in
      0) echo "memcheck $(basename "$t"): clean" ;;
      99) echo "memcheck $(basename "$t"): MEMORY ERRORS (above)"; rc=1 ;;
      124) echo "memcheck $(basename "$t"): TIMED OUT after $limit s"; rc=1 ;;
      *) echo "memcheck $(basename "$t"): test FAILED under the sanitizer (exit $code)"; rc=1 ;;
    esac
  done
  return "$rc"
}

# ---- 6 bench ----------------------------------------------------------------------------------------
gpu_slug() {  # "NVIDIA H100 80GB HBM3" -> h100-80gb: lower case, no vendor, no memory type
  local name
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  name=$(echo "${name:-unknown-gpu}" | tr '[:upper:]' '[:lower:]' | sed -e 's/[^a-z0-9]\{1,\}/-/g' \
    -e 's/^-//' -e 's/-$//' -e 's/^nvidia-//' -e 's/-\(hbm[0-9a-z]*\|gddr[0-9a-z]*\)$//')
  echo "${name:-unknown-gpu}"
}

step_bench() {
  local rc=0 gb_json="$logs/bench_nets.json" pt_json="$logs/pytorch_nets.json"
  # Never pass off an earlier run's files as this one's.
  [ "$dry_run" -eq 1 ] || rm -f "$results_file" "$results_dir/table.md" "$results_dir"/resnet50-{fp32,tf32}.json
  [ "$dry_run" -eq 1 ] || mkdir -p "$results_dir"
  echo "---- Glassbox: $build/bench_nets"
  if [ "$dry_run" -eq 1 ] || [ -x "$build/bench_nets" ]; then
    # --cudnn-search: the PyTorch peer runs with cudnn.benchmark = True (measured
    # algorithm choice), so Glassbox measures its choices too: like for like.
    if bounded 1200 "$build/bench_nets" --device=cuda --cudnn-search --benchmark_filter="$bench_filter" \
         --benchmark_out="$gb_json" --benchmark_out_format=json; then
      if [ "$dry_run" -eq 0 ] && ! "$python" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["benchmarks"] else 1)' "$gb_json"; then
        echo "bench_nets: no benchmark ran (filter '$bench_filter')"; rc=1
      fi
    else
      echo "bench_nets: FAILED"; rc=1
    fi
  else
    echo "bench_nets: not built ($build/bench_nets missing)"; rc=1
  fi
  echo "---- PyTorch: bench/peers/pytorch_nets.py"
  bounded 1200 "$python" bench/peers/pytorch_nets.py --device cuda --layouts nchw,channels_last \
    --filter "$bench_filter" \
    --json "$pt_json" || { echo "pytorch_nets: FAILED"; rc=1; }
  echo "---- comparison"
  if [ "$dry_run" -eq 1 ] || { [ -s "$gb_json" ] && [ -s "$pt_json" ]; }; then
    if bounded 60 "$python" bench/compare.py "$gb_json" "$pt_json" --out "$results_file"; then
      bounded 60 "$python" bench/ratio_table.py --out "$results_dir/table.md" "$results_file" \
        || { echo "ratio_table: FAILED"; rc=1; }
    else
      echo "compare: FAILED"; rc=1
    fi
  else
    echo "compare: skipped (needs both $gb_json and $pt_json)"; rc=1
  fi
  # The issue's GPU figure: ResNet-50 train_step at its GPU batch, fp32 and
  # tf32, in alternating Glassbox and PyTorch runs (3 rounds, medians, the
  # better PyTorch layout): bench/interleave.py.
  local precision
  for precision in fp32 tf32; do
    echo "---- ResNet50/train_step $precision, interleaved with PyTorch"
    bounded 600 "$python" bench/interleave.py --device cuda --bench "$build/bench_nets" --python "$python" --rounds 3 \
      --glassbox-autotune-cache "$autotune_cache" --modes train_step --precision "$precision" \
      --json "$results_dir/resnet50-$precision.json" ResNet50 \
      || { echo "interleave $precision: FAILED"; rc=1; }
  done
  return "$rc"
}

# ---- 7 train: tools/gpu_training.sh ----------------------------------------------------------------
# shellcheck source=tools/gpu_training.sh
. "$repo/tools/gpu_training.sh"

# ---- 8 parallel: tools/gpu_parallel.sh -------------------------------------------------------------
# shellcheck source=tools/gpu_parallel.sh
. "$repo/tools/gpu_parallel.sh"

# ---- 9 precision: tools/gpu_precision.sh ----------------------------------------------------------
# shellcheck source=tools/gpu_precision.sh
. "$repo/tools/gpu_precision.sh"

# ---- 10 fusion: tools/gpu_fusion.sh ---------------------------------------------------------------
# shellcheck source=tools/gpu_fusion.sh
. "$repo/tools/gpu_fusion.sh"

# ---- 11 engines: tools/gpu_engines.sh -------------------------------------------------------------
# shellcheck source=tools/gpu_engines.sh
. "$repo/tools/gpu_engines.sh"

# results_out STEP: copies the results files STEP wrote to $OUT, as soon as it ends.
results_out() {
  local f
  [ "$dry_run" -eq 0 ] || return 0
  case "$1" in
    bench)
      if [ -f "$results_file" ]; then to_out "$results_file"
      else for f in "$logs/bench_nets.json" "$logs/pytorch_nets.json"; do [ -f "$f" ] && to_out "$f"; done; fi
      for f in "$results_dir"/{resnet50-fp32.json,resnet50-tf32.json,table.md}; do [ -f "$f" ] && to_out "$f"; done ;;
    train)
      for f in "$results_dir"/{resnet50-real-data.json,lenet-fashion-mnist.jsonl,resnet56-folder.jsonl}; do
        [ -f "$f" ] && to_out "$f"
      done ;;
    precision)
      for f in "$results_dir"/resnet50-{tf32-nchw,tf32-nhwc,bf16}.json "$results_dir"/resnet50-bf16-256-kernels.{json,md}
      do [ -f "$f" ] && to_out "$f"; done ;;
    fusion)
      for f in "$results_dir"/resnet50-bf16-256{,-no-fusion,-cuda-graph,-compiled}.json "$results_dir/cuda-graph.json"; do
        [ -f "$f" ] && to_out "$f"
      done ;;
    engines) for f in "$results_dir"/resnet50-bf16-256-{both-apis,legacy-api}.json; do [ -f "$f" ] && to_out "$f"; done ;;
    parallel) for f in "$results_dir"/{allreduce-nccl,resnet50-nccl-one-rank}.json; do [ -f "$f" ] && to_out "$f"; done ;;
  esac
  return 0
}

# ---- main -------------------------------------------------------------------------------------------
sanitizer=$(command -v compute-sanitizer || true)
for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [ -z "$sanitizer" ] && [ -x "$candidate" ] && sanitizer=$candidate
done
[ "$dry_run" -eq 1 ] && echo "gpu_check: dry run: detecting, printing commands, running nothing"
[ -z "$budget" ] || echo "gpu_check: a budget of $budget s (GPU_CHECK_BUDGET): each command is cut to what is left"

if run_step "1 system" "$logs/system.log" step_system; then record system ok ""; else record system FAILED "see system.log"; fi

banner "2 libraries"
# In this shell (not a pipeline) so that its exports stay.
if find_libraries >"$logs/libraries.out" 2>&1; then record libraries ok ""
else record libraries FAILED "a library is missing (system.log)"; fi
tee -a "$logs/system.log" <"$logs/libraries.out" && rm -f "$logs/libraries.out"
to_out "$logs/system.log"
results_dir="bench/results/$(gpu_slug)"
results_file="$results_dir/table.json"

# With --prebuilt, the CLI tests run glassbox and bench_* from DIR, not from
# the path the build compiled in, which is the build machine's
# (tests/support/command.h, program_path). The tests that read Fashion-MNIST
# look where Debian's dataset-fashion-mnist puts it; the carried copy stands in.
[ -z "$prebuilt" ] || export GLASSBOX_PROGRAMS_DIR="$prebuilt"
if [ "$dry_run" -eq 0 ] && [ ! -e /usr/share/datasets/fashion-mnist ] \
   && [ -f "$repo/third_party/fashion-mnist/train-images-idx3-ubyte.gz" ]; then
  mkdir -p /usr/share/datasets && ln -s "$repo/third_party/fashion-mnist" /usr/share/datasets/fashion-mnist \
    && echo "gpu_check: linked /usr/share/datasets/fashion-mnist -> $repo/third_party/fashion-mnist"
fi

if [ -n "$prebuilt" ]; then
  record build ok "prebuilt: $prebuilt"
elif wanted build; then
  if run_step "3 build" "$logs/build.log" step_build; then record build ok "build-gpu"; else record build FAILED "see build.log"; fi
else
  record build skipped ""
fi

for step in tests memcheck bench train parallel precision fusion engines; do
  case "$step" in
    tests) n=4 ;; memcheck) n=5 ;; bench) n=6 ;; train) n=7 ;; parallel) n=8 ;; precision) n=9 ;; fusion) n=10 ;;
    engines) n=11 ;;
  esac
  if ! wanted "$step"; then record "$step" skipped ""; continue; fi
  if [ "$step" != bench ] && [ "$step" != train ] && [ "$step" != parallel ] && [ "$step" != precision ] \
     && [ "$step" != fusion ] && [ "$step" != engines ] && ! have_build; then
    banner "$n $step"; echo "$step: no build in $build"; record "$step" FAILED "no build"; continue
  fi
  if run_step "$n $step" "$logs/$step.log" "step_$step"; then record "$step" ok ""; else record "$step" FAILED "see $step.log"; fi
  results_out "$step"
done

banner "summary"
{
  printf '%s\n' "${summary[@]}"
  if [ -d "$results_dir" ]; then echo "results: $results_dir"; fi
  echo "logs: $logs${OUT:+ (copied to \$OUT)}"
  if [ "$failed" -eq 0 ]; then echo "gpu_check: all steps passed"; else echo "gpu_check: FAILED (see above)"; fi
} | tee "$logs/summary.txt"
to_out "$logs/summary.txt"
exit "$failed"
