// tools/cli/train_settings.h: the settings of a `glassbox train` run, from
// its command line and, on a resume, from its checkpoint's saved settings.
// Pure: it reads no file and touches no device, so that a test and
// tests/fuzz/fuzz_cli.cpp check it whole (a resume with no flags, or with the
// first run's flags again, has the settings of the run it continues).
#pragma once

#include <map>
#include <string>

#include "data/data_spec.h"
#include "nets/registry.h"
#include "tensor/device.h"
#include "tensor/context.h"
#include "train/trainer.h"
#include "tools/cli/args.h"
#include "tools/cli/data_parallel_args.h"

namespace glassbox::cli {

// What a checkpoint saved of its run (TrainingState::config) and the train
// file it came from; both empty for a new run.
struct SavedSettings {
  std::map<std::string, std::string> config;
  std::string file;
};

struct TrainSettings {
  std::string data_spec;
  // Where data_spec comes from on a resume without --data, for its errors:
  // "FILE: __metadata__ \"config.data\"" (a DataError, as any saved setting
  // that does not parse); "" where --data gives it.
  std::string data_spec_source;
  int batch = 0;
  Precision precision = Precision::kFp32;
  // Every field that the command line decides (not the communicator, the
  // warning callback, the network's name or the vocabulary); `config` holds
  // the run's settings in words, as each checkpoint saves them.
  TrainerOptions options;
  DataParallelArgs parallel;
  DataOptions data;          // --on-bad-sample, for image data
  std::string resume_dir;    // --resume; "" for a new run
  std::string log_path;      // --log; "" for none
  int log_every = 0;         // --log-every; 0: epoch lines only
};

// Why --on-bad-sample is refused for `net`, a language model (train and eval):
// a text corpus has no images to skip, and the flag would be taken and do nothing.
inline std::string on_bad_sample_for_text(const NetSpec& net) {
  return "--on-bad-sample is for image data; " + net.name + " reads a text corpus, which has no samples to skip";
}

// Throws ConfigError for a flag's bad value or a combination refused (naming
// the flags), DataError for a saved setting that is missing or does not
// parse (naming `saved.file` and the field). `ranks`: the processes of the
// job (a setting: N ranks at batch B train as one process at N x B).
TrainSettings train_settings(const Args& args, const NetSpec& net, Device device, int ranks,
                             const SavedSettings& saved);

}  // namespace glassbox::cli
