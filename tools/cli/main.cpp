// tools/cli/main.cpp: the glassbox command-line tool.
//
//   glassbox summary VGG16              per-layer shapes, parameters, FLOPs
//   glassbox time VGG16 --batch 8       per-layer forward/backward times
//   glassbox trace VGG16 --out F.json   one training step as a Chrome trace
//   glassbox kernels VGG16              the GPU kernels of each layer's passes (CUPTI)
//   glassbox sweep ResNet50 --batches 1,2,4,...,256   speed and memory against batch
//   glassbox max-batch VGG16            the largest batch that fits, by trying
//   glassbox train LeNet --data fashion-mnist   real training, checkpoints, logs
//   glassbox eval LeNet --weights F --data fashion-mnist   a trained network's accuracy
//   glassbox make-folder --synthetic --out DIR   a folder of JPEGs (docs/data.md)
//   glassbox scale ResNet50 --gpus 1,2,4,8       data-parallel scaling, predicted (docs/scaling.md)
//   glassbox report time.json                    an HTML page of charts (docs/report.md)
//   glassbox corpus fortunes                     a language model's text: splits, vocabulary, a baseline
//
// Usage errors (unknown verb, network, flag, a bad value) print one line
// naming the problem and the valid choices and exit 2; failures while running
// exit 1 (tools/entry_point.h).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <omp.h>

#include "nets/registry.h"
#include "optim/communicator.h"
#include "tensor/parse.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/entry_point.h"

