# tools/gpu_precision.sh: the `precision` step of tools/gpu_check.sh, sourced
# by it (not run alone): bf16 and fp16 mixed precision on the GPU
# (docs/precision.md), in under 8 minutes from a prebuilt sm_90 build:
#   - the tests of the 16-bit path: every layer in bf16 and fp16 on the GPU
#     against the CPU's fp32, the staging rules, the conversion kernels, the
#     update that writes the working copy, loss scaling on the device;
#   - the tests of channels-last values on the GPU: the layout plan, KRSC
#     filters, layout bridges, NHWC batch norm, pooling, concat and flatten;
#     of a ReLU fused into its convolution (cuDNN's fused call), into its
#     Linear (cuBLASLt's epilogue) and into its batch norm (fp16 NHWC,
#     forward and backward); ReLU's backward kernel; Linear on cuBLASLt;
#     steps replayed as CUDA graphs against eager ones (test_step_replay);
#   - ResNet50/train_step interleaved with PyTorch (2 rounds): tf32 at batch
#     64 with Glassbox's values NCHW and NHWC, bf16 (NHWC) at batches 64 and
#     256 -> bench/results/<gpu>/resnet50-{tf32-nchw,tf32-nhwc,bf16}.json;
#   - `glassbox time` and `glassbox kernels` of ResNet50 in bf16: which
#     layers compute in 16 bits, which are staged, which kernels ran; and
#     `glassbox time` in fp16 with and without fusion (batch norm + ReLU in
#     one cuDNN call), and of AlexNet in bf16 with and without fusion
#     (convolution and Linear with their ReLUs) -> the step's log;
#   - LeNet and ResNet56 train_step (the launch-bound networks) replayed as
#     CUDA graphs, interleaved with PyTorch eager (2 rounds), and eager alone
#     -> bench/results/<gpu>/cuda-graph{,-eager}.json.
# Each command has its own timeout, so one that hangs cannot take the others'
# time. Reads gpu_check.sh's $build, $logs, $results_dir, $python, $dry_run and
# show(); paths are relative to the repository.
# shellcheck shell=bash
# shellcheck disable=SC2154  # build, logs, results_dir, python, dry_run are gpu_check.sh's

precision_tests=(test_channels_last_cuda test_channels_last_cuda_layers test_channels_last_cuda_concat test_fusion
                 test_fusion_residual test_relu test_linear test_step_replay test_autotune_cache test_mixed_precision test_precision_staging test_loss_scaler_cuda test_convert test_kernel_map
                 test_sgd_working_copy test_loss_scale)

step_precision() {
  local rc=0 t
  [ "$dry_run" -eq 1 ] || mkdir -p "$results_dir"
  export GLASSBOX_REQUIRE_GPU=1
  for t in "${precision_tests[@]}"; do
    echo "---- $t"
    if [ "$dry_run" -eq 0 ] && [ ! -x "$build/tests/$t" ]; then echo "$t: not built"; rc=1; continue; fi
    show timeout 240 "$build/tests/$t" --gtest_color=no --gtest_brief=1 || { echo "$t: FAILED"; rc=1; }
  done
  if [ "$dry_run" -eq 0 ] && [ ! -x "$build/glassbox" ]; then
    echo "precision: $build/glassbox missing: no time or kernels"; rc=1
  else
    echo "---- glassbox time ResNet50 --precision bf16 (which layers compute in 16 bits)"
    show timeout 120 "$build/glassbox" time ResNet50 --device cuda --precision bf16 --batch 64 --steps 5 \
      || { echo "time bf16: FAILED"; rc=1; }
    echo "---- glassbox kernels ResNet50 --precision bf16"
    show timeout 120 "$build/glassbox" kernels ResNet50 --device cuda --precision bf16 --batch 64 \
      || { echo "kernels bf16: FAILED"; rc=1; }
    local fusion
    for fusion in "" --no-fusion; do
      echo "---- glassbox time ResNet50 --precision fp16 $fusion (batch norm + ReLU fused or not)"
      show timeout 90 "$build/glassbox" time ResNet50 --device cuda --precision fp16 --batch 64 --steps 5 $fusion \
        || { echo "time fp16 $fusion: FAILED"; rc=1; }
      echo "---- glassbox time AlexNet --precision bf16 $fusion (convolution and Linear + ReLU fused or not)"
      show timeout 60 "$build/glassbox" time AlexNet --device cuda --precision bf16 --batch 128 --steps 5 $fusion \
        || { echo "time AlexNet bf16 $fusion: FAILED"; rc=1; }
    done
  fi
  if [ "$dry_run" -eq 0 ] && [ ! -x "$build/bench_nets" ]; then
    echo "precision: $build/bench_nets missing: no replay timing"; rc=1
  else
    echo "---- LeNet and ResNet56 train_step replayed as CUDA graphs, interleaved with PyTorch eager; and eager"
    [ "$dry_run" -eq 1 ] || rm -f "$results_dir/cuda-graph.json" "$results_dir/cuda-graph-eager.json"
    show timeout 150 "$python" bench/interleave.py --device cuda --bench "$build/bench_nets" --python "$python" \
      --rounds 2 --min-time 1 --modes train_step --glassbox-cuda-graph --json "$results_dir/cuda-graph.json" \
      LeNet ResNet56 || { echo "interleave --glassbox-cuda-graph: FAILED"; rc=1; }
    show timeout 60 "$build/bench_nets" --device=cuda --benchmark_filter='^(LeNet|ResNet56)/train_step/' \
      --benchmark_min_time=1 --benchmark_out="$results_dir/cuda-graph-eager.json" \
      || { echo "bench eager: FAILED"; rc=1; }
    echo "---- glassbox time ResNet56 --cuda-graph (eager per-layer times, then the replayed step)"
    show timeout 60 "$build/glassbox" time ResNet56 --device cuda --cuda-graph --steps 5 \
      || { echo "time --cuda-graph: FAILED"; rc=1; }
  fi
  local run precision layout batches name limit
  for run in tf32:nchw tf32:nhwc bf16:auto; do
    precision=${run%%:*} layout=${run#*:}
    batches=64 name=resnet50-$precision-$layout limit=120
    [ "$precision" = bf16 ] && batches=64,256 name=resnet50-bf16 limit=180
    echo "---- ResNet50/train_step $precision ($layout values) at batch $batches, interleaved with PyTorch"
    [ "$dry_run" -eq 1 ] || rm -f "$results_dir/$name.json"
    show timeout "$limit" "$python" bench/interleave.py --device cuda --bench "$build/bench_nets" --python "$python" \
      --rounds 2 --min-time 1 --modes train_step --batch "$batches" --precision "$precision" \
      --glassbox-layout "$layout" \
      --json "$results_dir/$name.json" ResNet50 \
      || { echo "interleave $precision $layout: FAILED"; rc=1; }
  done
  return "$rc"
}
