#!/usr/bin/env bash
# tests/fuzz/make_seeds.sh: writes the seed corpora under tests/fuzz/corpus/,
# one file per command line, words joined by NUL (tests/fuzz/fuzz_input.h).
# The committed seeds are its output; run it again after editing a list.
# A seed is a handful of valid and invalid inputs: libFuzzer grows its own
# corpus from them (in a temporary folder, never here; see run_fuzzers.sh).
set -euo pipefail
mkdir -p "$(dirname "$0")/corpus"
cd "$(dirname "$0")/corpus"

# seed TARGET NAME WORD...: corpus/TARGET/NAME holds the words joined by NUL.
seed() {
  local target=$1 name=$2
  shift 2
  mkdir -p "$target"
  local first=1
  : > "$target/$name"
  for word in "$@"; do
    [ $first -eq 1 ] || printf '\0' >> "$target/$name"
    printf '%s' "$word" >> "$target/$name"
    first=0
  done
}

# fuzz_parse: one value, as typed after a flag.
seed fuzz_parse int_8 8
seed fuzz_parse int_negative -3
seed fuzz_parse int_max_int 2147483647
seed fuzz_parse int_past_int64 9223372036854775808
seed fuzz_parse int_leading_zeros 007
seed fuzz_parse int_trailing_junk 8abc
seed fuzz_parse int_leading_space " 8"
seed fuzz_parse empty ""
seed fuzz_parse number_exponent 5e-4
seed fuzz_parse number_decimal 0.01
seed fuzz_parse number_inf inf
seed fuzz_parse number_nan nan
seed fuzz_parse number_huge 1e400
seed fuzz_parse device_cpu cpu
seed fuzz_parse device_cuda cuda
seed fuzz_parse device_cuda_index cuda:1
seed fuzz_parse device_cuda_negative cuda:-1
seed fuzz_parse device_cuda_empty cuda:
seed fuzz_parse precision_tf32 tf32
seed fuzz_parse precision_fp16 fp16
seed fuzz_parse net_lower vgg16
seed fuzz_parse net_unknown VGG17

# fuzz_mlp_spec: one network name, an MLP spec or not.
seed fuzz_mlp_spec fcn5_sizes MLP:784,4096,2048,1024,10
seed fuzz_mlp_spec lower_case mlp:784,10
seed fuzz_mlp_spec leading_zeros MLP:0784,010
seed fuzz_mlp_spec limits MLP:65536,1,2
seed fuzz_mlp_spec most_layers MLP:3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,2
seed fuzz_mlp_spec too_many_layers MLP:3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,2
seed fuzz_mlp_spec empty_list MLP:
seed fuzz_mlp_spec one_size MLP:784
seed fuzz_mlp_spec trailing_comma MLP:784,10,
seed fuzz_mlp_spec double_comma MLP:784,,10
seed fuzz_mlp_spec space "MLP:784, 10"
seed fuzz_mlp_spec zero MLP:784,0,10
seed fuzz_mlp_spec negative MLP:784,-5,10
seed fuzz_mlp_spec past_limit MLP:784,65537,10
seed fuzz_mlp_spec one_class MLP:784,1
seed fuzz_mlp_spec not_a_number MLP:784,x,10
seed fuzz_mlp_spec no_prefix VGG16

# fuzz_cli: the verb, then its words.
seed fuzz_cli summary_vgg16 summary VGG16
seed fuzz_cli summary_batch summary AlexNet --batch 64
seed fuzz_cli summary_batch_equals summary lenet --batch=8
seed fuzz_cli summary_batch_max_int summary VGG19 --batch 2147483647
seed fuzz_cli summary_batch_zero summary VGG11 --batch 0
seed fuzz_cli summary_batch_empty summary VGG13 --batch ""
seed fuzz_cli summary_no_net summary
seed fuzz_cli summary_two_nets summary VGG16 LeNet
seed fuzz_cli summary_unknown_flag summary VGG16 --bogus
seed fuzz_cli time_all_flags time LeNet --device cpu --batch 8 --steps 2 --warmup 1 --precision tf32
seed fuzz_cli time_search time AlexNet --cudnn-search --device=cuda:0
seed fuzz_cli time_switch_value time LeNet --cudnn-search=1
seed fuzz_cli time_deterministic time VGG11 --deterministic --cudnn-search --device cuda
seed fuzz_cli time_missing_value time LeNet --steps
seed fuzz_cli time_twice time LeNet --batch 8 --batch=9
seed fuzz_cli time_bad_precision time LeNet --precision fp16
seed fuzz_cli unknown_verb sumary VGG16
seed fuzz_cli summary_mlp summary MLP:784,2048,10 --batch 3
seed fuzz_cli time_mlp time mlp:100,7
seed fuzz_cli kernels_lenet kernels LeNet --batch 8 --warmup 1 --precision tf32 --json x.json
seed fuzz_cli kernels_cpu kernels VGG11 --device cpu
seed fuzz_cli report_out report time.json --out page.html
seed fuzz_cli train_lenet train LeNet --data synthetic:256 --batch 016 --epochs 3 --lr 0.050 --device cpu
seed fuzz_cli train_schedule train ResNet56 --data folder:d --schedule step:30:0.10 --warmup-epochs 2 --nesterov
seed fuzz_cli train_fp16 train LeNet --data fashion-mnist --precision fp16 --loss-scale-init 1e3 --loss-scale-growth-interval 7
seed fuzz_cli train_lm train LSTMSmall --data fortunes --clip 0 --momentum 1 --seed 9223372036854775807
seed fuzz_cli train_checkpoints train AlexNet --data synthetic --checkpoint-dir run --overwrite --log l --log-every 2
seed fuzz_cli train_no_data train VGG11 --weight-decay 1e6 --steps-per-epoch 5

