// train/checkpoint.cpp: model files and checkpoint directories (train/checkpoint.h).
//
// Everything a file holds is checked before anything is written into the
// graph or the optimizer (train/model_file.h), so a refused file, or a
// checkpoint whose second file is refused, leaves the run as it was.
#include "train/checkpoint.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cctype>
#include <cfloat>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string_view>
#include <utility>

#include "train/model_file.h"
#include "tensor/atomic_file.h"
#include "tensor/input_file.h"
#include "tensor/parse.h"

namespace glassbox {
namespace {

namespace fs = std::filesystem;
using model_file::Wanted;

constexpr const char* kLatest = "latest";
constexpr const char* kLock = ".lock";
constexpr const char* kRunId = "run_id";
constexpr const char* kConfigPrefix = "config.";
constexpr const char* kEnvironmentPrefix = "environment.";

std::string join(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

std::string epoch_stem(int epoch) {  // "epoch-0003"
  char stem[32];
  std::snprintf(stem, sizeof stem, "epoch-%04d", epoch);
  return stem;
}

std::string model_path(const std::string& dir, const std::string& stem) { return join(dir, stem + ".safetensors"); }
std::string train_path(const std::string& dir, const std::string& stem) { return join(dir, stem + ".train.safetensors"); }

bool is_run_id(const std::string& text) {
  return text.size() == 16 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

HostTensor int64_scalar(const std::string& name, int64_t value) {
  HostTensor t{.name = name, .dtype = "I64"};
  t.bytes.resize(sizeof value);
  for (size_t i = 0; i < sizeof value; ++i) t.bytes[i] = static_cast<std::byte>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff);
  return t;
}

// `path`: the file the contents are for, named by an error.
SafetensorsFile model_contents(const std::string& path, Context& ctx, const Graph& graph, const NetSpec& net,
                               int64_t batches_tracked, const std::map<std::string, std::string>& metadata) {
  // Nothing is written that no load takes (Values::kCount: >= 0).
  if (batches_tracked < 0) {
    throw ConfigError(cat("save_model: ", path, ": batches_tracked ", batches_tracked,
                          " is negative; it counts optimizer steps"));
  }
  for (const char* own : {"format", "net"}) {
    if (metadata.contains(own)) {
      throw ConfigError(cat("save_model: ", path, ": the metadata key '", own, "' is the file's own (\"format\": "
                            "\"pt\", \"net\": the network's name); give the caller's value another key"));
    }
  }
  SafetensorsFile file{.metadata = metadata};
  file.metadata["format"] = "pt";  // what transformers' loaders look for; ours, not the caller's
  file.metadata["net"] = net.name;
  for (const Wanted& w : model_file::model_tensors(graph, net)) {
    file.tensors.push_back(w.target.defined() ? model_file::savable_copy(ctx, w, path)
                                              : int64_scalar(w.name, batches_tracked));
  }
  return file;
}

// The most bytes of `latest` read: it holds one line, "epoch-0003\n".
constexpr uint64_t kMaxLatestBytes = 4096;

// The epoch `latest` names: "epoch-0003\n" -> "epoch-0003". Only a regular
// file is read (a named pipe there would block, tensor/input_file.h), and
// what it holds is quoted as an excerpt.
std::string read_latest(const std::string& dir) {
  const std::string path = join(dir, kLatest);
  std::string stem, reason;
  if (!read_regular_file(path, kMaxLatestBytes, "a checkpoint's latest file (it holds one line)", stem, reason)) {
    if (reason == std::strerror(ENOENT)) throw DataError(cat(path, ": cannot open it (no checkpoint in ", dir, "?)"));
    throw DataError(cat(path, ": cannot read: ", reason));
  }
  if (!stem.empty() && stem.back() == '\n') stem.pop_back();
  const bool digits = stem.size() >= 10 && stem.rfind("epoch-", 0) == 0 &&
                      stem.find_first_not_of("0123456789", 6) == std::string::npos;
  if (!digits) {
    throw DataError(cat(path, ": '", excerpt(stem), "' does not name an epoch's checkpoint (epoch-0003)"));
  }
  return stem;
}

// A metadata value as text; DataError naming the file where it is missing.
const std::string& metadata_text(const SafetensorsFile& file, const std::string& key, const std::string& path) {
  const auto it = file.metadata.find(key);
  if (it == file.metadata.end()) throw DataError(cat(path, ": no \"", key, "\" in its __metadata__"));
  return it->second;
}

// A metadata value as an integer in [0, max]; DataError naming the file otherwise.
int64_t metadata_int(const SafetensorsFile& file, const std::string& key, int64_t max, const std::string& path) {
  const std::string& text = metadata_text(file, key, path);
  try {
    return parse_int(cat("__metadata__ \"", key, "\""), text, 0, max);
  } catch (const ConfigError& e) {
    throw DataError(cat(path, ": ", e.what()));
  }
}

// The loss-scaling state of an fp16 run's train file (none without
// "loss_scale"); DataError naming the file and the field where one is not a
// number of its kind.
constexpr const char* kLossScale = "loss_scale";
constexpr const char* kLossScaleCleanSteps = "loss_scale_clean_steps";
constexpr const char* kLossScaleSkippedSteps = "loss_scale_skipped_steps";

std::optional<LossScaleState> saved_loss_scale(const SafetensorsFile& file, const std::string& path) {
  if (!file.metadata.contains(kLossScale)) return std::nullopt;
  const std::string& text = metadata_text(file, kLossScale, path);
  float scale = 0.0f;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), scale);
  if (error != std::errc() || end != text.data() + text.size() || !(scale >= 0.0f && scale <= FLT_MAX)) {
    throw DataError(cat(path, ": its __metadata__ \"", kLossScale, "\" is '", excerpt(text),
                        "', not a finite loss scale >= 0"));
  }
  return LossScaleState{
      .scale = scale,
      .clean_steps = static_cast<int32_t>(metadata_int(file, kLossScaleCleanSteps, kMaxInt, path)),
      .skipped_steps = metadata_int(file, kLossScaleSkippedSteps, std::numeric_limits<int64_t>::max(), path)};
}

// The run, epoch and step a checkpoint file carries, checked in itself: a
// run id of new_run_id()'s form, the epoch its name says.
TrainingState file_state(const SafetensorsFile& file, const std::string& stem, const std::string& path) {
  TrainingState state;
  state.run_id = metadata_text(file, kRunId, path);
  if (!is_run_id(state.run_id)) {
    throw DataError(cat(path, ": its __metadata__ \"run_id\" is '", excerpt(state.run_id),
                        "', not a run id (16 hex digits)"));
  }
  state.epoch = static_cast<int>(metadata_int(file, "epoch", kMaxInt, path));
  state.step = metadata_int(file, "step", std::numeric_limits<int64_t>::max(), path);
  if (epoch_stem(state.epoch) != stem) {
    throw DataError(cat(path, ": its __metadata__ says epoch ", state.epoch, ", its name says ", stem));
  }
  if (const auto it = file.metadata.find(kVocabularyKey); it != file.metadata.end()) state.vocabulary = it->second;
  return state;
}

// The training state of a checkpoint from its two files' metadata (the
// tensors are not needed): the train file's state, its settings and
// environment, checked against the model file's run, epoch (file_state: the
// epoch of both names) and step, so that a file copied in from another run
// is refused naming both.
TrainingState training_state(const SafetensorsFile& model, const SafetensorsFile& train, const std::string& dir,
                             const std::string& stem) {
  const std::string model_at = model_path(dir, stem), train_at = train_path(dir, stem);
  TrainingState state = file_state(train, stem, train_at);
  const TrainingState paired = file_state(model, stem, model_at);
  const std::pair<const char*, std::pair<std::string, std::string>> fields[] = {
      {kRunId, {paired.run_id, state.run_id}},
      {"step", {cat(paired.step), cat(state.step)}},
      {kVocabularyKey, {paired.vocabulary, state.vocabulary}}};
  for (const auto& [key, values] : fields) {
    if (values.first != values.second) {
      throw DataError(cat(model_at, " and ", train_at, " are not one checkpoint: the model file's \"", key,
                          "\" is '", values.first, "', the train file's '", values.second,
                          "' (was one of them copied from another run or epoch?)"));
    }
  }
  state.loss_scale = saved_loss_scale(train, train_at);
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
// model. The next save in the directory removes what a killed run left, and
// only that: a temporary of one of the names a checkpoint writes, so that a
// user's own "epoch-notes.tmp.txt" stays.
// The names a checkpoint writes: latest, epoch-NNNN.safetensors and
// epoch-NNNN.train.safetensors (epoch_stem: four digits or more).
bool is_checkpoint_name(std::string_view name) {
  if (name == kLatest) return true;
  if (!name.starts_with("epoch-")) return false;
  size_t digits = 6;
  while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits])) != 0) ++digits;
  const std::string_view rest = name.substr(digits);
  return digits >= 10 && (rest == ".safetensors" || rest == ".train.safetensors");
}

