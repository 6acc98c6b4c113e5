// tools/cli/train_settings.cpp: train's settings from its flags and, on a
// resume, from the checkpoint (train_settings.h).
#include "tools/cli/train_settings.h"

#include <algorithm>

#include "tensor/parse.h"
#include "tools/cli/flag_specs.h"

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

TrainSettings train_settings(const Args& args, const NetSpec& net, Device device, int ranks,
                             const SavedSettings& saved) {
  TrainSettings run;
  run.resume_dir = args.get("--resume", "");
  if (!run.resume_dir.empty() && saved.config.contains("net") && saved.config.at("net") != net.name) {
    throw ConfigError(cat("--resume ", run.resume_dir, ": the checkpoint is of ", excerpt(saved.config.at("net")),
                          ", not ", net.name));
  }
  if (!args.has("--data") && run.resume_dir.empty()) {
    throw ConfigError(net.language_model
                          ? cat("train needs --data SPEC: ", net.name, " is a language model: text:PATH or fortunes")
                          : "train needs --data SPEC: fashion-mnist, fashion-mnist:DIR, mnist:DIR, folder:PATH or "
                            "synthetic[:N]");
  }
  if (net.language_model && ranks > 1) {
    throw ConfigError(cat(net.name, " is a language model, which trains in one process for now: its streams are not "
                          "sharded over ranks (run without mpirun)"));
  }
  Settings settings(args, saved.config, run.resume_dir.empty() ? std::string() : saved.file);
  settings.text("net", "", net.name);
  run.data_spec = settings.text("data", "--data", "");
  if (!args.has("--data") && !run.resume_dir.empty()) {
    run.data_spec_source = cat(saved.file, ": __metadata__ \"config.data\"");
  }
  run.batch = static_cast<int>(settings.integer("batch", "--batch", net.default_batch(device), 1, kMaxInt));
  TrainerOptions& options = run.options;
  // Language models default to Zaremba et al.'s recipe (plain SGD at lr 1,
  // gradients clipped to norm 5), the image networks to momentum SGD.
  const bool lm = net.language_model;
  options.sgd.lr = static_cast<float>(settings.number("lr", "--lr", lm ? 1.0 : 0.05, 1e-12, 1e6));
  options.schedule = settings.parsed("schedule", "--schedule", lm ? "constant" : "cosine",
                                     [](std::string_view what, std::string_view text) {
                                       return parse_lr_schedule(text, what);
                                     });
  settings.save_canonical("schedule", "--schedule", options.schedule.str(), [&](std::string_view text) {
    return parse_lr_schedule(text, "--schedule") == options.schedule;
  });
  options.warmup_epochs = static_cast<int>(settings.integer("warmup_epochs", "--warmup-epochs", 0, 0, kMaxEpochs));
  options.sgd.momentum = static_cast<float>(settings.number("momentum", "--momentum", lm ? 0.0 : 0.9, 0.0, 1.0));
  options.sgd.nesterov = settings.toggle("nesterov", "--nesterov");
  options.sgd.weight_decay =
      static_cast<float>(settings.number("weight_decay", "--weight-decay", lm ? 0.0 : 5e-4, 0.0, 1e6));
  options.sgd.max_grad_norm = static_cast<float>(settings.number("clip", "--clip", lm ? 5.0 : 0.0, 0.0, 1e6));
  options.seed = static_cast<uint64_t>(settings.integer("seed", "--seed", 1, 0, INT64_MAX));
  options.steps_per_epoch = settings.integer("steps_per_epoch", "--steps-per-epoch", 0, 0, INT64_MAX);
  run.precision = settings.parsed("precision", "--precision", "fp32", [](std::string_view what, std::string_view text) {
    try {
      return parse_precision(text);
    } catch (const ConfigError& e) {
      throw ConfigError(cat(what, ": ", e.what()));
    }
  });
  // The precision decides which settings a run has (fp16's loss scaling): a
  // resume in another one is refused as that, not as a setting missing from
  // the checkpoint.
  if (const auto it = saved.config.find("precision");
      !run.resume_dir.empty() && args.has("--precision") && it != saved.config.end() &&
      it->second != settings.config().at("precision")) {
    throw ConfigError(cat("--resume ", run.resume_dir, ": this run's precision is '", args.get("--precision", ""),
                          "', the checkpoint's is '", excerpt(it->second, 120), "'; resume with the same settings"));
  }
  if (run.precision == Precision::kFp16) {
    options.loss_scale.initial =
        static_cast<float>(settings.number("loss_scale_init", "--loss-scale-init", 65536.0, 1e-30, 1e30));
    options.loss_scale.growth_interval = static_cast<int>(
        settings.integer("loss_scale_growth_interval", "--loss-scale-growth-interval", 2000, 1, kMaxInt));
  } else {
    for (const char* flag : {"--loss-scale-init", "--loss-scale-growth-interval"}) {
      if (args.has(flag)) {
        throw ConfigError(cat(flag, " is for --precision fp16 (loss scaling); this run is ", flag_name_of(run.precision)));
      }
    }
  }
  options.epochs = static_cast<int>(settings.integer("epochs", "--epochs", 10, 1, kMaxEpochs));  // may grow on resume
  options.workers = args.int_in("--workers", 0, 0, 1024);
  options.check_numerics = args.has("--check-numerics");
  options.cuda_graph = args.has("--cuda-graph");
  options.checkpoint_dir = args.get("--checkpoint-dir", run.resume_dir);
  options.overwrite = args.has("--overwrite");
  options.strict_resume = args.has("--strict-resume");
  if (options.strict_resume && run.resume_dir.empty()) throw ConfigError("--strict-resume needs --resume DIR");
  if (options.overwrite && options.checkpoint_dir.empty()) throw ConfigError("--overwrite needs --checkpoint-dir DIR");
  options.config = settings.config();  // saved with each checkpoint
  // N ranks at batch B train as one process at N x B: another N is another run.
  options.config["ranks"] = cat(ranks);
  // A saved setting this run does not have (another version's, or one added
  // by hand) would be dropped in silence, and the run would not continue as
  // it started: it is the file's error.
  for (const auto& [key, value] : saved.config) {
    if (run.resume_dir.empty() || options.config.contains(key)) continue;
    throw DataError(cat(saved.file, ": __metadata__ \"config.", excerpt(key, 80), "\" = '", excerpt(value, 80),
                        "' is not a setting of this ", flag_name_of(run.precision), " run of glassbox train, which "
                        "cannot continue it as it started"));
  }
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
  run.parallel = data_parallel_args(args);
  options.sync = run.parallel.sync;
  if (options.warmup_epochs >= options.epochs) {
    // The checkpoint's own warm-up: against its own epochs, the file's
    // error; against --epochs, the flag's (a resume's epochs may only grow).
    if (!run.resume_dir.empty() && !args.has("--warmup-epochs")) {
      if (!args.has("--epochs")) {
        throw DataError(cat(saved.file, ": __metadata__ \"config.warmup_epochs\" = ", options.warmup_epochs,
                            " leaves none of its ", options.epochs, " epochs for the schedule"));
      }
      throw ConfigError(cat("--epochs ", options.epochs, " leaves no epoch for the schedule after the checkpoint's ",
                            options.warmup_epochs, " warm-up epochs; a resume's epochs may only grow"));
    }
    throw ConfigError(cat("--warmup-epochs ", options.warmup_epochs, " leaves none of the ", options.epochs,
                          " epochs for the schedule; give fewer warm-up epochs"));
  }
  run.log_every = args.int_in("--log-every", 0, 1, kMaxInt);
  if (args.has("--log-every") && !args.has("--log")) throw ConfigError("--log-every needs --log FILE");
  run.log_path = args.get("--log", "");
  options.rank_zero_settings = {{"--log", args.has("--log") ? run.log_path : "not given"},
                                {"--log-every", args.has("--log-every") ? cat(run.log_every) : "not given"}};
  if (lm && args.has("--on-bad-sample")) throw ConfigError(on_bad_sample_for_text(net));
  run.data.on_bad_sample = parse_on_bad_sample("--on-bad-sample", args.get("--on-bad-sample", "skip"));
  return run;
}

}  // namespace glassbox::cli
