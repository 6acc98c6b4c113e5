// tools/cli/flag_specs.h: the flags each verb declares, in one place, so that
// the verb and its fuzz target (tests/fuzz/fuzz_cli.cpp) parse the same ones.
#pragma once

#include <vector>

#include "layers/layer.h"
#include "tools/cli/args.h"

namespace glassbox::cli {

// The flags of a verb that compiles a graph to run it: its own, then the
// compile flags every program shares (graph/compile_flags.h).
inline std::vector<FlagSpec> with_compile_flags(std::vector<FlagSpec> flags) {
  const std::vector<FlagSpec>& shared = compile_flags();
  flags.insert(flags.end(), shared.begin(), shared.end());
  return flags;
}

// The flags of a verb that runs data-parallel under mpirun (time, train),
// parsed by tools/cli/data_parallel_args.h.
inline std::vector<FlagSpec> with_data_parallel_flags(std::vector<FlagSpec> flags) {
  flags.push_back({"--bucket-mb", "X", "under mpirun: gradient bucket size in MiB (default 25; optim/gradient_sync.h)"});
  flags.push_back({"--no-overlap", "", "under mpirun: all-reduce the gradients after backward instead of during it"});
  flags.push_back(
      {"--comm-timeout", "S",
       "under mpirun: seconds a rank waits for the others before the job stops (default 300); train's waits "
       "include rank 0's checkpoint saves"});
  return flags;
}

// The compile flags are for --memory: the table itself is the network's.
inline const std::vector<FlagSpec>& summary_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags({
      {"--batch", "N", "batch size of the input (default 1)"},
      {"--memory", "", "run one training step and print its memory by category"},
      {"--device", "D", "with --memory: cpu, cuda or cuda:N (default: the GPU when one works)"}});
  return flags;
}

// Note [Threads on a shared machine] (tensor/machine_load.h).
inline constexpr const char* kFixedThreadsHelp =
    "on the CPU, run the threads asked for (--threads, else one per core) even where other processes keep cores "
    "busy; without it, one thread fewer for each core's worth of their work";

inline const std::vector<FlagSpec>& time_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags(with_data_parallel_flags({
      {"--batch", "N", "batch size (default: the network's default for the device)"},
      {"--device", "D", "cpu, cuda or cuda:N (default: the GPU when one works)"},
      {"--steps", "N", "timed steps, averaged (default 5)"},
      {"--warmup", "N", "untimed steps first (default 2)"},
      {"--inference", "",
       "time the forward of a graph compiled for inference (running statistics, no dropout, nothing kept for a "
       "backward), as bench_nets' inference mode, instead of forward + backward"},
      {"--json", "FILE",
       "also write the per-layer, per-pass times, FLOPs, bytes, peaks and memory as JSON (glassbox.time v1)"},
      {"--cuda-graph", "",
       "on a GPU, also time the same steps replayed as one CUDA graph launch each (per-layer times stay eager's)"},
      {"--fixed-threads", "", kFixedThreadsHelp}}));
  return flags;
}

inline const std::vector<FlagSpec>& trace_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags({
      {"--out", "FILE", "where to write the trace (default NET.trace.json)"},
      {"--batch", "N", "batch size (default: the network's default for the device)"},
      {"--device", "D", "cpu, cuda or cuda:N (default: the GPU when one works)"},
      {"--warmup", "N", "untimed train steps first (default 2)"},
      {"--steps", "N", "then steps with spans and without, N of each, interleaved: what recording costs (default 3)"},
      {"--fixed-threads", "", kFixedThreadsHelp}});
  return flags;
}

inline const std::vector<FlagSpec>& kernels_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags({
      {"--batch", "N", "batch size (default: the network's default for the device)"},
      {"--device", "D", "cuda or cuda:N (default: the first GPU); kernel records come from CUPTI, so not cpu"},
      {"--warmup", "N", "untimed train steps first (default 2); one more runs under CUPTI before the recorded one"},
      {"--json", "FILE", "also write the map as JSON: every span's kernels, the families, the unattributed"}});
  return flags;
}

