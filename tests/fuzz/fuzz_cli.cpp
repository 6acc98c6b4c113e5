// tests/fuzz/fuzz_cli.cpp: the glassbox tool's command line, as far as it
// goes before anything is allocated or run. Input: NUL-separated words
// (tests/fuzz/fuzz_input.h), the first one the verb, as in tools/cli/main.cpp.
//
//   summary: Args with summary's flags, the network, --batch through int_in,
//            then build_net at that batch and every cost `summary` prints
//            (per-layer MACs and parameters, Graph::macs, parameter_count),
//            so an overflow in shape or cost arithmetic is a UBSan report.
//   time:    Args with time's flags, the network, --precision, --device
//            (choose_device), --batch/--steps/--warmup through int_in with
//            the ranges of tools/cli/time.cpp, and build_net; not compile(),
//            which allocates the batch for real.
//            Its data-parallel flags (--bucket-mb, --comm-timeout) too.
//   max-batch: Args with its flags, the network, --device, --precision,
//            --memory-limit (parse_bytes) and --max; not the search.
//   scale:   Args with its flags, the network, the job (--gpus, --link,
//            --bandwidth-gbps, --latency-us, --bucket-mb), then the scaling
//            model on the network's gradient sizes with made-up layer times
//            (measuring runs real steps): for every device count, the step is
//            at least the compute, exposed time at most the all-reduce time,
//            and the efficiency in (0, 1].
//   trace:   Args with its flags, the network, --precision, --device,
//            --batch/--warmup/--steps with the ranges of tools/cli/trace.cpp, and
//            build_net; not the run.
//   kernels: Args with its flags, the network, --precision, --device,
//            --batch/--warmup with the ranges of tools/cli/kernels.cpp, and
//            build_net; not the run (which needs a GPU and CUPTI).
//   sweep:   Args with its flags, the network, --device, --precision,
//            --memory-limit, --steps/--warmup, and --batches (the "..."
//            runs): every accepted list grows strictly; not the runs.
//
//   train:   Args with its flags, the network, --device, then train_settings
//            (tools/cli/train_settings.h) for a new run. An accepted run whose
//            settings a checkpoint can hold (UTF-8) is resumed from them
//            twice, with no flag but --resume and with its own flags again:
//            both have its settings, the same texts and the same values.
//
//   report:  Args with its flags and the one file it takes (reading the
//            file and the page are tests/fuzz/fuzz_report.cpp's).
//
// Invariants of an accepted command line: the parameter count does not depend
// on the batch, and the forward MACs are exactly batch x those of one image.
#include <cmath>
#include <map>

#include "nets/registry.h"
#include "tensor/context.h"
#include "tensor/parse.h"
#include "tests/fuzz/fuzz_input.h"
#include "tools/cli/batch_list.h"
#include "tools/cli/data_parallel_args.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/train_settings.h"

using namespace glassbox;

