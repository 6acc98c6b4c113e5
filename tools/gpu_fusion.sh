# tools/gpu_fusion.sh: the `fusion` step of tools/gpu_check.sh, sourced by it
# (not run alone): what a static graph does beyond an eager framework on the
# GPU (docs/fusion.md, docs/cuda_graphs.md), sized for 8 minutes from a
# prebuilt sm_90 build (the timeouts bound each command):
#   - the tests: ReLUs fused into convolutions (cuDNN's fused call), Linear
#     layers (cuBLASLt's epilogues), batch norms (NHWC, forward and
#     backward) and residual adds, fused against unfused training; ReLU's
#     backward kernel; Linear on cuBLASLt; steps replayed as CUDA graphs
#     against eager ones; the autotune cache of the measured cuDNN search;
#   - ResNet50/train_step in bf16 at batch 256 interleaved with PyTorch eager
#     AMP in channels_last (its better layout here) over 2 rounds: Glassbox
#     fused -> <gpu>/resnet50-bf16-256.json; fused and replayed ->
#     resnet50-bf16-256-cuda-graph.json;
#   - LeNet and ResNet56 train_step (launch-bound) replayed, interleaved with
#     PyTorch eager (2 rounds) -> <gpu>/cuda-graph.json;
#   - `glassbox time` of ResNet50 in fp16 and of AlexNet in bf16, with and
#     without fusion, and of ResNet56 replayed -> the step's log;
#   - ResNet50 bf16 at batch 256 against PyTorch eager AMP and torch.compile,
#     one round (each compile takes minutes) ->
#     <gpu>/resnet50-bf16-256-compiled.json;
#   - the same unfused, over 2 rounds -> resnet50-bf16-256-no-fusion.json.
# The tests run at once; the figures follow, the most wanted first. Each command
# has its own timeout, cut to what is left of the run's budget (bounded), so
# one that hangs cannot take the others' time. Reads gpu_check.sh's $build,
# $logs, $results_dir, $python, $dry_run, bounded() and run_tests(); paths
# are relative to the repository.
# shellcheck shell=bash
# shellcheck disable=SC2154  # build, logs, results_dir, python, dry_run, autotune_cache are gpu_check.sh's

fusion_tests=(test_fusion test_fusion_residual test_relu test_finite_check test_linear test_step_replay
              test_step_readback test_autotune_cache test_gradient_needs)

# fusion_interleave fused|cuda-graph|no-fusion: ResNet50/train_step in bf16
# at batch 256, interleaved with PyTorch eager AMP in channels_last over 2
# rounds -> <gpu>/resnet50-bf16-256{,-cuda-graph,-no-fusion}.json.
fusion_interleave() {
  local run=$1 name=resnet50-bf16-256
  local -a flags=()
  case "$run" in
    no-fusion) name=$name-no-fusion flags=(--glassbox-no-fusion) ;;
    cuda-graph) name=$name-cuda-graph flags=(--glassbox-cuda-graph) ;;
  esac
  echo "---- ResNet50/train_step bf16 at batch 256 ($run), interleaved with PyTorch eager"
  gpu_interleave 120 "$results_dir/$name.json" --rounds 2 --min-time 1 --modes train_step --batch 256 \
    --precision bf16 --layouts channels_last "${flags[@]}" ResNet50 \
    || { echo "interleave ResNet50 bf16 $run: FAILED"; return 1; }
}

step_fusion() {
  local rc=0
  [ "$dry_run" -eq 1 ] || mkdir -p "$results_dir"
  run_tests "${fusion_tests[@]}" || rc=1
  # The figures, the first: ResNet50 bf16 at batch 256 fused and
  # replayed over 2 rounds against PyTorch eager AMP in channels_last (its
  # better layout on a tensor-core GPU); the launch-bound networks replayed;
  # `time` fused and not; then the longest, against torch.compile in one round
  # (its compiles take minutes; a compile that fails is named and the eager
  # figures stand), and unfused. Each later command gets what the budget has
  # left, so the most wanted come first.
  fusion_interleave fused || rc=1
  fusion_interleave cuda-graph || rc=1
  echo "---- LeNet and ResNet56 train_step replayed as CUDA graphs, interleaved with PyTorch eager"
  gpu_interleave 120 "$results_dir/cuda-graph.json" --rounds 2 --min-time 1 --modes train_step --glassbox-cuda-graph \
    LeNet ResNet56 || { echo "interleave LeNet ResNet56 --glassbox-cuda-graph: FAILED"; rc=1; }
  if [ "$dry_run" -eq 0 ] && [ ! -x "$build/glassbox" ]; then
    echo "fusion: $build/glassbox missing: no time"; rc=1
  else
    local fusion
    for fusion in "" --no-fusion; do
      echo "---- glassbox time ResNet50 --precision fp16 $fusion (batch norm + ReLU fused or not)"
      bounded 90 "$build/glassbox" time ResNet50 --device cuda --precision fp16 --batch 64 --steps 5 $fusion \
        || { echo "time ResNet50 fp16 $fusion: FAILED"; rc=1; }
      echo "---- glassbox time AlexNet --precision bf16 $fusion (convolution and Linear + ReLU fused or not)"
      bounded 60 "$build/glassbox" time AlexNet --device cuda --precision bf16 --batch 128 --steps 5 $fusion \
        || { echo "time AlexNet bf16 $fusion: FAILED"; rc=1; }
    done
    echo "---- glassbox time ResNet56 --cuda-graph (eager per-layer times, then the replayed step)"
    bounded 60 "$build/glassbox" time ResNet56 --device cuda --cuda-graph --steps 5 \
      || { echo "time ResNet56 --cuda-graph: FAILED"; rc=1; }
  fi
  echo "---- ResNet50/train_step bf16 at batch 256 against torch.compile (one round)"
  gpu_interleave 180 "$results_dir/resnet50-bf16-256-compiled.json" --rounds 1 --min-time 1 --modes train_step \
    --batch 256 --precision bf16 --layouts channels_last --pytorch-compile ResNet50 \
    || { echo "interleave ResNet50 bf16 --pytorch-compile: FAILED"; rc=1; }
  fusion_interleave no-fusion || rc=1
  return "$rc"
}