// The empty file start_checkpoint_dir writes and removes, to learn that the
// directory takes files before the first epoch trains.
constexpr std::string_view kWriteCheck = "latest.write-check";

// The name before a temporary's suffix ("<name>.tmp." and mkstemp's six
// characters), or "" where `name` is no temporary.
std::string_view temporary_of(std::string_view name) {
  const size_t tmp = name.rfind(".tmp.");
  if (tmp == std::string_view::npos || name.size() - tmp != 11) return {};
  for (size_t i = tmp + 5; i < name.size(); ++i) {
    if (std::isalnum(static_cast<unsigned char>(name[i])) == 0) return {};
  }
  return name.substr(0, tmp);
}

// A temporary of a name a checkpoint writes.
bool is_stale_temporary(std::string_view name) {
  const std::string_view of = temporary_of(name);
  return !of.empty() && is_checkpoint_name(of);
}

// Those, and the write check's temporary (or the check itself) that a run
// killed at its start left: no checkpoint, so not counted as one
// (checkpoint_files), but removed all the same.
void remove_stale_temporaries(const std::string& dir) {
  std::error_code ignored;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    if (is_stale_temporary(name) || temporary_of(name) == kWriteCheck || name == kWriteCheck) {
      fs::remove(entry.path(), ignored);
    }
  }
}

}  // namespace

