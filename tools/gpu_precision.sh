# tools/gpu_precision.sh: the `precision` step of tools/gpu_check.sh, sourced
# by it (not run alone): bf16 and fp16 mixed precision on the GPU
# (docs/precision.md), in under 8 minutes from a prebuilt sm_90 build:
#   - the tests of the 16-bit path: every layer in bf16 and fp16 on the GPU
#     against the CPU's fp32, the staging rules, the conversion kernels, the
#     update that writes the working copy, loss scaling on the device;
#   - the tests of channels-last values on the GPU: the layout plan, KRSC
#     filters, layout bridges, NHWC batch norm, pooling, concat and flatten;
#   - ResNet50/train_step interleaved with PyTorch (2 rounds): tf32 at batch
#     64 with Glassbox's values NCHW and NHWC, bf16 (NHWC) at batches 64 and
#     256 -> bench/results/<gpu>/resnet50-{tf32-nchw,tf32-nhwc,bf16}.json;
#   - `glassbox time` and `glassbox kernels` of ResNet50 in bf16: which
#     layers compute in 16 bits, which are staged, which kernels ran -> the
#     step's log.
# Fusion, cuBLASLt, CUDA graphs and the autotune cache are the `fusion`
# step's (tools/gpu_fusion.sh).
# Each command has its own timeout, so one that hangs cannot take the others'
# time. Reads gpu_check.sh's $build, $logs, $results_dir, $python, $dry_run,
# show() and run_tests(); paths are relative to the repository.
# shellcheck shell=bash
# shellcheck disable=SC2154  # build, logs, results_dir, python, dry_run are gpu_check.sh's

precision_tests=(test_channels_last_cuda test_channels_last_cuda_layers test_channels_last_cuda_concat
                 test_mixed_precision test_precision_staging test_loss_scaler_cuda test_convert test_kernel_map
                 test_sgd_working_copy test_loss_scale)

step_precision() {
  local rc=0
  [ "$dry_run" -eq 1 ] || mkdir -p "$results_dir"
  run_tests "${precision_tests[@]}" || rc=1
  if [ "$dry_run" -eq 0 ] && [ ! -x "$build/glassbox" ]; then
    echo "precision: $build/glassbox missing: no time or kernels"; rc=1
  else
    echo "---- glassbox time ResNet50 --precision bf16 (which layers compute in 16 bits)"
    show timeout 120 "$build/glassbox" time ResNet50 --device cuda --precision bf16 --batch 64 --steps 5 \
      || { echo "time bf16: FAILED"; rc=1; }
    echo "---- glassbox kernels ResNet50 --precision bf16"
    show timeout 120 "$build/glassbox" kernels ResNet50 --device cuda --precision bf16 --batch 64 \
      || { echo "kernels bf16: FAILED"; rc=1; }
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