# fuzz_report: the JSON files of tests/data/report/ (the trace cut to its first
# events) and a few broken ones, copied into corpus/fuzz_report/ by hand.

# fuzz_bench_flags: bench_nets' arguments.
seed fuzz_bench_flags test_cli_run --device=cpu '--benchmark_filter=^LeNet/forward/' --benchmark_min_time=0.01 --benchmark_format=json
seed fuzz_bench_flags out_file --benchmark_out=r.json --benchmark_out_format=json
seed fuzz_bench_flags out_empty --benchmark_out=
seed fuzz_bench_flags own_flags --batch=8 --precision=tf32 --cudnn-search
seed fuzz_bench_flags batch_negative --batch=-3
seed fuzz_bench_flags batch_twice --batch=8 --batch=9
seed fuzz_bench_flags batch_no_value --batch
seed fuzz_bench_flags device_gpu --device=gpu
seed fuzz_bench_flags switch_value --cudnn-search=yes
seed fuzz_bench_flags deterministic --deterministic --precision=tf32 --deterministic=1
seed fuzz_bench_flags google_flags --benchmark_repetitions=3 --benchmark_time_unit=ms --benchmark_min_warmup_time=1e9
seed fuzz_bench_flags bad_format --benchmark_format=csv
seed fuzz_bench_flags positional VGG16
seed fuzz_bench_flags help --help
seed fuzz_bench_flags unknown --bogus
seed fuzz_bench_flags net_mlp --net=MLP:784,2048,10 --benchmark_filter=forward
seed fuzz_bench_flags net_unknown --net=VGG17

# fuzz_replica_check: what another rank sends at start-up (optim/replica_check.h):
# name and value pairs, each string as LENGTH:TEXT; one word, no NUL.
replica() {  # replica NAME PROPERTY... : the properties' strings, length-prefixed
  local name=$1 text="" part
  shift
  for part in "$@"; do text+="${#part}:$part"; done
  seed fuzz_replica_check "$name" "$text"
}
replica_base=("the network" "MLP:8,4,3" "the batch per rank" 2 "the parameter count" 51 "the seed" 1
              "the parameter values (hash)" 1234567890)
replica description "${replica_base[@]}" --data synthetic:64 --lr 0.05
replica other_data "${replica_base[@]}" --data synthetic:128 --lr 0.05
replica missing_setting "${replica_base[@]}" --data synthetic:64
seed fuzz_replica_check scores_not_a_description "256 25 0x1.8p+7"
seed fuzz_replica_check length_past_the_end "99:the network"
seed fuzz_replica_check empty

# ---- Files, not command lines: fuzz_idx and fuzz_jpeg -------------------------
# Made with python3 (IDX, gzip) and the glassbox tool's make-folder (JPEG), so
# this part needs a built tool: GLASSBOX=path/to/glassbox (default
# build-cpu/glassbox, from the repository root). Each seed fits in the
# targets' -max_len (tests/fuzz/<target>.max_len).
glassbox=${GLASSBOX:-../../../build-cpu/glassbox}
if [ ! -x "$glassbox" ]; then
  echo "make_seeds: no glassbox tool at $glassbox (set GLASSBOX=...): fuzz_idx and fuzz_jpeg seeds not written" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/glassbox-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p fuzz_idx fuzz_jpeg