bool is_checkpoint_dir_file(std::string_view name) {
  return is_checkpoint_name(name) || is_stale_temporary(name) || name == kLock || name == kWriteCheck ||
         temporary_of(name) == kWriteCheck;
}

std::string new_run_id() {
  std::random_device device;
  const uint64_t id = (static_cast<uint64_t>(device()) << 32) ^ device();  // device() gives 32 bits
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(id));
  return text;
}

void save_model(const std::string& path, Context& ctx, const Graph& graph, const NetSpec& net,
                int64_t batches_tracked, const std::map<std::string, std::string>& metadata) {
  write_safetensors(path, model_contents(path, ctx, graph, net, batches_tracked, metadata));
}

void load_model(const std::string& path, Context& ctx, Graph& graph, const NetSpec& net) {
  const SafetensorsFile file = read_safetensors(path);
  const std::vector<Wanted> wanted = model_file::model_tensors(graph, net);
  model_file::assign(ctx, wanted, model_file::match(file, wanted, path, net.name));
  graph.refresh_working_parameters(ctx);  // Note [Mixed precision]: the layers of a 16-bit graph read the copy
}

namespace {
std::string checked_epoch_stem(int epoch) {
  if (epoch < 0) throw ConfigError(cat("a checkpoint's epoch is 0 or more, got ", epoch));
  return epoch_stem(epoch);
}
}  // namespace

std::string checkpoint_model_path(const std::string& dir, int epoch) {
  return model_path(dir, checked_epoch_stem(epoch));
}
std::string checkpoint_train_path(const std::string& dir, int epoch) {
  return train_path(dir, checked_epoch_stem(epoch));
}