namespace {

void print_usage() {
  std::printf(
      "usage: glassbox <command> <network> [flags]\n\n"
      "commands:\n"
      "  summary NET [--batch N] [--memory [--device D]]\n"
      "                               per-layer table: output shape, parameters, forward GFLOPs;\n"
      "                               --memory: one training step's memory by category\n"
      "  time NET [--batch N] [--device cpu|cuda|cuda:N] [--steps N] [--warmup N]\n"
      "           [--precision fp32|tf32|bf16|fp16] [--cudnn-search] [--cudnn-api auto|legacy|graph]\n"
      "           [--cpu-conv auto|glassbox|onednn] [--layout auto|nchw|nhwc] [--no-fusion] [--no-winograd]\n"
      "           [--deterministic] [--json FILE] [--no-nvtx]\n"
      "                               per layer and pass (forward, backward-data, backward-weights):\n"
      "                               time, FLOPs, bytes, rates and %% of the roofline, the cuDNN\n"
      "                               algorithms, and the sum of the layers against the measured step;\n"
      "                               --deterministic: only cuDNN algorithms that give the same bits\n"
      "                               on every run (the CPU path always does: there it changes nothing)\n"
      "  trace NET [--out FILE] [--batch N] [--device D] [--warmup N] [--steps N] [--precision P] [--no-nvtx]\n"
      "                               one training step as a Chrome trace (Perfetto, chrome://tracing):\n"
      "                               each layer's forward, backward-data, backward-weights, the optimizer\n"
      "  kernels NET [--batch N] [--device cuda|cuda:N] [--warmup N] [--precision P] [--json FILE]\n"
      "                               the GPU kernels each layer's forward, backward-data, backward-weights\n"
      "                               and the optimizer ran in one training step, with their share of the\n"
      "                               step's GPU time, per kernel family; needs a GPU (CUPTI; docs/kernels.md)\n"
      "  sweep NET [--batches 1,2,4,...,256] [--out FILE] [--device D] [--steps N] [--warmup N]\n"
      "            [--memory-limit SIZE] [--precision P]\n"
      "                               train-step speed and memory per batch until memory runs out,\n"
      "                               as JSON for `glassbox report`\n"
      "  max-batch NET [--device D] [--memory-limit SIZE] [--precision P] [--max N]\n"
      "                               the largest batch whose training step fits, by trying\n"
      "  train NET --data SPEC [--epochs N] [--batch N] [--lr X] [--schedule S] [--checkpoint-dir DIR]\n"
      "            [--resume DIR] [--log FILE] ...   (glassbox train --help lists every flag)\n"
      "                               trains on real data (fashion-mnist[:DIR], mnist:DIR, folder:PATH,\n"
      "                               synthetic[:N]; a language model's: text:PATH or fortunes): progress,\n"
      "                               per-epoch train and test accuracy, time split into waiting for data\n"
      "                               and computing\n"
      "  eval NET --weights FILE (--data SPEC [--on-bad-sample skip|stop] | --input FILE [--logits OUT])\n"
      "                               a model file's test accuracy, or its logits for given images;\n"
      "                               unreadable images are skipped, named and counted, or stop the run\n"
      "  make-folder --from fashion-mnist|fashion-mnist:DIR|mnist:DIR --out DIR [--size N] [--channels 1|3]\n"
      "              [--limit N] [--quality Q]\n"
      "  make-folder --synthetic --out DIR [--classes K] [--train N] [--val N] [--width W] [--height H]\n"
      "              [--quality Q] [--seed S]\n"
      "                               a folder of JPEGs, DIR/{train,val}/<class>/*.jpg, for --data folder:DIR\n"
      "  scale NET [--gpus 1,2,4,8] [--link nvlink|infiniband|custom] [--bandwidth-gbps X] [--latency-us X]\n"
      "            [--bucket-mb X] [--batch N] [--device D]\n"
      "                               data-parallel step time and efficiency per device count, predicted\n"
      "                               from this machine's measured layer times (docs/scaling.md)\n"
      "  report FILE.json [--out FILE.html]\n"
      "                               an HTML page with charts (per-layer time, roofline, batch sweep)\n"
      "                               from what time --json, sweep or trace wrote (docs/report.md)\n"
      "  corpus text:PATH|fortunes [--vocabulary N] [--out FILE.safetensors]\n"
      "                               a language model's text as Glassbox reads it: the splits, the\n"
      "                               vocabulary and the unigram baseline's perplexity (docs/data.md)\n\n"
      "every command: --threads N   OpenMP threads of every CPU kernel (default: OMP_NUM_THREADS, else one\n"
      "                             per core)\n\n"
      "networks: %s,\n"
      "          or MLP:<features>,<hidden>,...,<classes> (fully connected, e.g. MLP:784,2048,10)\n",
      glassbox::net_names().c_str());
}

// `glassbox VERB --help`: the verb's flags, as it declares them.
const std::vector<glassbox::cli::FlagSpec>* flags_of(const std::string& verb) {
  using namespace glassbox::cli;
  if (verb == "summary") return &summary_flags();
  if (verb == "time") return &time_flags();
  if (verb == "max-batch") return &max_batch_flags();
  if (verb == "train") return &train_flags();
  if (verb == "eval") return &eval_flags();
  if (verb == "make-folder") return &make_folder_flags();
  if (verb == "scale") return &scale_flags();
  if (verb == "trace") return &trace_flags();
  if (verb == "sweep") return &sweep_flags();
  if (verb == "kernels") return &kernels_flags();
  if (verb == "report") return &report_flags();
  if (verb == "corpus") return &corpus_flags();
  return nullptr;
}

void print_flags(const std::string& verb, const std::vector<glassbox::cli::FlagSpec>& flags) {
  const char* operand = verb == "make-folder"  ? ""
                        : verb == "report" ? " <file.json>"
                        : verb == "corpus" ? " <text:PATH|fortunes>"
                                           : " <network>";
  std::printf("usage: glassbox %s%s [flags]\n\nflags:\n", verb.c_str(), operand);
  for (const glassbox::cli::FlagSpec& flag : flags) {
    const std::string left = flag.name + (flag.value_name.empty() ? "" : " " + flag.value_name);
    std::printf("  %-22s %s\n", left.c_str(), flag.help.c_str());
  }
}

// Note [One thread count for every kernel]: every CPU kernel sizes its work
// by omp_get_max_threads() (convolutions when they are compiled, the
// elementwise loops, linear blocks, pooling, batch norm and the optimizer at
// each call), and Eigen's products run inside those teams
// (Note [Eigen's own threads]), so setting OpenMP's count once, before any
// context or graph exists, is what makes them all follow it. OMP_NUM_THREADS
// does the same from the environment; --threads, given, wins.
// Takes `--threads N` (or `--threads=N`) out of `words`, wherever it is, for
// every command; as every flag, once.
void apply_thread_flag(std::vector<std::string>& words) {
  std::optional<std::string> value;
  for (size_t i = 0; i < words.size();) {
    const bool spaced = words[i] == "--threads", joined = words[i].starts_with("--threads=");
    if (!spaced && !joined) {
      ++i;
      continue;
    }
    std::string given;
    if (joined) {
      given = words[i].substr(std::string_view("--threads=").size());
    } else if (i + 1 < words.size()) {
      given = words[i + 1];
    } else {
      throw glassbox::ConfigError("--threads needs a value: the CPU threads, e.g. --threads 2");
    }
    if (value) {
      throw glassbox::ConfigError(glassbox::cat("--threads is given twice ('", *value, "' and '", given,
                                                "'); give it once"));
    }
    value = given;
    const auto at = words.begin() + static_cast<std::ptrdiff_t>(i);
    words.erase(at, at + (joined ? 1 : 2));
  }
  if (value) omp_set_num_threads(static_cast<int>(glassbox::parse_int("--threads", *value, 1, 1024)));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace glassbox;
  return run_program("glassbox", [&] {
    const std::vector<std::string> words(argv + 1, argv + argc);
    // Under mpirun every rank gets the same words: rank 0 alone prints help.
    // Help prints whatever the environment holds: a placement that cannot be
    // read is a job's error, not help's.
    bool speaks = true;
    try {
      speaks = job_placement().rank == 0;
    } catch (const Error&) {
    }
    if (words.empty() || words[0] == "--help" || words[0] == "-h" || words[0] == "help") {
      if (speaks) print_usage();
      return words.empty() ? kExitUsage : 0;
    }
    const std::string& verb = words[0];
    std::vector<std::string> rest(words.begin() + 1, words.end());
    // Help first: whatever else the words hold, even a flag without its value.
    if (const auto* flags = flags_of(verb);
        flags != nullptr && std::find(rest.begin(), rest.end(), "--help") != rest.end()) {
      if (speaks) print_flags(verb, *flags);
      return 0;
    }
    apply_thread_flag(rest);
    // time and train are the data-parallel verbs; under mpirun every rank
    // would run any other whole, racing to print and to write one file.
    if (const JobPlacement placement = job_placement();
        placement.size > 1 && flags_of(verb) != nullptr && verb != "time" && verb != "train") {
      throw ConfigError(cat(verb, " runs in one process; under mpirun (", placement.size, " ranks) each would run it ",
                            "whole. Run it without mpirun (time and train run data-parallel)"));
    }
    if (verb == "summary") return cli::run_summary(rest);
    if (verb == "time") return cli::run_time(rest);
    if (verb == "max-batch") return cli::run_max_batch(rest);
    if (verb == "train") return cli::run_train(rest);
    if (verb == "eval") return cli::run_eval(rest);
    if (verb == "make-folder") return cli::run_make_folder(rest);
    if (verb == "scale") return cli::run_scale(rest);
    if (verb == "trace") return cli::run_trace(rest);
    if (verb == "sweep") return cli::run_sweep(rest);
    if (verb == "kernels") return cli::run_kernels(rest);
    if (verb == "report") return cli::run_report(rest);
    if (verb == "corpus") return cli::run_corpus(rest);
    throw ConfigError(cat("unknown command '", verb,
                          "'; valid: summary, time, trace, kernels, sweep, max-batch, train, eval, make-folder, scale, "
                          "report, corpus"));
  });
}