namespace {

constexpr int kMaxSteps = 1'000'000;  // tools/cli/time.cpp

struct OneImage {
  int64_t params = 0;
  int64_t macs = 0;
};

// Each network's costs at batch 1, built once.
const OneImage& one_image(const NetSpec& net) {
  static std::map<std::string, OneImage> cache;
  auto it = cache.find(net.name);
  if (it == cache.end()) {
    const Graph graph = build_net(net, 1);
    it = cache.emplace(net.name, OneImage{graph.parameter_count(), graph.macs()}).first;
  }
  return it->second;
}

// What `summary` computes from the graph, and the invariants above.
void check_costs(const NetSpec& net, int batch) {
  const Graph graph = build_net(net, batch);
  int64_t layer_params = 0;
  for (const Node& node : graph.nodes()) {
    if (node.is_input()) continue;
    for (const ParamSpec& spec : node.layer->param_specs()) layer_params += spec.shape.numel();
    FUZZ_CHECK(node.layer->macs() >= 0);
    (void)node.layer->describe();  // printed by summary; empty for layers without options (ReLU)
    FUZZ_CHECK(!node.shape.str().empty());
  }
  const int64_t params = graph.parameter_count();
  const int64_t macs = graph.macs();
  const OneImage& one = one_image(net);
  FUZZ_CHECK(params == layer_params && params == one.params);
  FUZZ_CHECK(macs % batch == 0 && macs / batch == one.macs);
}

void fuzz_summary(const std::vector<std::string>& words) {
  const cli::Args args("summary", cli::summary_flags(), words);
  const NetSpec& net = cli::network_arg(args, "summary");
  const int batch = args.int_in("--batch", 1, 1, kMaxInt);
  FUZZ_CHECK(batch >= 1);
  check_costs(net, batch);
}

void fuzz_time(const std::vector<std::string>& words) {
  const cli::Args args("time", cli::time_flags(), words);
  const NetSpec& net = cli::network_arg(args, "time");
  parse_precision(args.get("--precision", "fp32"));
  const Device device = choose_device(args.get("--device", ""), "--device").device;
  FUZZ_CHECK(!device.is_cuda());  // a CPU-only build
  const int batch = args.int_in("--batch", net.default_batch(device), 1, kMaxInt);
  const int steps = args.int_in("--steps", 5, 1, kMaxSteps);
  const int warmup = args.int_in("--warmup", 2, 0, kMaxSteps);
  FUZZ_CHECK(batch >= 1 && steps >= 1 && warmup >= 0);
  const cli::DataParallelArgs parallel = cli::data_parallel_args(args);
  FUZZ_CHECK(parallel.sync.bucket_bytes >= 1 && parallel.communicator.timeout_seconds > 0.0);
  check_costs(net, batch);
}

void fuzz_scale(const std::vector<std::string>& words) {
  const cli::Args args("scale", cli::scale_flags(), words);
  const NetSpec& net = cli::network_arg(args, "scale");
  const cli::ScaleJobArgs job = cli::scale_job_args(args);
  FUZZ_CHECK(!job.device_counts.empty() && job.link.bandwidth_gbps > 0.0 && job.bucket_bytes >= 1);
  MeasuredStep step{.forward_ms = 1.0, .optimizer_ms = 0.5};
  const Graph graph = build_net(net, 1);
  for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend(); ++it) {
    if (it->is_input()) continue;
    size_t bytes = 0;
    for (const ParamSpec& spec : it->layer->param_specs()) bytes += static_cast<size_t>(spec.shape.numel()) * 4;
    step.backward.push_back({it->name, 2.0, bytes});
  }
  for (int devices : job.device_counts) {
    for (bool overlap : {true, false}) {
      const ScaledStep s = scale_step(step, devices, job.link, job.bucket_bytes, overlap);
      FUZZ_CHECK(s.step_ms >= s.compute_ms && s.exposed_ms <= s.allreduce_ms + 1e-9);
      FUZZ_CHECK(s.efficiency > 0.0 && s.efficiency <= 1.0);
      FUZZ_CHECK(devices > 1 || s.allreduce_ms == 0.0);
    }
  }
}

// max-batch's flags, parsed as run_max_batch parses them (the search itself
// runs training steps: too slow for a fuzzer).
void fuzz_max_batch(const std::vector<std::string>& words) {
  const cli::Args args("max-batch", cli::max_batch_flags(), words);
  cli::network_arg(args, "max-batch");
  FUZZ_CHECK(!choose_device(args.get("--device", ""), "--device").device.is_cuda());
  parse_precision(args.get("--precision", "fp32"));
  if (args.has("--memory-limit")) FUZZ_CHECK(parse_bytes("--memory-limit", args.get("--memory-limit", "")) >= 1);
  FUZZ_CHECK(args.int_in("--max", 65536, 1, kMaxInt) >= 1);
}