# fuzz_idx: IDX files of the sizes the target parses (28x28, 1x1, 2x3), plain
# and gzip-compressed, and broken ones. Also a tiny MNIST-like set of 10
# images for make-folder below.
python3 - "$work" <<'PY'
import gzip, os, random, struct, sys
work = sys.argv[1]
random.seed(1)
def idx(magic, dims, data):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)
def images(count, rows, cols):
    return idx(0x803, [count, rows, cols], [random.randrange(256) for _ in range(count * rows * cols)])
def put(name, data):
    # mtime=0: the same bytes on every run
    with open(os.path.join("fuzz_idx", name), "wb") as f:
        f.write(data)
put("images_28x28", images(2, 28, 28))
put("images_1x1", images(5, 1, 1))
put("images_2x3", images(3, 2, 3))
put("images_2x3.gz", gzip.compress(images(3, 2, 3), mtime=0))
put("images_28x28.gz", gzip.compress(images(4, 28, 28), mtime=0))
put("labels", idx(0x801, [6], [0, 1, 2, 9, 5, 3]))
put("labels.gz", gzip.compress(idx(0x801, [4], [1, 2, 3, 4]), mtime=0))
put("labels_two_members.gz", gzip.compress(idx(0x801, [2], [1, 2])[:5], mtime=0) + gzip.compress(idx(0x801, [2], [1, 2])[5:], mtime=0))
put("label_12", idx(0x801, [3], [1, 12, 2]))
put("images_truncated", images(3, 2, 3)[:20])
put("images_wrong_rank", idx(0x802, [3, 2], [0] * 6))
put("float_type", idx(0xd03, [1, 1, 1], [0, 0, 0, 0]))
put("gzip_truncated", gzip.compress(images(3, 2, 3), mtime=0)[:-6])
for d in ("train", "t10k"):
    with open(os.path.join(work, d + "-images-idx3-ubyte"), "wb") as f:
        f.write(images(10, 28, 28))
    with open(os.path.join(work, d + "-labels-idx1-ubyte"), "wb") as f:
        f.write(idx(0x801, [10], list(range(10))))
PY

# fuzz_jpeg: small baseline JPEGs, grey and RGB (4:2:0), square and not, and
# broken ones: cut short, a bad marker, not a JPEG.
"$glassbox" make-folder --from "mnist:$work" --size 8 --quality 50 --limit 10 --out "$work/grey" > /dev/null
"$glassbox" make-folder --from "mnist:$work" --size 12 --channels 3 --quality 40 --limit 10 --out "$work/rgb" > /dev/null
"$glassbox" make-folder --synthetic --classes 1 --train 1 --val 1 --width 24 --height 16 --quality 30 --out "$work/wide" > /dev/null
"$glassbox" make-folder --synthetic --classes 1 --train 1 --val 1 --width 9 --height 40 --quality 20 --out "$work/tall" > /dev/null
cp "$work/grey/train/3/3.jpg" fuzz_jpeg/grey_8x8.jpg
cp "$work/rgb/train/7/7.jpg" fuzz_jpeg/rgb_12x12.jpg
cp "$work/wide/train/class_0/0.jpg" fuzz_jpeg/rgb_24x16.jpg
cp "$work/tall/val/class_0/0.jpg" fuzz_jpeg/rgb_9x40.jpg
head -c 300 fuzz_jpeg/rgb_24x16.jpg > fuzz_jpeg/cut_short.jpg
{ head -c 2 fuzz_jpeg/grey_8x8.jpg; printf '\xff\x01garbage'; tail -c +3 fuzz_jpeg/grey_8x8.jpg; } > fuzz_jpeg/bad_marker.jpg
# grey_8x8 with one Huffman code count changed, its scan naming table 7
# (undefined) and its end cut: TurboJPEG returns that error with the warning
# code and decodes nothing (found by fuzz_image_folder; test_jpeg_and_resize
# reads the copy in tests/data/jpeg/).
python3 - fuzz_jpeg/grey_8x8.jpg fuzz_jpeg/undefined_huffman_table.jpg <<'PY'
import sys
jpeg = bytearray(open(sys.argv[1], "rb").read())
jpeg[199] += 1
sos = jpeg.find(b"\xff\xda")
jpeg[sos + 6:sos + 6] = b"\x7a"
open(sys.argv[2], "wb").write(jpeg[:-1])
PY
cp fuzz_jpeg/undefined_huffman_table.jpg ../../data/jpeg/
printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR' > fuzz_jpeg/png_header.jpg
for f in fuzz_idx/* fuzz_jpeg/*; do
  [ "$(wc -c < "$f")" -le 4096 ] || { echo "make_seeds: $f is over 4096 bytes" >&2; exit 1; }
done
