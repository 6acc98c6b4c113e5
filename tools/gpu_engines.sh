# tools/gpu_engines.sh: the `engines` step of tools/gpu_check.sh, sourced by it
# (not run alone): convolutions through cuDNN's graph API (Note [Engine
# configurations], layers/conv2d/engine_config.h), sized for 8 minutes from a
# prebuilt sm_90 build (the timeouts bound each command):
#   - the tests: engine configurations' notes and names, every Conv2d test
#     (the graph API's heuristic and measured choices against the legacy
#     default, writing and adding into dx; both APIs timed together), the
#     autotune cache, determinism under the measured search;
#   - ResNet50/train_step in bf16 at batch 256 interleaved with PyTorch eager
#     AMP in channels_last over 2 rounds, Glassbox's search over both APIs
#     and over the legacy algorithms alone
#     -> <gpu>/resnet50-bf16-256-{both-apis,legacy-api}.json;
#   - `glassbox time` of ResNet50 in bf16 at batch 256 with the measured
#     search over both APIs and over the graph API alone: each pass's engine
#     and knobs -> the step's log.
# The tests run at once; the figures follow. Each command has its own
# timeout, cut to what is left of the run's budget (bounded). Reads
# gpu_check.sh's $build, $logs, $results_dir, $python, $dry_run, bounded()
# and run_tests(); paths are relative to the repository.
# shellcheck shell=bash
# shellcheck disable=SC2154  # build, logs, results_dir, python, dry_run, autotune_cache are gpu_check.sh's

engines_tests=(test_engine_config test_conv2d test_autotune_cache test_determinism)

# engines_interleave auto|legacy: ResNet50/train_step in bf16 at batch 256
# with Glassbox's search over both APIs or the legacy one, interleaved with
# PyTorch eager AMP in channels_last over 2 rounds
# -> <gpu>/resnet50-bf16-256-{both-apis,legacy-api}.json.
engines_interleave() {
  local api=$1 name=resnet50-bf16-256-both-apis
  [ "$api" = legacy ] && name=resnet50-bf16-256-legacy-api
  echo "---- ResNet50/train_step bf16 at batch 256, --cudnn-api $api, interleaved with PyTorch (channels_last)"
  gpu_interleave 150 "$results_dir/$name.json" --rounds 2 --min-time 1 --modes train_step --batch 256 \
    --precision bf16 --glassbox-cudnn-api "$api" --layouts channels_last ResNet50 \
    || { echo "interleave ResNet50 bf16 --cudnn-api $api: FAILED"; return 1; }
}

step_engines() {
  local rc=0 api
  [ "$dry_run" -eq 1 ] || mkdir -p "$results_dir"
  run_tests "${engines_tests[@]}" || rc=1
  # Both APIs first; then each pass's engine and knobs (`time`, from the
  # search's cache); then the legacy algorithms alone. Each later command
  # gets what the budget has left, so the most wanted come first.
  engines_interleave auto || rc=1
  if [ "$dry_run" -eq 0 ] && [ ! -x "$build/glassbox" ]; then
    echo "engines: $build/glassbox missing: no time"; rc=1
  else
    for api in graph auto; do
      echo "---- glassbox time ResNet50 --precision bf16 --batch 256 --cudnn-search --cudnn-api $api"
      bounded 120 "$build/glassbox" time ResNet50 --device cuda --precision bf16 --batch 256 --steps 5 \
        --cudnn-search --cudnn-api "$api" --autotune-cache "$autotune_cache" \
        || { echo "time ResNet50 --cudnn-api $api: FAILED"; rc=1; }
    done
  fi
  engines_interleave legacy || rc=1
  return "$rc"
}
