// train/checkpoint.cpp: model files and checkpoint directories (train/checkpoint.h).
//
// Everything a file holds is checked before anything is written into the
// graph or the optimizer (train/model_file.h), so a refused file, or a
// checkpoint whose second file is refused, leaves the run as it was.
#include "train/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "train/model_file.h"
#include "tensor/atomic_file.h"
#include "tensor/parse.h"

namespace glassbox {
namespace {

namespace fs = std::filesystem;
using model_file::Wanted;

constexpr const char* kLatest = "latest";
constexpr const char* kConfigPrefix = "config.";
constexpr const char* kEnvironmentPrefix = "environment.";

std::string join(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

std::string epoch_stem(int epoch) {  // "epoch-0003"
  char stem[32];
  std::snprintf(stem, sizeof stem, "epoch-%04d", epoch);
  return stem;
}

std::string train_path(const std::string& dir, const std::string& stem) { return join(dir, stem + ".train.safetensors"); }

HostTensor int64_scalar(const std::string& name, int64_t value) {
  HostTensor t{.name = name, .dtype = "I64"};
  t.bytes.resize(sizeof value);
  for (size_t i = 0; i < sizeof value; ++i) t.bytes[i] = static_cast<std::byte>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff);
  return t;
}

SafetensorsFile model_contents(Context& ctx, const Graph& graph, const NetSpec& net, int64_t batches_tracked,
                               const std::map<std::string, std::string>& metadata) {
  SafetensorsFile file{.metadata = metadata};
  file.metadata["format"] = "pt";  // what transformers' loaders look for; ours, not the caller's
  file.metadata["net"] = net.name;
  for (const Wanted& w : model_file::model_tensors(graph, net)) {
    file.tensors.push_back(w.target.defined() ? model_file::host_copy(ctx, w.name, w.target)
                                              : int64_scalar(w.name, batches_tracked));
  }
  return file;
}

// The epoch `latest` names: "epoch-0003\n" -> "epoch-0003".
std::string read_latest(const std::string& dir) {
  const std::string path = join(dir, kLatest);
  std::ifstream in(path);
  if (!in) throw DataError(cat(path, ": cannot open it (no checkpoint in ", dir, "?)"));
  std::stringstream text;
  text << in.rdbuf();
  std::string stem = text.str();
  if (!stem.empty() && stem.back() == '\n') stem.pop_back();
  const bool digits = stem.size() >= 10 && stem.rfind("epoch-", 0) == 0 &&
                      stem.find_first_not_of("0123456789", 6) == std::string::npos;
  if (!digits) throw DataError(cat(path, ": '", stem, "' does not name an epoch's checkpoint (epoch-0003)"));
  return stem;
}

// A metadata value as an integer in [0, max]; DataError naming the file otherwise.
int64_t metadata_int(const SafetensorsFile& file, const std::string& key, int64_t max, const std::string& path) {
  const auto it = file.metadata.find(key);
  if (it == file.metadata.end()) throw DataError(cat(path, ": no \"", key, "\" in its __metadata__"));
  try {
    return parse_int(cat("__metadata__ \"", key, "\""), it->second, 0, max);
  } catch (const ConfigError& e) {
    throw DataError(cat(path, ": ", e.what()));
  }
}

TrainingState training_state(const SafetensorsFile& train, const std::string& stem, const std::string& path) {
  TrainingState state;
  state.epoch = static_cast<int>(metadata_int(train, "epoch", kMaxInt, path));
  state.step = metadata_int(train, "step", std::numeric_limits<int64_t>::max(), path);
  if (epoch_stem(state.epoch) != stem) {
    throw DataError(cat(path, ": its __metadata__ says epoch ", state.epoch, ", its name says ", stem));
  }
  for (const auto& [key, value] : train.metadata) {
    if (key.rfind(kConfigPrefix, 0) == 0) state.config[key.substr(std::string_view(kConfigPrefix).size())] = value;
    if (key.rfind(kEnvironmentPrefix, 0) == 0) {
      state.environment[key.substr(std::string_view(kEnvironmentPrefix).size())] = value;
    }
  }
  return state;
}

void make_checkpoint_dir(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw Error(cat("cannot make the checkpoint directory '", dir, "': ", error.message()));
}

// Note [Temporary files of a killed writer]: write_file_atomically's
// temporary ("<name>.tmp.XXXXXX", tensor/atomic_file.cpp) is removed when a
// write fails, but a process killed while writing leaves it, as large as a
// model. The next save in the directory removes what a killed run left.
void remove_stale_temporaries(const std::string& dir) {
  std::error_code ignored;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    const bool ours = name.rfind("epoch-", 0) == 0 || name.rfind(std::string(kLatest) + ".", 0) == 0;
    if (ours && name.find(".tmp.") != std::string::npos) fs::remove(entry.path(), ignored);
  }
}

}  // namespace

void save_model(const std::string& path, Context& ctx, const Graph& graph, const NetSpec& net,
                int64_t batches_tracked, const std::map<std::string, std::string>& metadata) {
  write_safetensors(path, model_contents(ctx, graph, net, batches_tracked, metadata));
}

