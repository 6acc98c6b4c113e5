// tools/cli/train.cpp: `glassbox train NET --data SPEC`: real training to real
// accuracy, with a progress bar, a table of epochs, checkpoints and a log.
//
// The run's settings (data, batch, learning rate and schedule, momentum,
// weight decay, seed, ...) are saved with each checkpoint. `--resume DIR`
// takes them from there: a flag given again must agree with the
// checkpoint, and only --epochs may grow, so a resumed run is the run that
// stopped, continued (Note [One random stream per epoch] in train/trainer.h).
//
// Under mpirun (`mpirun -np 2 glassbox train LeNet --data fashion-mnist`)
// every rank trains its shard of each epoch with its gradients averaged over
// the ranks (train/trainer.h); rank 0 prints, logs and writes checkpoints.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <map>
#include <optional>

#include "data/data_spec.h"
#include "optim/data_parallel_job.h"
#include "train/trainer.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tools/cli/commands.h"
#include "tools/cli/data_parallel_args.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/text_data.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/progress.h"
#include "tools/cli/table.h"
#include "tools/cli/training_log.h"

namespace glassbox::cli {
namespace {

constexpr int kMaxEpochs = 1'000'000;

// A setting's value: the flag's if given, else the resumed checkpoint's,
// else (a new run) the default. A value typed or defaulted is saved in one
// canonical form: numbers as the shortest text that reads back as the same
// double (shortest_text), integers in decimal, a schedule as
// LrSchedule::str(). So "0.050" and "0.05", "064" and "64", "step:30:0.10"
// and "step:30:0.1" are the same setting, and a resumed run trains with the
// very value the first run did. A value taken from a checkpoint is kept as
// it is there, so that it agrees with the checkpoint it came from. A resumed
// run takes every setting it has no flag for from the checkpoint, which
// must hold it ("config.<key>" in its train file's metadata: every run saves
// them all), and a saved value that does not parse is the file's error
// (DataError naming it and the field), not the flag's.
class Settings {
 public:
  // `saved`: the checkpoint's settings, read from `file`; "" for a new run.
  Settings(const Args& args, std::map<std::string, std::string> saved, std::string file)
      : args_(args), saved_(std::move(saved)), file_(std::move(file)) {}

  std::string text(const std::string& key, const std::string& flag, const std::string& fallback) {
    if (args_.has(flag)) return config_[key] = args_.get(flag, "");
    if (file_.empty()) return config_[key] = fallback;
    const auto it = saved_.find(key);
    if (it == saved_.end()) {
      throw DataError(cat(file_, ": no \"config.", key, "\" in its __metadata__ (every setting of the run is saved "
                          "with it)"));
    }
    return config_[key] = it->second;
  }
  // The setting through `parse(what, text)`, which throws ConfigError naming
  // `what`: the flag for a flag's value or a default, the metadata field for
  // the checkpoint's.
  template <typename Parse>
  auto parsed(const std::string& key, const std::string& flag, const std::string& fallback, const Parse& parse) {
    const std::string value = text(key, flag, fallback);
    if (args_.has(flag) || file_.empty()) return parse(flag, value);
    try {
      return parse(cat("__metadata__ \"config.", key, "\""), value);
    } catch (const ConfigError& e) {
      throw DataError(cat(file_, ": ", e.what()));
    }
  }
  double number(const std::string& key, const std::string& flag, double fallback, double min, double max) {
    const double value = parsed(key, flag, shortest_text(fallback), [&](std::string_view what, std::string_view text) {
      return parse_number(what, text, min, max);
    });
    save_canonical(key, flag, shortest_text(value), [&](std::string_view saved) {
      return parse_number("", saved, min, max) == value;
    });
    return value;
  }
  int64_t integer(const std::string& key, const std::string& flag, int64_t fallback, int64_t min, int64_t max) {
    const int64_t value = parsed(key, flag, cat(fallback), [&](std::string_view what, std::string_view text) {
      return parse_int(what, text, min, max);
    });
    save_canonical(key, flag, cat(value),
                   [&](std::string_view saved) { return parse_int("", saved, min, max) == value; });
    return value;
  }
  // The text kept for a value typed or defaulted: `canonical` (see above);
  // or, on a resume, the checkpoint's own text where same(text) says it is
  // the same value, so that a checkpoint saved as "016" resumes with
  // --batch 16 (the resume compares the texts).
  template <typename Same>
  void save_canonical(const std::string& key, const std::string& flag, std::string canonical, const Same& same) {
    if (!args_.has(flag) && !file_.empty()) return;  // the checkpoint's text, as it is
    if (const auto it = saved_.find(key); !file_.empty() && it != saved_.end()) {
      try {
        if (same(it->second)) {
          config_[key] = it->second;
          return;
        }
      } catch (const ConfigError&) {
        // not a value of this setting: the resume names the difference
      }
    }
    config_[key] = std::move(canonical);
  }
  bool toggle(const std::string& key, const std::string& flag) {
    if (args_.has(flag)) {  // a switch: given is on
      config_[key] = "true";
      return true;
    }
    return parsed(key, flag, "false", [](std::string_view what, std::string_view text) {
      if (text != "true" && text != "false") throw ConfigError(cat(what, " must be true or false, got '", excerpt(text), "'"));
      return text == "true";
    });
  }
  const std::map<std::string, std::string>& config() const { return config_; }