void fuzz_trace(const std::vector<std::string>& words) {
  const cli::Args args("trace", cli::trace_flags(), words);
  const NetSpec& net = cli::network_arg(args, "trace");
  parse_precision(args.get("--precision", "fp32"));
  const Device device = choose_device(args.get("--device", ""), "--device").device;
  FUZZ_CHECK(!device.is_cuda());
  const int batch = args.int_in("--batch", net.default_batch(device), 1, kMaxInt);
  FUZZ_CHECK(args.int_in("--warmup", 2, 0, kMaxSteps) >= 0);
  FUZZ_CHECK(args.int_in("--steps", 3, 1, kMaxSteps) >= 1);
  FUZZ_CHECK(build_net(net, batch).batch() == batch);
}

void fuzz_kernels(const std::vector<std::string>& words) {
  const cli::Args args("kernels", cli::kernels_flags(), words);
  const NetSpec& net = cli::network_arg(args, "kernels");
  parse_precision(args.get("--precision", "fp32"));
  const Device device = choose_device(args.get("--device", ""), "--device").device;
  FUZZ_CHECK(!device.is_cuda());
  const int batch = args.int_in("--batch", net.default_batch(device), 1, kMaxInt);
  FUZZ_CHECK(args.int_in("--warmup", 2, 0, kMaxSteps) >= 0);
  FUZZ_CHECK(build_net(net, batch).batch() == batch);
}

void fuzz_sweep(const std::vector<std::string>& words) {
  const cli::Args args("sweep", cli::sweep_flags(), words);
  cli::network_arg(args, "sweep");
  FUZZ_CHECK(!choose_device(args.get("--device", ""), "--device").device.is_cuda());
  parse_precision(args.get("--precision", "fp32"));
  if (args.has("--memory-limit")) FUZZ_CHECK(parse_bytes("--memory-limit", args.get("--memory-limit", "")) >= 1);
  FUZZ_CHECK(args.int_in("--steps", 3, 1, kMaxSteps) >= 1);
  FUZZ_CHECK(args.int_in("--warmup", 2, 0, kMaxSteps) >= 0);
  const std::vector<int> batches = cli::parse_batch_list("--batches", args.get("--batches", "1,2,4,...,256"));
  FUZZ_CHECK(!batches.empty() && batches.front() >= 1);
  for (size_t i = 1; i < batches.size(); ++i) FUZZ_CHECK(batches[i] > batches[i - 1]);
}

// What a resume must keep of a run: every saved text and every value.
void check_same_run(const cli::TrainSettings& first, const cli::TrainSettings& resumed) {
  const TrainerOptions& a = first.options;
  const TrainerOptions& b = resumed.options;
  FUZZ_CHECK(a.config == b.config);
  FUZZ_CHECK(first.data_spec == resumed.data_spec && first.batch == resumed.batch &&
             first.precision == resumed.precision);
  FUZZ_CHECK(a.sgd.lr == b.sgd.lr && a.sgd.momentum == b.sgd.momentum && a.sgd.nesterov == b.sgd.nesterov &&
             a.sgd.weight_decay == b.sgd.weight_decay && a.sgd.max_grad_norm == b.sgd.max_grad_norm);
  FUZZ_CHECK(a.schedule == b.schedule && a.warmup_epochs == b.warmup_epochs && a.epochs == b.epochs);
  FUZZ_CHECK(a.seed == b.seed && a.steps_per_epoch == b.steps_per_epoch);
  FUZZ_CHECK(a.loss_scale.initial == b.loss_scale.initial &&
             a.loss_scale.growth_interval == b.loss_scale.growth_interval);
}