void load_model(const std::string& path, Context& ctx, Graph& graph, const NetSpec& net) {
  const SafetensorsFile file = read_safetensors(path);
  const std::vector<Wanted> wanted = model_file::model_tensors(graph, net);
  model_file::assign(ctx, wanted, model_file::match(file, wanted, path, net.name));
}

std::string checkpoint_model_path(const std::string& dir, int epoch) {
  return join(dir, epoch_stem(epoch) + ".safetensors");
}

void save_checkpoint(const std::string& dir, Context& ctx, const Graph& graph, const NetSpec& net, const Sgd& sgd,
                     const TrainingState& state) {
  if (state.epoch < 0) throw ConfigError(cat("save_checkpoint: epoch ", state.epoch, " is negative"));
  make_checkpoint_dir(dir);
  remove_stale_temporaries(dir);

  const std::string stem = epoch_stem(state.epoch);
  const std::map<std::string, std::string> run = {{"epoch", cat(state.epoch)}, {"step", cat(state.step)}};
  save_model(checkpoint_model_path(dir, state.epoch), ctx, graph, net, state.step, run);

  SafetensorsFile train{.metadata = run};
  train.metadata["format"] = "pt";
  train.metadata["net"] = net.name;
  for (const auto& [key, value] : state.config) train.metadata[kConfigPrefix + key] = value;
  for (const auto& [key, value] : state.environment) train.metadata[kEnvironmentPrefix + key] = value;
  for (const Wanted& w : model_file::momentum_tensors(graph, net, sgd.velocity())) {
    train.tensors.push_back(model_file::host_copy(ctx, w.name, w.target));
  }
  write_safetensors(train_path(dir, stem), train);
  // Last, and whole: until this rename, `latest` names the previous epoch,
  // whose files are complete.
  write_file_atomically(join(dir, kLatest), stem + "\n");
}

std::vector<std::string> checkpoint_files(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    if (name == kLatest || name.rfind("epoch-", 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void refuse_another_runs_checkpoints(const std::string& dir, bool overwrite) {
  const std::vector<std::string> old = checkpoint_files(dir);
  if (old.empty() || overwrite) return;
  std::string latest;
  try {
    latest = has_checkpoint(dir) ? cat(" (latest: ", read_latest(dir), ")") : "";
  } catch (const DataError&) {
    latest = " (a broken latest)";
  }
  throw ConfigError(cat("--checkpoint-dir ", dir, " holds another run's checkpoints", latest, ", ", old.size(),
                        " file", old.size() == 1 ? "" : "s", ": give --resume ", dir,
                        " to continue that run, --overwrite to replace it, or another directory"));
}

void start_checkpoint_dir(const std::string& dir, bool overwrite) {
  refuse_another_runs_checkpoints(dir, overwrite);
  make_checkpoint_dir(dir);
  // Found now, not after the first epoch has trained (write_file_atomically
  // names the file it cannot write).
  const std::string probe = join(dir, "latest.write-check");
  write_file_atomically(probe, "");
  std::error_code error;
  fs::remove(probe, error);
  // `latest` first: a removal cut short leaves no pointer to a removed epoch.
  // What fails here is a file the write above could make but not remove.
  if (has_checkpoint(dir)) fs::remove(join(dir, kLatest), error);
  for (const std::string& name : checkpoint_files(dir)) {
    if (!error) fs::remove(join(dir, name), error);
  }
  if (error) throw Error(cat("--overwrite: cannot remove the old checkpoints in '", dir, "': ", error.message()));
}

bool has_checkpoint(const std::string& dir) {
  std::error_code ignored;
  return fs::exists(join(dir, kLatest), ignored);
}

TrainingState read_training_state(const std::string& dir) {
  const std::string stem = read_latest(dir);
  const std::string path = train_path(dir, stem);
  return training_state(read_safetensors_header(path), stem, path);
}

TrainingState load_checkpoint(const std::string& dir, Context& ctx, Graph& graph, const NetSpec& net, Sgd& sgd) {
  const std::string stem = read_latest(dir);
  const std::string model_path = join(dir, stem + ".safetensors");
  const std::string momentum_path = train_path(dir, stem);
  const SafetensorsFile train = read_safetensors(momentum_path);
  const TrainingState state = training_state(train, stem, momentum_path);
  const SafetensorsFile model = read_safetensors(model_path);
  // Both files checked in full before either is written in.
  const std::vector<Wanted> model_wanted = model_file::model_tensors(graph, net);
  const std::vector<Wanted> momentum_wanted = model_file::momentum_tensors(graph, net, sgd.velocity());
  const auto model_found = model_file::match(model, model_wanted, model_path, net.name);
  const auto momentum_found = model_file::match(train, momentum_wanted, momentum_path, net.name);
  model_file::assign(ctx, model_wanted, model_found);
  model_file::assign(ctx, momentum_wanted, momentum_found);
  return state;
}

}  // namespace glassbox
