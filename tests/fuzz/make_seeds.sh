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
