// tests/fuzz/fuzz_checkpoint_dir.cpp: a checkpoint directory (train/checkpoint.h)
// made of the fuzzer's bytes, read by read_training_state and load_checkpoint
// into a tiny network with batch norm and its SGD.
//
// Input: the three files of epoch 1's checkpoint,
//   bytes 0-1   M, little-endian: the model file's length
//   bytes 2-3   T, little-endian: the train file's length
//   M bytes     DIR/epoch-0001.safetensors
//   T bytes     DIR/epoch-0001.train.safetensors
//   the rest    DIR/latest
// A length past the end of the input takes what is left, so every input is
// three files (any of them may be empty). Seeds: make_checkpoint_seeds.py.
//
// The network (kept in step with make_checkpoint_seeds.py):
//   images (1, 1, 4, 4) -> conv1 (2 filters, 3x3, pad 1) -> bn1 -> relu1
//   -> pool1 (2x2) -> flatten -> fc (8 -> 3)
// whose checkpoint holds every kind of value a loader checks: weights and
// momentum, running means and variances, and num_batches_tracked.
//
// Only a glassbox::Error may escape either call. Where load_checkpoint refuses
// the directory, the parameters, running statistics and momentum are bit for
// bit as they were.
// Where it accepts:
//   - read_training_state accepted it too, with the same state;
//   - the state's epoch is 1 (only epoch-0001's files exist);
//   - every value loaded is one training can leave: finite, weights and
//     momentum within 1.8e19, variances not negative (load_model, train/checkpoint.h);
//   - saved again with save_checkpoint into a second directory and loaded
//     back over NaN-filled values, it gives the same state and the same
//     values bit for bit; any error there is a finding.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/builder.h"
#include "tensor/copy.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_input.h"
#include "train/checkpoint.h"

using namespace glassbox;

namespace {

namespace fs = std::filesystem;

// The largest weight or momentum a loaded file may hold (train/checkpoint.h, load_model).
constexpr float kMaxTrained = 1.8e19f;

Graph tiny(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 1, 4, 4});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 2, .kernel = 3, .pad = 1}, "conv1"), {}, "bn1"), "relu1");
  x = g.flatten(g.max_pool(x, {.kernel = 2, .stride = 2}, "pool1"), "flatten");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 3}, "fc"), labels));
}

NetSpec tiny_net() {
  return {.name = "FuzzTiny", .description = "the checkpoint fuzzer's network", .sample = Shape{1, 4, 4},
          .classes = 3, .gpu_batch = 1, .cpu_batch = 1, .build = tiny};
}

Graph compiled(Context& ctx, const NetSpec& net) {
  Graph graph = net.build(1);
  graph.compile(ctx);
  return graph;
}

// Everything a checkpoint restores, one network and optimizer for every input.
struct Run {
  fuzz::TempDir temp{"checkpoint"};
  std::string in = temp / "in";    // the fuzzer's files
  std::string out = temp / "out";  // what save_checkpoint writes of an accepted one
  Context ctx = Context::cpu();
  NetSpec net = tiny_net();
  Graph graph = compiled(ctx, net);
  Sgd sgd{ctx, graph.parameters(), graph.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f}};

  Run() { fs::create_directory(in); }

  // Parameters, running statistics, momentum buffers: what a load writes.
  std::vector<NamedTensor> tensors() const {
    std::vector<NamedTensor> all = graph.named_parameters();
    for (NamedTensor& t : graph.named_state()) all.push_back(std::move(t));
    for (NamedTensor& t : graph.named_views(sgd.velocity())) all.push_back({"momentum " + t.name, t.tensor});
    return all;
  }
  std::vector<float> values() {
    std::vector<float> all;
    for (const NamedTensor& t : tensors()) {
      const std::vector<float> v = to_vector<float>(ctx, t.tensor);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  void fill(float value) {
    for (const NamedTensor& t : tensors()) {
      from_vector<float>(ctx, std::vector<float>(static_cast<size_t>(t.tensor.numel()), value), t.tensor);
    }
  }
  // The values a loader may accept: finite; weights and momentum within
  // kMaxTrained; variances not negative.
  void check_values() {
    for (const NamedTensor& t : tensors()) {
      const bool variance = t.name.ends_with("running_var");
      const bool statistic = variance || t.name.ends_with("running_mean");
      for (const float x : to_vector<float>(ctx, t.tensor)) {
        FUZZ_CHECK(std::isfinite(x));
        FUZZ_CHECK(statistic || std::fabs(x) <= kMaxTrained);
        FUZZ_CHECK(!variance || x >= 0.0f);
      }
    }
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool same_state(const TrainingState& a, const TrainingState& b) {
  return a.epoch == b.epoch && a.step == b.step && a.run_id == b.run_id && a.config == b.config &&
         a.environment == b.environment;
}

[[noreturn]] void escaped(const char* where, const std::exception& e) {
  std::fprintf(stderr, "fuzz: %s: %s escaped: %s\n", where, typeid(e).name(), e.what());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Run run;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  auto take = [&rest](size_t n) {
    const std::string_view part = rest.substr(0, n);
    rest.remove_prefix(part.size());
    return part;
  };
  auto length = [&take] {
    const std::string_view two = take(2);
    size_t n = 0;
    for (size_t i = 0; i < two.size(); ++i) n |= static_cast<size_t>(static_cast<uint8_t>(two[i])) << (8 * i);
    return n;
  };
  const size_t model_length = length(), train_length = length();
  fuzz::write_bytes(checkpoint_model_path(run.in, 1), take(model_length));
  fuzz::write_bytes(checkpoint_train_path(run.in, 1), take(train_length));
  fuzz::write_bytes(run.in + "/latest", rest);

  std::optional<TrainingState> header;
  fuzz::expect_errors([&] {
    header = read_training_state(run.in);
    FUZZ_CHECK(header->epoch == 1);
  });

  const std::vector<float> before = run.values();
  TrainingState loaded;
  try {
    loaded = load_checkpoint(run.in, run.ctx, run.graph, run.net, run.sgd);
  } catch (const Error&) {
    FUZZ_CHECK(same_bits(run.values(), before));  // a refused checkpoint writes nothing
    return 0;
  } catch (const std::exception& e) {
    escaped("load_checkpoint", e);
  }
  FUZZ_CHECK(loaded.epoch == 1);
  FUZZ_CHECK(header.has_value() && same_state(*header, loaded));
  run.check_values();

  const std::vector<float> accepted = run.values();
  try {
    save_checkpoint(run.out, run.ctx, run.graph, run.net, run.sgd, loaded);
    run.fill(std::numeric_limits<float>::quiet_NaN());
    FUZZ_CHECK(same_state(load_checkpoint(run.out, run.ctx, run.graph, run.net, run.sgd), loaded));
  } catch (const std::exception& e) {
    escaped("saving and loading an accepted checkpoint again", e);
  }
  FUZZ_CHECK(same_bits(run.values(), accepted));
  return 0;
}
