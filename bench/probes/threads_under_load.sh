#!/usr/bin/env bash
# bench/probes/threads_under_load.sh [GLASSBOX] [NET:BATCH ...]: what a
# second OpenMP thread is worth on a quiet machine and beside one busy
# process of equal priority (a shell loop, one core's worth of other work),
# for each OpenMP wait setting libgomp reads at start-up. Prints, per network,
# the measured step of `glassbox time` (median of 3 runs, ms) and the
# 1-thread/2-thread ratio (above 1: the second thread helps).
#
# The question it answers: does a team of two threads fall below one thread
# when another process competes for a core (threads spinning at barriers for
# a thread that the scheduler has paused), and does a wait policy fix it?
# Every setting runs with --fixed-threads, the count it names, except the
# last, "fitted": `time`'s own choice (Note [Threads on a shared machine]).
# Results: bench/probes/threads_under_load.txt.
#
#   bash bench/probes/threads_under_load.sh build-cpu/glassbox LeNet:64 AlexNet:16
set -uo pipefail
glassbox=${1:-build-cpu/glassbox}
shift || true
nets=("$@")
[ ${#nets[@]} -eq 0 ] && nets=(LeNet:64)
settings=("OMP_NUM_THREADS=1" "OMP_NUM_THREADS=2" "OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive"
          "OMP_NUM_THREADS=2 GOMP_SPINCOUNT=10000" "OMP_NUM_THREADS=2 GOMP_SPINCOUNT=100000" "OMP_NUM_THREADS=2 fitted")

step_ms() {  # step_ms NET BATCH SETTING...: the median measured step of 3 runs
  local net=$1 batch=$2 fixed=--fixed-threads
  shift 2
  if [ "${*: -1}" = fitted ]; then
    fixed=""
    set -- "${@:1:$#-1}"
  fi
  for _ in 1 2 3; do
    # shellcheck disable=SC2086  # $fixed is one flag or none
    env "$@" "$glassbox" time "$net" --device cpu --batch "$batch" --steps 20 --warmup 3 $fixed 2>/dev/null |
      sed -n 's/^measured step: \([0-9.]*\) ms.*/\1/p'
  done | sort -g | sed -n 2p
}

busy=""
trap '[ -n "$busy" ] && kill "$busy" 2>/dev/null' EXIT
for load in quiet busy; do
  if [ "$load" = busy ]; then
    ( while :; do :; done ) &
    busy=$!
  fi
  for item in "${nets[@]}"; do
    net=${item%%:*} batch=${item##*:}
    one=""
    for setting in "${settings[@]}"; do
      # shellcheck disable=SC2086  # a setting is several words on purpose
      ms=$(step_ms "$net" "$batch" $setting)
      [ "$setting" = "OMP_NUM_THREADS=1" ] && one=$ms
      ratio=$(awk -v a="$one" -v b="$ms" 'BEGIN { if (b > 0) printf "%.2f", a / b }')
      printf '%-6s %-10s %-45s %9s ms  1 thread / this: %s\n' "$load" "$net/$batch" "$setting" "$ms" "$ratio"
    done
  done
done
