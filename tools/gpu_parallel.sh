# tools/gpu_parallel.sh: step 8 of tools/gpu_check.sh, sourced by it (not run
# alone): data-parallel training's GPU path on one GPU (issue 8's GPU checks).
# NCCL with a single rank is legal and runs the whole path: the communicator,
# its stream and events, and ncclAllReduce(ncclAvg), without MPI (the GPU
# machine has none).
#   - bench_allreduce, 4 KiB to 1 GiB, NCCL with one rank
#     -> bench/results/<gpu>/allreduce-nccl.json;
#   - ResNet-50 train_step at batch 64 with no communicator beside the
#     data-parallel step with NCCL (bench_nets --data-parallel): the cost of
#     the path itself -> bench/results/<gpu>/resnet50-nccl-one-rank.json;
#   - glassbox scale ResNet50 and VGG16 from this GPU's measured step (logged).
# Each run replaces the files it writes. Reads gpu_check.sh's $build, $logs,
# $results_dir, $dry_run and bounded().
# shellcheck shell=bash
# shellcheck disable=SC2154  # build, logs, results_dir, dry_run are gpu_check.sh's

step_parallel() {
  local rc=0 allreduce_file="$results_dir/allreduce-nccl.json" one_rank_file="$results_dir/resnet50-nccl-one-rank.json"
  if [ "$dry_run" -eq 0 ] && [ ! -x "$build/bench_allreduce" ]; then
    echo "parallel: not built ($build/bench_allreduce missing)"; return 1
  fi
  [ "$dry_run" -eq 1 ] || { rm -f "$allreduce_file" "$one_rank_file"; mkdir -p "$results_dir"; }
  echo "---- bench_allreduce, NCCL with one rank"
  bounded 240 "$build/bench_allreduce" --device=cuda --benchmark_out="$allreduce_file" \
    --benchmark_out_format=json || { echo "bench_allreduce: FAILED"; rc=1; }
  echo "---- ResNet50/train_step batch 64: no communicator, then NCCL with one rank"
  bounded 300 "$build/bench_nets" --device=cuda --net=ResNet50 --batch=64 --data-parallel --steps=50 \
    --benchmark_filter='ResNet50/train_step/batch:64(/ranks:1)?/iterations' \
    --benchmark_out="$one_rank_file" --benchmark_out_format=json \
    || { echo "ResNet50 NCCL one rank: FAILED"; rc=1; }
  echo "---- glassbox scale from this GPU's step"
  bounded 120 "$build/glassbox" scale ResNet50 --device cuda --batch 64 --link nvlink || rc=1
  bounded 120 "$build/glassbox" scale ResNet50 --device cuda --batch 64 --link infiniband || rc=1
  bounded 120 "$build/glassbox" scale VGG16 --device cuda --batch 64 --gpus 1,8 --link nvlink || rc=1
  return "$rc"
}
