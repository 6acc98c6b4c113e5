// train/checkpoint.h: a network's weights, and a training run's whole state,
// in safetensors files (tensor/safetensors.h) that PyTorch reads as they are.
//
// A model file holds every parameter and every batch norm's running
// statistics under PyTorch's names (nets/torch_names.h), float32, in
// PyTorch's layouts (which are Glassbox's: convolution weights (K, C/g, R, S),
// linear weights (out, in)), plus "<bn>.num_batches_tracked" as int64
// scalars. So
//     model.load_state_dict(safetensors.torch.load_file(path), strict=True)
// loads it into the torchvision model, and a torchvision state_dict saved
// with safetensors.torch.save_file loads into Glassbox.
//
// A checkpoint directory, written after every epoch by the trainer:
//   DIR/epoch-0003.safetensors        the model after epoch 3, as above
//   DIR/epoch-0003.train.safetensors  the optimizer's momentum buffers, under the model's
//                                     PyTorch names ("momentum_buffer.layer1.0.conv1.weight",
//                                     torch.optim.SGD's convention: v = momentum v + g),
//                                     and the training state in its metadata
//   DIR/latest                        "epoch-0003\n": which epoch is complete
//   DIR/.lock                         held (flock) by the run that writes here (CheckpointDirLock)
// The two data files are one unit: both carry the run's id, the epoch and
// the step in their __metadata__, and a load refuses a pair that differ.
// Each file is written whole (tensor/atomic_file.h), the two data files
// first and `latest` last, so a run killed at any moment leaves `latest`
// naming a complete earlier checkpoint (tests/test_checkpoint_kill.cpp kills
// a writer at random moments). Earlier epochs' files are kept. The format
// and the names: docs/checkpoints.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "nets/registry.h"
#include "optim/loss_scale.h"
#include "optim/sgd.h"