inline const std::vector<FlagSpec>& sweep_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags({
      {"--batches", "LIST", "batch sizes, growing: 1,2,4,...,256 (the default; '...' continues the ratio) or 1,3,8"},
      {"--out", "FILE", "where to write the JSON (default NET.sweep.json)"},
      {"--device", "D", "cpu, cuda or cuda:N (default: the GPU when one works)"},
      {"--steps", "N", "timed train steps per batch, averaged (default 3)"},
      {"--warmup", "N", "untimed train steps first, per batch (default 2)"},
      {"--memory-limit", "SIZE", "pretend the device has only this much (512MiB, 8GiB, ...)"},
      {"--fixed-threads", "", kFixedThreadsHelp}});
  return flags;
}

inline const std::vector<FlagSpec>& max_batch_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags({
      {"--device", "D", "cpu, cuda or cuda:N (default: the GPU when one works)"},
      {"--memory-limit", "SIZE", "pretend the device has only this much (512MiB, 8GiB, ...)"},
      {"--max", "N", "the largest batch to try (default 65536)"}});
  return flags;
}

inline const std::vector<FlagSpec>& train_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags(with_data_parallel_flags({
      {"--data", "SPEC", "fashion-mnist, fashion-mnist:DIR, mnist:DIR, folder:PATH or synthetic[:N] (data/data_spec.h);"
                         " a language model's: text:PATH or fortunes (data/text_corpus.h)"},
      {"--epochs", "N", "epochs to train (default 10); with --resume, the total to reach"},
      {"--batch", "N", "batch size (default: the network's default for the device)"},
      {"--lr", "X", "base learning rate (default 0.05; a language model's 1)"},
      {"--schedule", "S", "learning rate schedule: cosine (default; a language model's: constant), constant or "
                          "step:EPOCHS:GAMMA"},
      {"--warmup-epochs", "N", "linear warm-up over the first N epochs (default 0)"},
      {"--momentum", "X", "SGD momentum (default 0.9; a language model's 0)"},
      {"--nesterov", "", "Nesterov momentum"},
      {"--weight-decay", "X", "L2 weight decay (default 5e-4; a language model's 0)"},
      {"--clip", "X", "clip the gradients' global L2 norm to X (default: off; a language model's 5)"},
      {"--seed", "N", "data order, augmentation and dropout (default 1); the weights' seed is fixed"},
      {"--loss-scale-init", "X", "with --precision fp16: the first step's loss scale (default 65536, as GradScaler)"},
      {"--loss-scale-growth-interval", "N", "with --precision fp16: clean steps in a row before the loss scale "
                                            "doubles (default 2000)"},
      {"--workers", "N", "data loader threads (default: one per core)"},
      {"--on-bad-sample", "skip|stop", "an image of the data that cannot be read or decoded: skip it, named on "
                                       "stderr and counted in each epoch's row (default), or stop the run"},
      {"--steps-per-epoch", "N", "at most N steps per epoch (default: the whole training set)"},
      {"--device", "D", "cpu, cuda or cuda:N (default: the GPU when one works)"},
      {"--checkpoint-dir", "DIR", "write a checkpoint after every epoch (train/checkpoint.h)"},
      {"--resume", "DIR", "continue from DIR's latest checkpoint (and keep writing checkpoints there)"},
      {"--overwrite", "", "a new run into a --checkpoint-dir that holds another run's checkpoints: remove them first "
                          "(without it, such a directory is refused)"},
      {"--strict-resume", "", "with --resume: refuse, instead of warning, where the threads, build, compile flags "
                              "or device differ from the checkpoint's run (a resume is bit for bit only where they are "
                              "the same)"},
      {"--log", "FILE", "append one JSON line per epoch (and per --log-every steps) to FILE"},
      {"--log-every", "N", "with --log, also a line every N steps"},
      {"--check-numerics", "", "after every step, check every output and gradient and name the first that is "
                                "not finite (slow: for finding where a run breaks)"},
      {"--cuda-graph", "", "on a GPU, replay each step after the first as one CUDA graph launch (the same bits; "
                           "not under mpirun)"}}));
  return flags;
}