namespace {

// Note [A checkpoint whole or not at all]: a save that fails after its model
// file (a full disk at the train file, or at `latest`) leaves `latest` on the
// epoch before, and removes this epoch's files: left, a model file without
// its pair read as a checkpoint to a new run, which then advised a --resume
// that had nothing to read. Files `latest` names are never removed, and only
// regular files are.
void remove_unfinished_checkpoint(const std::string& dir, const std::string& stem) {
  try {
    if (has_checkpoint(dir) && read_latest(dir) == stem) return;
  } catch (const Error&) {
    return;  // a `latest` that cannot be read: leave everything as it is
  }
  std::error_code ignored;
  for (const std::string& path : {model_path(dir, stem), train_path(dir, stem)}) {
    if (fs::is_regular_file(fs::symlink_status(path, ignored))) fs::remove(path, ignored);
  }
}

// The two files of the checkpoint `stem`, then `latest` naming it.
void write_checkpoint_files(const std::string& dir, const std::string& stem, Context& ctx, const Graph& graph,
                            const NetSpec& net, const Sgd& sgd, const TrainingState& state) {
  // In both files: what makes them one checkpoint of one run.
  std::map<std::string, std::string> run = {
      {kRunId, state.run_id}, {"epoch", cat(state.epoch)}, {"step", cat(state.step)}};
  if (!state.vocabulary.empty()) run[kVocabularyKey] = state.vocabulary;
  save_model(model_path(dir, stem), ctx, graph, net, state.step, run);

  SafetensorsFile train{.metadata = run};
  train.metadata["format"] = "pt";
  train.metadata["net"] = net.name;
  for (const auto& [key, value] : state.config) train.metadata[kConfigPrefix + key] = value;
  for (const auto& [key, value] : state.environment) train.metadata[kEnvironmentPrefix + key] = value;
  if (state.loss_scale) {
    std::array<char, 32> scale{};
    const auto written = std::to_chars(scale.data(), scale.data() + scale.size(), state.loss_scale->scale);
    train.metadata[kLossScale] = std::string(scale.data(), written.ptr);  // the shortest text that reads back exactly
    train.metadata[kLossScaleCleanSteps] = cat(state.loss_scale->clean_steps);
    train.metadata[kLossScaleSkippedSteps] = cat(state.loss_scale->skipped_steps);
  }
  for (const Wanted& w : model_file::momentum_tensors(graph, net, sgd.velocity())) {
    train.tensors.push_back(model_file::savable_copy(ctx, w, train_path(dir, stem)));
  }
  write_safetensors(train_path(dir, stem), train);
  // Last, and whole: until this rename, `latest` names the previous epoch,
  // whose files are complete.
  write_file_atomically(join(dir, kLatest), stem + "\n");
}

}  // namespace

void save_checkpoint(const std::string& dir, Context& ctx, const Graph& graph, const NetSpec& net, const Sgd& sgd,
                     const TrainingState& state) {
  if (state.epoch < 0) throw ConfigError(cat("save_checkpoint: epoch ", state.epoch, " is negative"));
  // Nothing is written that load_checkpoint refuses (file_state, saved_loss_scale).
  if (state.step < 0) throw ConfigError(cat("save_checkpoint: step ", state.step, " is negative"));
  if (const std::optional<LossScaleState>& s = state.loss_scale;
      s && !(s->scale >= 0.0f && s->scale <= FLT_MAX && s->clean_steps >= 0 && s->skipped_steps >= 0)) {
    throw ConfigError(cat("save_checkpoint: the loss scale state (scale ", s->scale, ", ", s->clean_steps,
                          " clean steps, ", s->skipped_steps, " skipped) needs a finite scale >= 0 and counts >= 0"));
  }
  if (!is_run_id(state.run_id)) {
    throw ConfigError(cat("save_checkpoint: the run id '", state.run_id, "' is not 16 hex digits (new_run_id())"));
  }
  // The graph is net's (Note [A model file is its network's]), checked before the directory is touched.
  model_file::model_tensors(graph, net);
  make_checkpoint_dir(dir);
  remove_stale_temporaries(dir);

  const std::string stem = epoch_stem(state.epoch);
  try {
    write_checkpoint_files(dir, stem, ctx, graph, net, sgd, state);
  } catch (...) {
    remove_unfinished_checkpoint(dir, stem);
    throw;
  }
}