 private:
  const Args& args_;
  std::map<std::string, std::string> saved_;
  std::string file_;
  std::map<std::string, std::string> config_;
};

}  // namespace

int run_train(const std::vector<std::string>& words) {
  const Args args("train", train_flags(), words);
  const NetSpec net = network_arg(args, "train");
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  const JobPlacement placement = job_placement();
  if (!choice.note.empty() && placement.rank == 0) std::fprintf(stderr, "glassbox: %s\n", choice.note.c_str());
  for (const std::string& note : compile_flag_notes(args.values(), choice.device)) {
    if (placement.rank == 0) std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  const Device device =
      device_for_rank(choice.device, args.get("--device", ""), placement, cuda_availability().device_count);
  const int threads = share_cpu_cores(device, placement);
  const bool speaks = placement.rank == 0;  // the other ranks train in silence

  const std::string resume_dir = args.get("--resume", "");
  std::map<std::string, std::string> saved;
  std::string saved_in;  // the train file the settings come from
  if (!resume_dir.empty()) {
    const TrainingState state = read_training_state(resume_dir);
    saved = state.config;
    saved_in = checkpoint_train_path(resume_dir, state.epoch);
    if (saved.contains("net") && saved.at("net") != net.name) {
      throw ConfigError(
          cat("--resume ", resume_dir, ": the checkpoint is of ", excerpt(saved.at("net")), ", not ", net.name));
    }
  }
  if (!args.has("--data") && resume_dir.empty()) {
    throw ConfigError(net.language_model
                          ? cat("train needs --data SPEC: ", net.name, " is a language model: text:PATH or fortunes")
                          : "train needs --data SPEC: fashion-mnist, fashion-mnist:DIR, mnist:DIR, folder:PATH or "
                            "synthetic[:N]");
  }
  if (net.language_model && placement.size > 1) {
    throw ConfigError(cat(net.name, " is a language model, which trains in one process for now: its streams are not "
                          "sharded over ranks (run without mpirun)"));
  }
  Settings settings(args, saved, saved_in);
  settings.text("net", "", net.name);
  const std::string data_spec = settings.text("data", "--data", "");
  const int batch = static_cast<int>(settings.integer("batch", "--batch", net.default_batch(device), 1, kMaxInt));
  TrainerOptions options;
  // Language models default to Zaremba et al.'s recipe (plain SGD at lr 1,
  // gradients clipped to norm 5), the image networks to momentum SGD.
  const bool lm = net.language_model;
  options.sgd.lr = static_cast<float>(settings.number("lr", "--lr", lm ? 1.0 : 0.05, 1e-12, 1e6));
  options.schedule = settings.parsed("schedule", "--schedule", lm ? "constant" : "cosine",
                                     [](std::string_view what, std::string_view text) {
                                       return parse_lr_schedule(text, what);
                                     });
  settings.save_canonical("schedule", "--schedule", options.schedule.str(), [&](std::string_view saved) {
    return parse_lr_schedule(saved, "--schedule") == options.schedule;
  });
  options.warmup_epochs = static_cast<int>(settings.integer("warmup_epochs", "--warmup-epochs", 0, 0, kMaxEpochs));
  options.sgd.momentum = static_cast<float>(settings.number("momentum", "--momentum", lm ? 0.0 : 0.9, 0.0, 1.0));
  options.sgd.nesterov = settings.toggle("nesterov", "--nesterov");
  options.sgd.weight_decay =
      static_cast<float>(settings.number("weight_decay", "--weight-decay", lm ? 0.0 : 5e-4, 0.0, 1e6));
  options.sgd.max_grad_norm = static_cast<float>(settings.number("clip", "--clip", lm ? 5.0 : 0.0, 0.0, 1e6));
  options.seed = static_cast<uint64_t>(settings.integer("seed", "--seed", 1, 0, INT64_MAX));
  options.steps_per_epoch = settings.integer("steps_per_epoch", "--steps-per-epoch", 0, 0, INT64_MAX);
  const Precision precision =
      settings.parsed("precision", "--precision", "fp32", [](std::string_view what, std::string_view text) {
        try {
          return parse_precision(text);
        } catch (const ConfigError& e) {
          throw ConfigError(cat(what, ": ", e.what()));
        }
      });
  if (precision == Precision::kFp16) {
    options.loss_scale.initial =
        static_cast<float>(settings.number("loss_scale_init", "--loss-scale-init", 65536.0, 1e-30, 1e30));
    options.loss_scale.growth_interval = static_cast<int>(
        settings.integer("loss_scale_growth_interval", "--loss-scale-growth-interval", 2000, 1, kMaxInt));
  } else {
    for (const char* flag : {"--loss-scale-init", "--loss-scale-growth-interval"}) {
      if (args.has(flag)) {
        throw ConfigError(cat(flag, " is for --precision fp16 (loss scaling); this run is ", flag_name_of(precision)));
      }
    }
  }
  options.epochs = static_cast<int>(settings.integer("epochs", "--epochs", 10, 1, kMaxEpochs));  // may grow on resume
  options.workers = args.int_in("--workers", 0, 0, 1024);
  options.check_numerics = args.has("--check-numerics");
  options.cuda_graph = args.has("--cuda-graph");
  options.checkpoint_dir = args.get("--checkpoint-dir", resume_dir);
  options.overwrite = args.has("--overwrite");
  options.strict_resume = args.has("--strict-resume");
  if (options.strict_resume && resume_dir.empty()) throw ConfigError("--strict-resume needs --resume DIR");
  if (options.overwrite && options.checkpoint_dir.empty()) throw ConfigError("--overwrite needs --checkpoint-dir DIR");
  options.config = settings.config();  // saved with each checkpoint
  // N ranks at batch B train as one process at N x B: another N is another run.
  options.config["ranks"] = cat(placement.size);
  // A checkpoint saves every setting in its safetensors header, JSON, which
  // holds UTF-8 text only; a Linux path is any bytes. Refused now, not at the
  // end of the first epoch.
  for (const auto& [key, value] : options.config) {
    const size_t at = first_non_utf8(value);
    if (options.checkpoint_dir.empty() || at == std::string::npos) continue;
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    throw ConfigError(cat(flag, " '", excerpt(value, 80), "' is not UTF-8 text from byte ", at,
                          " on; a checkpoint saves every setting as UTF-8 text: rename the path, or train without "
                          "--checkpoint-dir"));
  }
  const DataParallelArgs parallel = data_parallel_args(args);
  options.sync = parallel.sync;
  options.warn = [](const std::string& message) { std::fprintf(stderr, "glassbox: %s\n", message.c_str()); };
  if (options.warmup_epochs >= options.epochs) {
    throw ConfigError(cat("--warmup-epochs ", options.warmup_epochs, " leaves none of the ", options.epochs,
                          " epochs for the schedule; give fewer warm-up epochs"));
  }
  const int log_every = args.int_in("--log-every", 0, 1, kMaxInt);
  if (args.has("--log-every") && !args.has("--log")) throw ConfigError("--log-every needs --log FILE");
  std::optional<TrainingLog> log;
  if (args.has("--log") && speaks) {
    log.emplace(args.get("--log", ""), log_every, lm ? TrainingLog::Units::kTokens : TrainingLog::Units::kImages);
  }

  Context ctx = Context::on(device);
  const std::unique_ptr<Communicator> communicator = make_communicator(ctx, parallel.communicator);
  options.communicator = communicator.get();
  options.network = net.name;
  Graph graph = build_net(net, batch);
  // The compile flags (graph/compile_flags.h); the precision is the run's
  // setting, saved with its checkpoints, so a resume keeps it.
  CompileOptions compile = compile_options_from_flags(args.values());
  compile.precision = precision;
  // --check-numerics reads every value after the step: none may share memory.
  compile.memory_reuse = options.check_numerics ? MemoryReuse::kOff : MemoryReuse::kOn;
  graph.compile(ctx, compile);
  std::optional<Trainer> trainer_storage;
  std::string data_line = data_spec;
  if (lm) {
    TextData text = open_text_data(ctx, data_spec, net, batch);
    data_line = cat(text.corpus->describe(), "\n      windows of ", net.sample[0], " tokens x ", batch,
                    " streams: ", text.train->describe());
    options.vocabulary = text.corpus->vocabulary_digest();  // Note [A language model's vocabulary]
    trainer_storage.emplace(ctx, net, graph, std::move(text.train), std::move(text.validation), std::move(text.test),
                            options);
  } else {
    refuse_text_for_images(data_spec, net);
    const DataOptions data_options{
        .on_bad_sample = parse_on_bad_sample("--on-bad-sample", args.get("--on-bad-sample", "skip"))};
    trainer_storage.emplace(ctx, net, graph, open_data(data_spec, net.sample, net.classes, data_options), options);
  }
  Trainer& trainer = *trainer_storage;
  if (!resume_dir.empty()) trainer.resume(resume_dir);

  const RuntimeInfo info = runtime_info(ctx);
  if (!speaks) {
    trainer.run();
    return 0;
  }
  std::printf("%s on %s (%s), batch %d, %s\n", net.name.c_str(), info.device.c_str(), info.device_name.c_str(), batch,
              info.precision.c_str());
  std::printf("data: %s\n", data_line.c_str());
  if (placement.size > 1) {
    std::printf("data-parallel: %d ranks (%s), batch %d per rank, %d in all; %s gradient buckets of %s MiB; "
                "%d CPU thread%s per rank\n",
                placement.size, std::string(communicator->backend()).c_str(), batch, batch * placement.size,
                options.sync.overlap ? "overlapped" : "not overlapped",
                cat(static_cast<double>(options.sync.bucket_bytes) / (1 << 20)).c_str(), threads,
                threads == 1 ? "" : "s");
  }
  std::printf("SGD: lr %s, %s schedule%s, momentum %s%s, weight decay %s%s; seed %llu\n",
              options.config.at("lr").c_str(), options.schedule.str().c_str(),
              options.warmup_epochs
                  ? cat(" after ", options.warmup_epochs, " warm-up epoch", options.warmup_epochs == 1 ? "" : "s").c_str()
                  : "",
              options.config.at("momentum").c_str(), options.sgd.nesterov ? " (Nesterov)" : "",
              options.config.at("weight_decay").c_str(),
              options.sgd.max_grad_norm > 0 ? cat(", gradients clipped to norm ", options.config.at("clip")).c_str() : "",
              static_cast<unsigned long long>(options.seed));
  std::printf("%d epoch%s of %lld step%s%s%s\n\n", options.epochs, options.epochs == 1 ? "" : "s",
              static_cast<long long>(trainer.steps_per_epoch()), trainer.steps_per_epoch() == 1 ? "" : "s",
              resume_dir.empty() ? "" : cat(", resumed after epoch ", trainer.state().epoch).c_str(),
              options.checkpoint_dir.empty() ? "" : cat("; checkpoints in ", options.checkpoint_dir).c_str());
  if (log) {
    std::map<std::string, std::string> start = options.config;
    start["device"] = info.device;
    log->start(start);
  }

  Progress progress(stdout, output_is_terminal(stdout, placement), lm ? Progress::Units::kTokens : Progress::Units::kImages,
                    placement.size);
  progress.header();
  std::optional<EpochReport> last;
  trainer.run({.on_step =
                   [&](const StepReport& step) {
                     progress.step(step);
                     if (log) log->step(step);
                   },
               .on_epoch =
                   [&](const EpochReport& epoch) {
                     progress.epoch(epoch);
                     if (log) log->epoch(epoch);
                     last = epoch;
                   }});
  if (last && last->test && !last->test->has_accuracy) {
    std::printf("\ntest perplexity after epoch %d: %s (%s tokens)\n", last->epoch,
                fixed(last->test->perplexity(), 2).c_str(), grouped(last->test->samples).c_str());
  } else if (last && last->test) {
    // Unreadable images are not scored (eval's words): counted apart, each was named on stderr.
    const int64_t unreadable = last->test->unreadable;
    std::printf("\ntest accuracy after epoch %d: %s%% (%s of %s)%s\n", last->epoch,
                fixed(100.0 * last->test->accuracy(), 2).c_str(), grouped(last->test->correct).c_str(),
                grouped(last->test->samples).c_str(),
                unreadable > 0 ? cat(", ", grouped(unreadable), " unreadable, not scored").c_str() : "");
  }
  if (const ReplayCounts* replay = trainer.replay_counts()) {  // --cuda-graph (docs/cuda_graphs.md)
    std::printf("CUDA graph: %lld steps replayed, %lld captured (%zu nodes each), %lld eager\n",
                static_cast<long long>(replay->replays), static_cast<long long>(replay->captures), replay->nodes,
                static_cast<long long>(replay->eager));
  }
  return 0;
}

}  // namespace glassbox::cli