// The compile flags time the step as it would run (--precision bf16: fp32
// gradients all-reduced, 16-bit layers timed).
inline const std::vector<FlagSpec>& scale_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags({
      {"--gpus", "LIST", "device counts to predict, e.g. 1,2,4,8 (default 1,2,4,8,16,32,64)"},
      {"--link", "L", "nvlink (NVLink 4, default), infiniband (NDR) or custom (give --bandwidth-gbps)"},
      {"--bandwidth-gbps", "X", "the link's bandwidth per direction in GB/s (replaces the link's default)"},
      {"--latency-us", "X", "the link's latency per message in microseconds (replaces the link's default)"},
      {"--bucket-mb", "X", "gradient bucket size in MiB (default 25, as optim/gradient_sync.h)"},
      {"--batch", "N", "batch per device (default: the network's default for the device)"},
      {"--device", "D", "where to measure the step: cpu, cuda or cuda:N (default: the GPU when one works)"},
      {"--steps", "N", "timed steps to average (default 3)"},
      {"--warmup", "N", "untimed steps first (default 1)"}});
  return flags;
}

inline const std::vector<FlagSpec>& eval_flags() {
  static const std::vector<FlagSpec> flags = with_compile_flags({
      {"--weights", "FILE", "a model file: a Glassbox checkpoint, or a PyTorch state_dict saved with safetensors"},
      {"--data", "SPEC", "score the test set of SPEC (as for train); a language model: the perplexity of a text's test split"},
      {"--input", "FILE", "run on the images of a safetensors file (an F32 tensor \"images\", (N, C, H, W))"},
      {"--logits", "FILE", "with --input: write the logits, an F32 tensor \"logits\" (N, classes), to a safetensors file"},
      {"--batch", "N", "with --data: batch size (default: the network's default for the device)"},
      {"--workers", "N", "with --data: data loader threads (default: one per core)"},
      {"--on-bad-sample", "skip|stop", "with --data: an image that cannot be read or decoded: leave it out, named and "
                                       "counted apart from the scored images (default), or stop"},
      {"--device", "D", "cpu, cuda or cuda:N (default: the GPU when one works)"}});
  return flags;
}

inline const std::vector<FlagSpec>& make_folder_flags() {
  static const std::vector<FlagSpec> flags = {
      {"--from", "SPEC", "fashion-mnist, fashion-mnist:DIR or mnist:DIR: write that set's images"},
      {"--synthetic", "", "write random photo-like images instead (for timing decodes)"},
      {"--out", "DIR", "the folder to make (new or empty): DIR/train/<class>/, DIR/val/<class>/"},
      {"--size", "N", "with --from: images resized to N x N (default 28)"},
      {"--channels", "C", "with --from: 1 (grey, default) or 3 (RGB)"},
      {"--limit", "N", "with --from: N images per split (at least 10): the first N/10 of each class"},
      {"--quality", "Q", "JPEG quality 1..100 (default 95 with --from, 90 with --synthetic)"},
      {"--classes", "K", "with --synthetic: classes (default 10)"},
      {"--train", "N", "with --synthetic: training images per class (default 50)"},
      {"--val", "N", "with --synthetic: validation images per class (default 10)"},
      {"--width", "W", "with --synthetic: image width (default 500)"},
      {"--height", "H", "with --synthetic: image height (default 375)"},
      {"--seed", "S", "with --synthetic: random seed (default 1)"}};
  return flags;
}

inline const std::vector<FlagSpec>& corpus_flags() {
  static const std::vector<FlagSpec> flags = {
      {"--vocabulary", "N", "words kept, <unk> and <eos> included (default 10000, the language models' output)"},
      {"--out", "FILE", "also write the three splits' token ids (I32 train, valid, test) and the vocabulary as "
                        "safetensors, for the PyTorch peer (bench/peers/lstm_lm.py)"}};
  return flags;
}

inline const std::vector<FlagSpec>& report_flags() {
  static const std::vector<FlagSpec> flags = {
      {"--out", "FILE", "the HTML file to write (default: the input's name with .html for .json)"}};
  return flags;
}

}  // namespace glassbox::cli