std::vector<std::string> checkpoint_files(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    if (is_checkpoint_name(name) || is_stale_temporary(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void refuse_another_runs_checkpoints(const std::string& dir, bool overwrite) {
  const std::vector<std::string> old = checkpoint_files(dir);
  if (old.empty() || overwrite) return;
  const std::string files = cat(old.size(), " file", old.size() == 1 ? "" : "s");
  if (!has_checkpoint(dir)) {  // no `latest`: a run stopped inside its first save, and --resume has nothing to read
    throw ConfigError(cat("--checkpoint-dir ", dir, " holds the files of a run that stopped before its first "
                          "checkpoint was whole (no latest: nothing to resume), ", files, ": give --overwrite to "
                          "remove them, or another directory"));
  }
  std::string latest;
  try {
    latest = has_checkpoint(dir) ? cat(" (latest: ", read_latest(dir), ")") : "";
  } catch (const DataError&) {
    latest = " (a broken latest)";
  }
  throw ConfigError(cat("--checkpoint-dir ", dir, " holds another run's checkpoints", latest, ", ", files,
                        ": give --resume ", dir, " to continue that run, --overwrite to replace it, or another "
                        "directory"));
}

// Note [The checkpoint directory's lock]: flock, not fcntl's record locks.
// A flock lock belongs to the open file description, so a second open of
// DIR/.lock conflicts even in the same process, and closing some other
// descriptor of the file does not release it (fcntl's locks belong to the
// process and are dropped by any close of the file). The system releases it
// when the holder's descriptors close, at exit or SIGKILL alike: no stale
// lock to clean up. The file itself stays: removing it would let a third
// run lock a new file of that name while the second holds the old one.
CheckpointDirLock::CheckpointDirLock(const std::string& dir) {
  const std::string path = join(dir, kLock);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    // The holder's process id, for the message a second run gets; the lock
    // does not depend on it, so a failed write is not an error.
    const std::string pid = cat(::getpid(), "\n");
    [[maybe_unused]] const bool written =
        ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
    return;
  }
  const int error = errno;
  std::string holder;
  if (fd_ >= 0 && error == EWOULDBLOCK) {
    char text[32] = {};
    const ssize_t got = ::pread(fd_, text, sizeof text - 1, 0);
    holder = got > 0 ? std::string(text, static_cast<size_t>(got)) : "";
    if (holder.find_first_not_of("0123456789\n") != std::string::npos) holder.clear();
    if (!holder.empty() && holder.back() == '\n') holder.pop_back();
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (error == EWOULDBLOCK) {
    throw ConfigError(cat("--checkpoint-dir ", dir, " is in use by another run (",
                          holder.empty() ? "another process" : cat("process ", holder), " holds its lock)"));
  }
  throw Error(cat(path, ": cannot open and lock it, to write checkpoints into ", dir, ": ", std::strerror(error)));
}

CheckpointDirLock::CheckpointDirLock(CheckpointDirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

CheckpointDirLock& CheckpointDirLock::operator=(CheckpointDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

CheckpointDirLock start_checkpoint_dir(const std::string& dir, bool overwrite) {
  // The lock first: a directory another run writes into is refused before
  // anything is looked at or, with --overwrite, removed.
  make_checkpoint_dir(dir);
  CheckpointDirLock lock(dir);
  refuse_another_runs_checkpoints(dir, overwrite);
  // Found now, not after the first epoch has trained (write_file_atomically
  // names the file it cannot write).
  remove_stale_temporaries(dir);
  const std::string probe = join(dir, std::string(kWriteCheck));
  write_file_atomically(probe, "");
  std::error_code error;
  fs::remove(probe, error);
  if (error) {
    throw Error(cat("cannot remove '", probe, "', written to check that the checkpoint directory takes files: ",
                    error.message()));
  }
  // `latest` first: a removal cut short leaves no pointer to a removed epoch.
  // What fails here is a file the write above could make but not remove.
  if (has_checkpoint(dir)) fs::remove(join(dir, kLatest), error);
  for (const std::string& name : checkpoint_files(dir)) {
    if (!error) fs::remove(join(dir, name), error);
  }
  if (error) throw Error(cat("--overwrite: cannot remove the old checkpoints in '", dir, "': ", error.message()));
  return lock;
}

bool has_checkpoint(const std::string& dir) {
  std::error_code ignored;
  return fs::exists(join(dir, kLatest), ignored);
}

TrainingState read_training_state(const std::string& dir) {
  const std::string stem = read_latest(dir);
  // The train file first: it holds the run's state, so its problems come first.
  const SafetensorsFile train = read_safetensors_header(train_path(dir, stem));
  return training_state(read_safetensors_header(model_path(dir, stem)), train, dir, stem);
}

TrainingState load_checkpoint(const std::string& dir, Context& ctx, Graph& graph, const NetSpec& net, Sgd& sgd) {
  const std::string stem = read_latest(dir);
  const std::string model_at = model_path(dir, stem);
  const std::string train_at = train_path(dir, stem);
  const SafetensorsFile train = read_safetensors(train_at);
  const SafetensorsFile model = read_safetensors(model_at);
  const TrainingState state = training_state(model, train, dir, stem);
  // Both files checked in full before either is written in.
  const std::vector<Wanted> model_wanted = model_file::model_tensors(graph, net);
  const std::vector<Wanted> momentum_wanted = model_file::momentum_tensors(graph, net, sgd.velocity());
  const auto model_found = model_file::match(model, model_wanted, model_at, net.name);
  const auto momentum_found = model_file::match(train, momentum_wanted, train_at, net.name);
  model_file::assign(ctx, model_wanted, model_found);
  model_file::assign(ctx, momentum_wanted, momentum_found);
  graph.refresh_working_parameters(ctx);  // Note [Mixed precision]: the layers of a 16-bit graph read the copy
  return state;
}

}  // namespace glassbox