// Every setting is saved in the one text its value has (Settings in
// tools/cli/train_settings.cpp), so that "--batch 16" resumes a run started
// with "--batch 016": numbers as their shortest text, integers in decimal.
void check_canonical(const std::map<std::string, std::string>& config, bool fp16) {
  std::vector<std::string> numbers = {"lr", "momentum", "weight_decay", "clip"};
  std::vector<std::string> integers = {"batch", "warmup_epochs", "seed", "steps_per_epoch", "epochs", "ranks"};
  if (fp16) {
    numbers.push_back("loss_scale_init");
    integers.push_back("loss_scale_growth_interval");
  }
  FUZZ_CHECK(config.size() == numbers.size() + integers.size() + 5);  // and net, data, schedule, nesterov, precision
  for (const std::string& key : numbers) {
    const std::string& text = config.at(key);
    FUZZ_CHECK(shortest_text(parse_number(key, text, -1e300, 1e300)) == text);
  }
  for (const std::string& key : integers) {
    const std::string& text = config.at(key);
    FUZZ_CHECK(cat(parse_int(key, text, 0, INT64_MAX)) == text);
  }
  FUZZ_CHECK(parse_lr_schedule(config.at("schedule"), "schedule").str() == config.at("schedule"));
  FUZZ_CHECK(config.at("nesterov") == "true" || config.at("nesterov") == "false");
  FUZZ_CHECK(flag_name_of(parse_precision(config.at("precision"))) == config.at("precision"));
}

void fuzz_train(const std::vector<std::string>& words) {
  const cli::Args args("train", cli::train_flags(), words);
  const NetSpec& net = cli::network_arg(args, "train");
  const Device device = choose_device(args.get("--device", ""), "--device").device;
  FUZZ_CHECK(!device.is_cuda());
  if (args.has("--resume")) return;  // run_train reads the checkpoint's settings first: not made up here
  const cli::TrainSettings first = cli::train_settings(args, net, device, /*ranks=*/1, {});
  const TrainerOptions& options = first.options;
  FUZZ_CHECK(first.batch >= 1 && options.epochs > options.warmup_epochs && options.warmup_epochs >= 0);
  FUZZ_CHECK(options.sgd.lr > 0.0f && std::isfinite(options.sgd.lr));
  FUZZ_CHECK(options.sgd.momentum >= 0.0f && options.sgd.momentum <= 1.0f);
  FUZZ_CHECK(first.precision != Precision::kFp16 || options.loss_scale.initial > 0.0f);
  FUZZ_CHECK(options.config.at("net") == net.name && options.config.at("ranks") == "1");
  check_canonical(options.config, first.precision == Precision::kFp16);
  for (const auto& [key, value] : options.config) {
    if (first_non_utf8(value) != std::string::npos) {
      FUZZ_CHECK(options.checkpoint_dir.empty());  // refused with one
      return;
    }
  }
  const cli::SavedSettings saved{.config = options.config, .file = "run/epoch-0001.train.safetensors"};
  const cli::Args bare("train", cli::train_flags(), {net.name, "--resume", "run"});
  check_same_run(first, cli::train_settings(bare, net, device, 1, saved));
  std::vector<std::string> again = words;
  again.insert(again.end(), {"--resume", "run"});
  check_same_run(first, cli::train_settings(cli::Args("train", cli::train_flags(), again), net, device, 1, saved));
}

// report's command line, as run_report parses it, up to reading the file.
void fuzz_report(const std::vector<std::string>& words) {
  const cli::Args args("report", cli::report_flags(), words);
  if (args.positionals().size() != 1) return;  // run_report's ConfigError
  FUZZ_CHECK(!args.has("--out") || !args.get("--out", "").empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> words = fuzz::split_words(data, size);
  if (words.empty()) return 0;  // main() prints its usage
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  fuzz::expect_errors([&] {
    if (words[0] == "summary") fuzz_summary(rest);
    if (words[0] == "time") fuzz_time(rest);
    if (words[0] == "max-batch") fuzz_max_batch(rest);
    if (words[0] == "scale") fuzz_scale(rest);
    if (words[0] == "trace") fuzz_trace(rest);
    if (words[0] == "sweep") fuzz_sweep(rest);
    if (words[0] == "kernels") fuzz_kernels(rest);
    if (words[0] == "report") fuzz_report(rest);
    if (words[0] == "train") fuzz_train(rest);
  });
  return 0;
}
