# tools/gpu_precision.sh: the `precision` step of tools/gpu_check.sh, sourced
# by it (not run alone): bf16 and fp16 mixed precision on the GPU
# (docs/precision.md), in under 8 minutes from a prebuilt sm_90 build:
#   - the tests of the 16-bit path: every layer in bf16 and fp16 on the GPU
#     against the CPU's fp32, the staging rules, the conversion kernels, the
#     update that writes the working copy, loss scaling on the device;
#   - the tests of channels-last values on the GPU: the layout plan, KRSC
#     filters, layout bridges, NHWC batch norm, pooling, concat and flatten;
#   - ResNet50/train_step interleaved with PyTorch (2 rounds): bf16 (NHWC)
#     at batches 64 and 256 against PyTorch AMP channels_last, tf32 at batch
#     64 with Glassbox's values NHWC and NCHW
#     -> bench/results/<gpu>/resnet50-{bf16,tf32-nhwc,tf32-nchw}.json;
#   - `glassbox kernels` of ResNet50 in bf16 at batch 256: which kernels ran,
#     which layers compute in 16 bits, which are staged, which passes are fused
#     -> bench/results/<gpu>/resnet50-bf16-256-kernels.{json,md} (the .md by
#     tools/kernels_summary.py, the tables docs/one-step.md is written from);
#   - `glassbox time` of ResNet50 in bf16 -> the step's log.
# Fusion, cuBLASLt, CUDA graphs and the autotune cache are the `fusion`
# step's (tools/gpu_fusion.sh).
# The tests run at once; the figures follow, the first. Each command
# has its own timeout, cut to what is left of the run's budget (bounded), so
# one that hangs cannot take the others' time. Reads gpu_check.sh's $build,
# $logs, $results_dir, $python, $dry_run, bounded() and run_tests(); paths
# are relative to the repository.
# shellcheck shell=bash
# shellcheck disable=SC2154  # build, logs, results_dir, python, dry_run, autotune_cache are gpu_check.sh's

# LeNetLearnsFashionMnistAsInFp32 trains on the CPU for a minute: CI's to run.
precision_tests=(test_channels_last_cuda test_channels_last_cuda_layers test_channels_last_cuda_concat
                 test_mixed_precision@-MixedPrecision.LeNetLearnsFashionMnistAsInFp32 test_precision_staging
                 test_loss_scaler_cuda test_convert test_kernel_map test_sgd_working_copy test_loss_scale)

# precision_interleave PRECISION LAYOUT: ResNet50/train_step with Glassbox's
# values in LAYOUT, interleaved with PyTorch over 2 rounds: bf16 at batches
# 64 and 256 against AMP in channels_last, tf32 at batch 64 against
# PyTorch's better layout -> <gpu>/resnet50-bf16.json, resnet50-tf32-LAYOUT.json.
precision_interleave() {
  local precision=$1 layout=$2 batches=64 name=resnet50-$1-$2 limit=120 layouts=nchw,channels_last
  [ "$precision" = bf16 ] && batches=64,256 name=resnet50-bf16 limit=150 layouts=channels_last
  echo "---- ResNet50/train_step $precision ($layout values) at batch $batches, interleaved with PyTorch ($layouts)"
  gpu_interleave "$limit" "$results_dir/$name.json" --rounds 2 --min-time 1 --modes train_step --batch "$batches" \
    --precision "$precision" --glassbox-layout "$layout" --layouts "$layouts" ResNet50 \
    || { echo "interleave $precision $layout: FAILED"; return 1; }
}

step_precision() {
  local rc=0
  [ "$dry_run" -eq 1 ] || mkdir -p "$results_dir"
  run_tests "${precision_tests[@]}" || rc=1
  # The figures next, the first: bf16 at batches 64 and 256 against
  # PyTorch AMP in its layout for it (channels_last); the kernels of the bf16
  # step; then tf32 at batch 64 with Glassbox's values NHWC and NCHW against
  # PyTorch's better layout; then `time`. Each later command gets what the
  # budget has left, so the most wanted come first.
  local have_cli=1
  if [ "$dry_run" -eq 0 ] && [ ! -x "$build/glassbox" ]; then
    echo "precision: $build/glassbox missing: no kernels or time"; rc=1; have_cli=0
  fi
  precision_interleave bf16 auto || rc=1
  if [ "$have_cli" -eq 1 ]; then
    # The step docs/one-step.md walks: batch 256, the search the benchmarks
    # ran (their autotune cache), its map kept as JSON and as Markdown tables.
    local kernels_json="$results_dir/resnet50-bf16-256-kernels.json"
    echo "---- glassbox kernels ResNet50 --precision bf16 --batch 256 -> $kernels_json and .md"
    [ "$dry_run" -eq 1 ] || rm -f "$kernels_json" "${kernels_json%.json}.md"
    if bounded 150 "$build/glassbox" kernels ResNet50 --device cuda --precision bf16 --batch 256 \
         --cudnn-search --autotune-cache "$autotune_cache" --json "$kernels_json"; then
      bounded 60 "$python" tools/kernels_summary.py "$kernels_json" --layers '^layer2\.0\.' --top 15 \
        --out "${kernels_json%.json}.md" || { echo "kernels_summary: FAILED"; rc=1; }
    else
      echo "kernels bf16: FAILED"; rc=1
    fi
  fi
  precision_interleave tf32 nhwc || rc=1
  precision_interleave tf32 nchw || rc=1
  if [ "$have_cli" -eq 1 ]; then
    echo "---- glassbox time ResNet50 --precision bf16 (which layers compute in 16 bits)"
    bounded 120 "$build/glassbox" time ResNet50 --device cuda --precision bf16 --batch 64 --steps 5 \
      --cudnn-search --autotune-cache "$autotune_cache" || { echo "time bf16: FAILED"; rc=1; }
  fi
  return "$rc"
}