namespace glassbox {

// Where a training run stands, saved with its checkpoints.
struct TrainingState {
  int epoch = 0;      // epochs completed
  int64_t step = 0;   // optimizer steps taken (also each batch norm's num_batches_tracked)
  // The run's id (new_run_id()), made when the run starts and kept by a
  // resume: it ties a checkpoint's two files to each other and to the run.
  std::string run_id;
  // The run's settings as text ("net", "batch", "seed", "lr", "schedule", ...),
  // written by the trainer and compared by it when a run resumes.
  std::map<std::string, std::string> config;
  // What decides the bits of the arithmetic (Note [What a bit-for-bit resume
  // needs] in train/trainer.h): thread count, build, kernels, device. A
  // checkpoint that predates it has none.
  std::map<std::string, std::string> environment;
  // An fp16 run's loss scaling after the epoch (optim/loss_scaler.h), so
  // that a resumed run goes on with the same scale; none for other precisions.
  std::optional<LossScaleState> loss_scale;
  // A language model's vocabulary (TextCorpus::vocabulary_digest), in both
  // files' metadata as kVocabularyKey: a resume or an eval on a corpus with
  // other words is refused (Note [A language model's vocabulary], train/trainer.h).
  // "" for an image classifier, and in a checkpoint saved before it was kept.
  std::string vocabulary;
};

// The metadata key of TrainingState::vocabulary in a model file.
inline constexpr const char* kVocabularyKey = "vocabulary";

// 16 lowercase hex digits from std::random_device: a new run's id.
std::string new_run_id();

// Writes the model file. `batches_tracked` fills num_batches_tracked. Extra
// `metadata` goes into the file's __metadata__ beside "format" ("pt", as
// transformers' loaders expect) and "net" (net.name): a `metadata` with
// either key is a ConfigError.
void save_model(const std::string& path, Context& ctx, const Graph& graph, const NetSpec& net,
                int64_t batches_tracked, const std::map<std::string, std::string>& metadata = {});

// Loads a model file into the compiled `graph` (built from `net`), strictly:
// every parameter and running statistic must be there as float32 with its
// shape, num_batches_tracked as an int64 scalar (read and checked, not used),
// and nothing else. Throws DataError naming the file and the tensor: a
// missing one, an unexpected one, a dtype, or a shape ("layer1.0.conv1.weight:
// the file has (64, 64, 3, 3), ResNet50 expects (64, 64, 1, 1)"), or a value
// that training cannot leave (train/model_file.h: NaN, an infinity, a
// negative variance, a weight past 1.8e19), with its index. It checks every
// tensor before writing any, so a refused file leaves the graph as it was.
void load_model(const std::string& path, Context& ctx, Graph& graph, const NetSpec& net);

// Writes epoch state.epoch's checkpoint into `dir` (created if missing) and
// then points `latest` at it. Both files' metadata have "run_id", "epoch"
// and "step"; the train file's also "config.<key>" for each state.config
// entry and "environment.<key>" for each state.environment entry. First
// removes the temporary files a writer killed mid-write left in `dir`.
// Throws ConfigError for a negative epoch or a run id that is not
// new_run_id()'s form, Error naming the directory or file it cannot make or write.
void save_checkpoint(const std::string& dir, Context& ctx, const Graph& graph, const NetSpec& net, const Sgd& sgd,
                     const TrainingState& state);

// The files of a checkpoint directory in `dir`: `latest`, every
// epoch-NNNN.safetensors and epoch-NNNN.train.safetensors, and the
// temporaries a killed writer left of them ("<name>.tmp.XXXXXX"), sorted; not
// `.lock` nor any other file; none where `dir` does not exist.
std::vector<std::string> checkpoint_files(const std::string& dir);

// Whether a run that writes checkpoints into a directory writes, replaces or
// removes a file of this name there: `latest`, the epochs' files, their
// temporaries, `.lock` and the write check.
bool is_checkpoint_dir_file(std::string_view name);

// An advisory lock on a checkpoint directory, held while a run writes into
// it: flock(LOCK_EX | LOCK_NB) on DIR/.lock, which holds the holder's
// process id. The system releases it when the process ends, however it
// ends, so a killed run leaves no stale lock (Note [The checkpoint
// directory's lock] in train/checkpoint.cpp). Move-only; releases on destruction.
class CheckpointDirLock {
 public:
  CheckpointDirLock() = default;  // holds nothing
  // Takes the lock of `dir`, which must exist. Throws ConfigError
  // "--checkpoint-dir DIR is in use by another run (process 12345 holds its
  // lock)" where another open file holds it (another process, or another
  // CheckpointDirLock of this one), Error naming DIR/.lock where it cannot
  // be opened or locked.
  explicit CheckpointDirLock(const std::string& dir);
  CheckpointDirLock(CheckpointDirLock&& other) noexcept;
  CheckpointDirLock& operator=(CheckpointDirLock&& other) noexcept;
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;
  ~CheckpointDirLock();

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Throws ConfigError, naming `dir` and its latest epoch, where `dir` holds
// checkpoint files and `overwrite` is off: a new run would mix its
// checkpoints with another run's. Where no `latest` is among them (a run
// killed inside its first save), the message offers --overwrite alone:
// --resume would have nothing to read.
void refuse_another_runs_checkpoints(const std::string& dir, bool overwrite);

// Makes `dir` ready for a new run's checkpoints before it trains: creates
// it, takes its lock (CheckpointDirLock's errors: a directory another run
// writes into is refused, with --overwrite too), refuses it where it holds
// another run's checkpoints (refuse_another_runs_checkpoints), checks that a
// file can be written there (Error naming it otherwise), and with
// `overwrite` removes the old checkpoint files (`latest` first). Returns the
// lock, for the run to hold while it writes.
[[nodiscard]] CheckpointDirLock start_checkpoint_dir(const std::string& dir, bool overwrite);

// True if `dir` holds a `latest` file.
bool has_checkpoint(const std::string& dir);

// The training state of the checkpoint `latest` names, read from its two
// files' metadata without their tensors: a resumed run's settings, known
// before its network is built. Throws DataError as load_checkpoint does for
// the metadata.
TrainingState read_training_state(const std::string& dir);

// The model file of epoch `epoch`'s checkpoint in `dir`: "DIR/epoch-0003.safetensors"
// (ConfigError for a negative epoch).
std::string checkpoint_model_path(const std::string& dir, int epoch);
// Its train file: "DIR/epoch-0003.train.safetensors".
std::string checkpoint_train_path(const std::string& dir, int epoch);

// Restores the checkpoint `latest` names into `graph` and `sgd` and returns
// its training state. Throws DataError naming the file for a missing or
// malformed file (load_model's checks, and the same for the momentum
// buffers), a missing or malformed "run_id", "epoch" or "step" in either
// file, an epoch that is not the one the file's name says, and naming both
// files where their run_id or step differ (a file copied in from another run).
TrainingState load_checkpoint(const std::string& dir, Context& ctx, Graph& graph, const NetSpec& net, Sgd& sgd);

}  // namespace glassbox
