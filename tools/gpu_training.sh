# tools/gpu_training.sh: step 7 of tools/gpu_check.sh, sourced by it (not run
# alone): real training and real data on the GPU (issue 7's GPU checks).
#   - LeNet on Fashion-MNIST, 10 epochs (the IDX files travel as the carried
#     folder third_party/fashion-mnist, which tools/stage_deps.sh makes): its
#     training log into bench/results/<gpu>/lenet-fashion-mnist.jsonl;
#   - ResNet-56 on a folder of 32x32 JPEGs made from those files, 2 epochs:
#     bench/results/<gpu>/resnet56-folder.jsonl;
#   - ResNet-50 train_step on a folder of photo-like 500x375 JPEGs made with
#     `glassbox make-folder --synthetic`, beside the synthetic batch
#     (bench_nets --data), into bench/results/<gpu>/resnet50-real-data.json.
# Each run replaces the files it writes. Reads gpu_check.sh's $build, $logs,
# $results_dir, $dry_run and bounded(); paths are relative to the repository.
# shellcheck shell=bash
# shellcheck disable=SC2154  # build, logs, results_dir, dry_run are gpu_check.sh's

step_train() {
  local rc=0 fashion="third_party/fashion-mnist" scratch="$logs/data"
  local real_data_file="$results_dir/resnet50-real-data.json"
  local lenet_log="$results_dir/lenet-fashion-mnist.jsonl" resnet56_log="$results_dir/resnet56-folder.jsonl"
  [ "$dry_run" -eq 1 ] || rm -rf "$scratch" "$real_data_file" "$lenet_log" "$resnet56_log"
  mkdir -p "$scratch"
  [ "$dry_run" -eq 1 ] || mkdir -p "$results_dir"
  if [ "$dry_run" -eq 0 ] && [ ! -x "$build/glassbox" ]; then
    echo "train: not built ($build/glassbox missing)"; return 1
  fi
  if [ -f "$fashion/train-images-idx3-ubyte.gz" ]; then
    echo "---- LeNet on Fashion-MNIST, 10 epochs"
    bounded 300 "$build/glassbox" train LeNet --data "fashion-mnist:$fashion" --epochs 10 --device cuda \
      --log "$lenet_log" || { echo "LeNet: FAILED"; rc=1; }
    echo "---- ResNet-56 on 32x32 JPEGs made from Fashion-MNIST, 2 epochs"
    bounded 120 "$build/glassbox" make-folder --from "fashion-mnist:$fashion" --size 32 --channels 3 --limit 10000 \
      --out "$scratch/fashion-mnist-32" || rc=1
    bounded 300 "$build/glassbox" train ResNet56 --data "folder:$scratch/fashion-mnist-32" --epochs 2 --device cuda \
      --log "$resnet56_log" || { echo "ResNet56: FAILED"; rc=1; }
  else
    echo "train: $fashion missing (run tools/stage_deps.sh and carry third_party/fashion-mnist): LeNet and"
    echo "       ResNet-56 not trained"; rc=1
  fi
  echo "---- ResNet-50 train_step, real JPEGs beside the synthetic batch"
  bounded 60 "$build/glassbox" make-folder --synthetic --out "$scratch/photos" --classes 10 --train 64 --val 4 || rc=1
  bounded 300 "$build/bench_nets" --device=cuda --net=ResNet50 --data="folder:$scratch/photos" \
    --benchmark_filter='ResNet50/train_step' --benchmark_out="$real_data_file" --benchmark_out_format=json \
    || { echo "ResNet50 real data: FAILED"; rc=1; }
  return "$rc"
}
