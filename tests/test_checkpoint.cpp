// tests/test_checkpoint.cpp: model files and checkpoint directories
// (train/checkpoint.h) on a small network with batch norm and dropout,
// trained a few SGD steps on the CPU: a model file restores parameters and
// running statistics bit for bit; a checkpoint restores the whole run
// (momentum and training state too) so that the next step is the same; a
// PyTorch state_dict loads and gives PyTorch's logits; every file that does
// not fit is refused, naming the file, the tensors and both shapes, before
// anything is written; so are values training cannot leave, and a
// checkpoint whose two files are not of one run and step; a directory a run
// writes into is locked. A writer killed mid-write: tests/test_checkpoint_kill.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "graph/builder.h"
#include "train/checkpoint.h"
#include "tensor/copy.h"
#include "tensor/safetensors.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"
#include "tests/support/harness.h"
#include "tests/support/named_pipe.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

// conv1 (3x3, pad 1) bn1 relu1 pool1 (2x2) flatten drop1 fc: (N, 1, 6, 6) -> 4 classes.
// tests/data/make_torch_tiny.py builds the same network in PyTorch.
Graph tiny(int batch, int filters) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 1, 6, 6});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = filters, .kernel = 3, .pad = 1}, "conv1"), {}, "bn1"), "relu1");
  x = g.max_pool(x, {.kernel = 2, .stride = 2}, "pool1");
  x = g.dropout(g.flatten(x, "flatten"), {.p = 0.5f}, "drop1");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 4}, "fc"), labels));
}

NetSpec tiny_net(int filters = 3) {
  return {.name = "Tiny", .description = "a test network", .sample = Shape{1, 6, 6}, .classes = 4,
          .gpu_batch = 4, .cpu_batch = 4, .build = [filters](int batch) { return tiny(batch, filters); }};
}

// A compiled network with its optimizer and a fixed batch.
struct TinyRun {
  Graph graph;
  Sgd sgd;
  TinyRun(Context& ctx, const NetSpec& net, uint64_t seed, int batch = 4)
      : graph(compiled(ctx, net, seed, batch)),
        sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f}) {
    const int64_t n = graph.input("images").numel();
    from_vector<float>(ctx, testing::random_values(n, 11), graph.input("images"));
    std::vector<int> labels(static_cast<size_t>(batch));
    for (int i = 0; i < batch; ++i) labels[static_cast<size_t>(i)] = i % 4;
    from_vector<int>(ctx, labels, graph.input("labels"));
  }
  static Graph compiled(Context& ctx, const NetSpec& net, uint64_t seed, int batch) {
    Graph graph = net.build(batch);
    graph.compile(ctx, {.seed = seed, .memory_reuse = MemoryReuse::kOff});
    return graph;
  }
  void step(Context& ctx) {
    graph.zero_grad(ctx);
    graph.forward(ctx);
    graph.backward(ctx);
    sgd.step(ctx);
  }
  float inference_loss(Context& ctx) {
    graph.forward(ctx, Phase::kInference);
    return graph.loss(ctx);
  }
};

std::vector<float> values(Context& ctx, const std::vector<NamedTensor>& tensors) {
  std::vector<float> all;
  for (const NamedTensor& t : tensors) {
    const std::vector<float> v = to_vector<float>(ctx, t.tensor);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// Equal bit for bit (== would take -0 for 0 and miss NaN).
void expect_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what << " differ";
}

std::vector<float> parameters(Context& ctx, const Graph& g) { return values(ctx, g.named_parameters()); }
std::vector<float> statistics(Context& ctx, const Graph& g) { return values(ctx, g.named_state()); }

// A checkpoint's training state at `epoch` and `step` of a run whose id is `run_id`.
TrainingState at(int epoch, int64_t step, const std::string& run_id = "0123456789abcdef") {
  return {.epoch = epoch, .step = step, .run_id = run_id};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The message of the error `read` throws, run so that a reader that blocks
// on the named pipe `fifo` fails the test instead of hanging it.
std::string refusal_of(const std::string& fifo, const std::function<void()>& read) {
  return testing::without_blocking_on(fifo, [&] { return error_of(read); });
}

TEST(Checkpoint, AModelFileRestoresParametersAndStatisticsBitForBit) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun trained(ctx, net, 1);
  for (int i = 0; i < 3; ++i) trained.step(ctx);
  const std::string path = dir.file("tiny.safetensors");
  save_model(path, ctx, trained.graph, net, 3, {{"note", "three steps"}});

  // The file: PyTorch's state_dict order and names, the int64 scalar, the metadata.
  const SafetensorsFile file = read_safetensors(path);
  std::vector<std::string> names;
  for (const HostTensor& t : file.tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias",
                                             "bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked",
                                             "fc.weight", "fc.bias"}));
  const HostTensor& tracked = *file.find("bn1.num_batches_tracked");
  EXPECT_EQ(tracked.dtype, "I64");
  EXPECT_TRUE(tracked.shape.empty());
  int64_t count = 0;
  std::memcpy(&count, tracked.bytes.data(), sizeof count);
  EXPECT_EQ(count, 3);
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"net", "Tiny"}, {"note", "three steps"}}));

  TinyRun fresh(ctx, net, 99);  // other initial values
  ASSERT_NE(parameters(ctx, fresh.graph), parameters(ctx, trained.graph));
  load_model(path, ctx, fresh.graph, net);
  expect_bits(parameters(ctx, fresh.graph), parameters(ctx, trained.graph), "parameters");
  expect_bits(statistics(ctx, fresh.graph), statistics(ctx, trained.graph), "running statistics");
  const std::vector<float> running_var = to_vector<float>(ctx, fresh.graph.named_state()[1].tensor);
  EXPECT_NE(running_var, std::vector<float>(3, 1.0f)) << "the statistics were trained, not the initial ones";
  EXPECT_EQ(fresh.inference_loss(ctx), trained.inference_loss(ctx));
}

// tests/data/torch_tiny.safetensors is PyTorch's state_dict of the same
// network (tests/data/make_torch_tiny.py), with random batch-norm statistics;
// torch_tiny_io.safetensors has images and PyTorch's eval-mode logits.
TEST(Checkpoint, APyTorchStateDictGivesPyTorchsLogits) {
  Context ctx = Context::cpu();
  const NetSpec net = tiny_net();
  Graph graph = net.build(2);
  graph.compile(ctx, {.phase = Phase::kInference, .memory_reuse = MemoryReuse::kOff});
  load_model(std::string(GLASSBOX_TEST_DATA_DIR) + "/torch_tiny.safetensors", ctx, graph, net);
  const SafetensorsFile io = read_safetensors(std::string(GLASSBOX_TEST_DATA_DIR) + "/torch_tiny_io.safetensors");
  auto floats = [](const HostTensor& t) {
    std::vector<float> v(t.bytes.size() / sizeof(float));
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    return v;
  };
  from_vector<float>(ctx, floats(*io.find("images")), graph.input("images"));
  from_vector<int>(ctx, std::vector<int>{0, 1}, graph.input("labels"));
  graph.forward(ctx, Phase::kInference);
  const Node& loss = graph.nodes()[static_cast<size_t>(graph.loss_node())];
  const std::vector<float> logits = to_vector<float>(ctx, graph.nodes()[static_cast<size_t>(loss.inputs[0])].value);
  const std::vector<float> expected = floats(*io.find("logits"));
  ASSERT_EQ(logits.size(), expected.size());
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(logits[i], expected[i], 1e-6) << "logit " << i;
}

TEST(Checkpoint, ACheckpointRestoresTheWholeRunAndTheNextStepIsTheSame) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun trained(ctx, net, 1);
  for (int i = 0; i < 3; ++i) trained.step(ctx);
  const TrainingState state{
      .epoch = 2, .step = 3, .run_id = new_run_id(), .config = {{"lr", "0.05"}, {"net", "Tiny"}}};
  EXPECT_FALSE(has_checkpoint(dir.path()));
  const std::string run = dir.file("run");  // made by save_checkpoint
  save_checkpoint(run, ctx, trained.graph, net, trained.sgd, state);
  ASSERT_TRUE(has_checkpoint(run));
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(run)) files.insert(entry.path().filename());
  EXPECT_EQ(files, (std::set<std::string>{"epoch-0002.safetensors", "epoch-0002.train.safetensors", "latest"}));
  std::ifstream latest(run + "/latest");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(latest), {}), "epoch-0002\n");
  EXPECT_EQ(checkpoint_model_path(run, 2), run + "/epoch-0002.safetensors");
  EXPECT_EQ(checkpoint_model_path(run + "/", 12345), run + "/epoch-12345.safetensors");

  const SafetensorsFile train = read_safetensors(run + "/epoch-0002.train.safetensors");
  EXPECT_EQ(train.tensors.front().name, "momentum_buffer.conv1.weight");
  EXPECT_EQ(train.tensors.size(), 6u);  // one per parameter
  EXPECT_EQ(train.metadata.at("config.lr"), "0.05");
  EXPECT_EQ(train.metadata.at("step"), "3");
  EXPECT_EQ(train.metadata.at("run_id"), state.run_id);
  // The model file carries the same run, epoch and step: the two are one checkpoint.
  const SafetensorsFile model = read_safetensors(run + "/epoch-0002.safetensors");
  EXPECT_EQ(model.metadata.at("epoch"), "2");
  EXPECT_EQ(model.metadata.at("step"), "3");
  EXPECT_EQ(model.metadata.at("run_id"), state.run_id);

  const TrainingState header_only = read_training_state(run);
  EXPECT_EQ(header_only.epoch, 2);
  EXPECT_EQ(header_only.step, 3);
  EXPECT_EQ(header_only.run_id, state.run_id);
  EXPECT_EQ(header_only.config, state.config);

  TinyRun resumed(ctx, net, 99);
  const TrainingState loaded = load_checkpoint(run, ctx, resumed.graph, net, resumed.sgd);
  EXPECT_EQ(loaded.epoch, 2);
  EXPECT_EQ(loaded.step, 3);
  EXPECT_EQ(loaded.run_id, state.run_id);
  EXPECT_EQ(loaded.config, state.config);
  expect_bits(parameters(ctx, resumed.graph), parameters(ctx, trained.graph), "parameters");
  expect_bits(statistics(ctx, resumed.graph), statistics(ctx, trained.graph), "running statistics");
  expect_bits(to_vector<float>(ctx, resumed.sgd.velocity()), to_vector<float>(ctx, trained.sgd.velocity()), "momentum");
  // The same dropout masks on both sides, then the same step.
  for (TinyRun* r : {&trained, &resumed}) {
    ctx.rng().seed(7);
    r->step(ctx);
  }
  expect_bits(parameters(ctx, resumed.graph), parameters(ctx, trained.graph), "parameters one step later");

  save_checkpoint(run, ctx, trained.graph, net, trained.sgd, at(3, 4, state.run_id));
  EXPECT_EQ(read_training_state(run).epoch, 3);
  EXPECT_TRUE(std::filesystem::exists(run + "/epoch-0002.safetensors")) << "earlier epochs are kept";
}

// Files hold values, not devices: a run trained on a GPU resumes on the CPU
// and back, every value the same (through tensor/copy.h on both sides).
TEST(Checkpoint, ACheckpointMovesBetweenAGpuAndTheCpu) {
  GLASSBOX_REQUIRE_CUDA();
  Context gpu = Context::cuda(), cpu = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun on_gpu(gpu, net, 1);
  for (int i = 0; i < 2; ++i) on_gpu.step(gpu);
  save_checkpoint(dir.file("gpu"), gpu, on_gpu.graph, net, on_gpu.sgd, at(1, 2));
  TinyRun on_cpu(cpu, net, 9);
  load_checkpoint(dir.file("gpu"), cpu, on_cpu.graph, net, on_cpu.sgd);
  expect_bits(parameters(cpu, on_cpu.graph), parameters(gpu, on_gpu.graph), "parameters, GPU to CPU");
  expect_bits(statistics(cpu, on_cpu.graph), statistics(gpu, on_gpu.graph), "statistics, GPU to CPU");
  expect_bits(to_vector<float>(cpu, on_cpu.sgd.velocity()), to_vector<float>(gpu, on_gpu.sgd.velocity()), "momentum");
  save_model(dir.file("cpu.safetensors"), cpu, on_cpu.graph, net, 2);
  TinyRun back(gpu, net, 5);
  load_model(dir.file("cpu.safetensors"), gpu, back.graph, net);
  expect_bits(parameters(gpu, back.graph), parameters(gpu, on_gpu.graph), "parameters, CPU to GPU");
  expect_bits(statistics(gpu, back.graph), statistics(gpu, on_gpu.graph), "statistics, CPU to GPU");
}

// ---- Strictness: a file that does not fit is refused, before anything is written ----

// Rewrites the model file at `path` through `edit`.
void edit_file(const std::string& path, const std::function<void(SafetensorsFile&)>& edit) {
  SafetensorsFile file = read_safetensors(path);
  edit(file);
  write_safetensors(path, file);
}

TEST(Checkpoint, LoadingIsStrictAndNamesEveryProblem) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun run(ctx, net, 1);
  const std::vector<float> before = parameters(ctx, run.graph);
  const std::vector<float> statistics_before = statistics(ctx, run.graph);
  const std::string path = dir.file("m.safetensors");
  auto load_error = [&] {
    const std::string e = error_of([&] { load_model(path, ctx, run.graph, net); });
    // Refused files leave the graph as it was.
    expect_bits(parameters(ctx, run.graph), before, "parameters after a refused file");
    expect_bits(statistics(ctx, run.graph), statistics_before, "statistics after a refused file");
    const std::string prefix = path + ": does not match Tiny: ";
    EXPECT_EQ(e.rfind(prefix, 0), 0u) << e;
    return e.substr(std::min(prefix.size(), e.size()));
  };

  // Five filters where Tiny has three: every shape named, the first five, then a count.
  TinyRun wide(ctx, tiny_net(5), 2);
  save_model(path, ctx, wide.graph, tiny_net(5), 0);
  EXPECT_EQ(load_error(),
            "conv1.weight: the file has (5, 1, 3, 3), Tiny expects (3, 1, 3, 3); "
            "conv1.bias: the file has (5), Tiny expects (3); bn1.weight: the file has (5), Tiny expects (3); "
            "bn1.bias: the file has (5), Tiny expects (3); bn1.running_mean: the file has (5), Tiny expects (3); "
            "and 2 more of another shape or dtype");

  save_model(path, ctx, run.graph, net, 0);
  edit_file(path, [](SafetensorsFile& f) { std::erase_if(f.tensors, [](const HostTensor& t) { return t.name == "fc.bias"; }); });
  EXPECT_EQ(load_error(), "1 missing: fc.bias");

  save_model(path, ctx, run.graph, net, 0);
  edit_file(path, [](SafetensorsFile& f) {
    f.tensors.push_back(f.tensors.front());
    f.tensors.back().name = "aux.weight";
  });
  EXPECT_EQ(load_error(), "1 unexpected: aux.weight");

  // What the file declares is quoted as an excerpt: a shape of thousands of
  // dimensions cut, an unexpected name escaped and cut.
  save_model(path, ctx, run.graph, net, 0);
  edit_file(path, [](SafetensorsFile& f) {
    f.tensors.front().shape.assign(3000, 1);  // conv1.weight's 27 values as (27, 1, 1, ..., 1)
    f.tensors.front().shape[0] = 27;
    for (const std::string& name : {std::string("aux\x1b[2J.weight"), std::string(300, 'a')}) {
      f.tensors.push_back(f.tensors[1]);
      f.tensors.back().name = name;
    }
  });
  std::string shape = "(27";
  for (int i = 1; i < 3000; ++i) shape += ", 1";
  shape += ")";
  ASSERT_EQ(shape.size(), 9001u);
  EXPECT_EQ(load_error(), "conv1.weight: the file has " + shape.substr(0, 120) + "... (9,001 bytes), Tiny expects "
                          "(3, 1, 3, 3); 2 unexpected: aux\\x1b[2J.weight, " + std::string(120, 'a') +
                          "... (300 bytes)");

  save_model(path, ctx, run.graph, net, 0);
  edit_file(path, [](SafetensorsFile& f) {
    HostTensor& w = f.tensors.front();
    w.dtype = "F16";
    w.bytes.resize(w.bytes.size() / 2);
    HostTensor& tracked = f.tensors[6];
    tracked.dtype = "I32";
    tracked.bytes.resize(4);
  });
  EXPECT_EQ(load_error(), "conv1.weight: the file has F16 (3, 1, 3, 3), Tiny expects F32 (3, 1, 3, 3); "
                          "bn1.num_batches_tracked: the file has I32 (), Tiny expects I64 ()");

  // Another network's file altogether: the first five names, then a count.
  Graph lenet_graph = find_net("LeNet").build(1);
  lenet_graph.compile(ctx, {.phase = Phase::kInference});
  save_model(path, ctx, lenet_graph, find_net("LeNet"), 0);
  EXPECT_EQ(load_error(),
            "conv1.weight: the file has (6, 1, 5, 5), Tiny expects (3, 1, 3, 3); "
            "conv1.bias: the file has (6), Tiny expects (3); 7 missing: bn1.weight, bn1.bias, bn1.running_mean, "
            "bn1.running_var, bn1.num_batches_tracked and 2 more; 8 unexpected: conv2.weight, conv2.bias, fc3.weight, "
            "fc3.bias, fc4.weight and 3 more");
}

TEST(Checkpoint, BrokenCheckpointDirectoriesAreRefusedByName) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun run(ctx, net, 1);
  const std::string ckpt = dir.file("ckpt");
  auto load = [&] { return error_of([&] { load_checkpoint(ckpt, ctx, run.graph, net, run.sgd); }); };
  EXPECT_EQ(load(), ckpt + "/latest: cannot open it (no checkpoint in " + ckpt + "?)");
  EXPECT_EQ(error_of([&] { read_training_state(ckpt); }), ckpt + "/latest: cannot open it (no checkpoint in " + ckpt + "?)");

  save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, at(1, 6));
  std::ofstream(ckpt + "/latest") << "epoch-1\n";
  EXPECT_EQ(load(), ckpt + "/latest: 'epoch-1' does not name an epoch's checkpoint (epoch-0003)");
  std::ofstream(ckpt + "/latest") << "epoch-0007\n";
  EXPECT_EQ(load(), ckpt + "/epoch-0007.train.safetensors: cannot read: No such file or directory");

  const std::string train = ckpt + "/epoch-0001.train.safetensors";
  std::ofstream(ckpt + "/latest") << "epoch-0001\n";
  edit_file(train, [](SafetensorsFile& f) { f.metadata["epoch"] = "2"; });
  EXPECT_EQ(load(), train + ": its __metadata__ says epoch 2, its name says epoch-0001");
  edit_file(train, [](SafetensorsFile& f) { f.metadata["epoch"] = "one"; });
  EXPECT_EQ(load(), train + ": __metadata__ \"epoch\" must be an integer from 0 to 2147483647, got 'one'");
  edit_file(train, [](SafetensorsFile& f) {
    f.metadata["epoch"] = "1";
    f.metadata.erase("step");
  });
  EXPECT_EQ(load(), train + ": no \"step\" in its __metadata__");
  edit_file(train, [](SafetensorsFile& f) {
    f.metadata["step"] = "6";
    f.tensors.pop_back();
  });
  EXPECT_EQ(load(), train + ": does not match Tiny: 1 missing: momentum_buffer.fc.bias");

  // The model file refused: the momentum file, though fine, was not written in either.
  save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, at(1, 6));
  const std::vector<float> velocity = to_vector<float>(ctx, run.sgd.velocity());
  TinyRun other(ctx, net, 5);
  for (int i = 0; i < 2; ++i) other.step(ctx);
  save_checkpoint(ckpt, ctx, other.graph, net, other.sgd, at(1, 6));
  edit_file(ckpt + "/epoch-0001.safetensors", [](SafetensorsFile& f) { f.tensors.pop_back(); });
  EXPECT_EQ(load(), ckpt + "/epoch-0001.safetensors: does not match Tiny: 1 missing: fc.bias");
  expect_bits(to_vector<float>(ctx, run.sgd.velocity()), velocity, "momentum after a refused checkpoint");

  EXPECT_EQ(error_of([&] { save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, {.epoch = -1}); }),
            "save_checkpoint: epoch -1 is negative");
  std::ofstream(dir.file("a_file")) << "x";
  EXPECT_EQ(error_of([&] { save_checkpoint(dir.file("a_file/ckpt"), ctx, run.graph, net, run.sgd, at(0, 0)); }),
            "cannot make the checkpoint directory '" + dir.file("a_file/ckpt") + "': Not a directory");
}

// `latest` is read as what it is, one line in a regular file: a named pipe
// in its place is refused at once, not waited on; a file past 4 KiB is
// refused without being read; what it holds is quoted escaped and cut.
TEST(Checkpoint, ALatestThatIsNotOneLineOfARegularFileIsRefused) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun run(ctx, net, 1);
  const std::string ckpt = dir.file("ckpt"), latest = ckpt + "/latest";
  save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, at(1, 6));
  auto load = [&] { return error_of([&] { load_checkpoint(ckpt, ctx, run.graph, net, run.sgd); }); };

  std::filesystem::remove(latest);
  ASSERT_EQ(::mkfifo(latest.c_str(), 0600), 0) << latest;
  const std::string pipe = latest + ": cannot read: Is a named pipe, not a regular file";
  EXPECT_EQ(refusal_of(latest, [&] { load_checkpoint(ckpt, ctx, run.graph, net, run.sgd); }), pipe);
  EXPECT_EQ(refusal_of(latest, [&] { read_training_state(ckpt); }), pipe);
  // A new run into the directory calls it broken rather than waiting on it.
  EXPECT_TRUE(testing::contains(refusal_of(latest, [&] { (void)start_checkpoint_dir(ckpt, false); }),
                                " holds another run's checkpoints (a broken latest), "));
  std::filesystem::remove(latest);

  std::ofstream(latest) << "epoch-\x1b[2J0001\r\n";
  EXPECT_EQ(load(), latest + ": 'epoch-\\x1b[2J0001\\r' does not name an epoch's checkpoint (epoch-0003)");
  std::ofstream(latest) << std::string(1000, 'e') << "\n";
  EXPECT_EQ(load(), latest + ": '" + std::string(40, 'e') + "... (1,000 bytes)' does not name an epoch's checkpoint "
                                                            "(epoch-0003)");
  std::ofstream(latest) << std::string(5000, 'e');
  EXPECT_EQ(load(), latest + ": cannot read: it has 5,000 bytes, past the limit of 4,096 for a checkpoint's latest "
                             "file (it holds one line)");
  std::ofstream(latest) << "epoch-0001\n";
  EXPECT_EQ(load(), "(no error)");
}

// A checkpoint is one unit: its two files carry one run id and one step, and
// a file copied in from another run (its learning rate, its momentum) is
// refused naming both, before anything is written.
TEST(Checkpoint, TheTwoFilesOfACheckpointMustBeOneRunsAtOneStep) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun run(ctx, net, 1), other(ctx, net, 5);
  other.step(ctx);
  const std::string mine = dir.file("mine"), theirs = dir.file("theirs");
  const std::string model = mine + "/epoch-0001.safetensors", train = mine + "/epoch-0001.train.safetensors";
  const std::string my_id = new_run_id(), their_id = new_run_id();
  ASSERT_EQ(my_id.size(), 16u);
  EXPECT_EQ(my_id.find_first_not_of("0123456789abcdef"), std::string::npos) << my_id;
  ASSERT_NE(my_id, their_id);
  save_checkpoint(mine, ctx, run.graph, net, run.sgd, at(1, 6, my_id));
  save_checkpoint(theirs, ctx, other.graph, net, other.sgd, at(1, 6, their_id));

  TinyRun target(ctx, net, 9);
  const std::vector<float> before = parameters(ctx, target.graph);
  const std::vector<float> velocity = to_vector<float>(ctx, target.sgd.velocity());
  auto load = [&] {
    const std::string e = error_of([&] { load_checkpoint(mine, ctx, target.graph, net, target.sgd); });
    expect_bits(parameters(ctx, target.graph), before, "parameters after a refused checkpoint");
    expect_bits(to_vector<float>(ctx, target.sgd.velocity()), velocity, "momentum after a refused checkpoint");
    return e;
  };
  std::filesystem::copy_file(theirs + "/epoch-0001.train.safetensors", train,
                             std::filesystem::copy_options::overwrite_existing);
  const std::string not_one = model + " and " + train + " are not one checkpoint: the model file's ";
  EXPECT_EQ(load(), not_one + "\"run_id\" is '" + my_id + "', the train file's '" + their_id +
                        "' (was one of them copied from another run or epoch?)");
  EXPECT_EQ(error_of([&] { read_training_state(mine); }),
            not_one + "\"run_id\" is '" + my_id + "', the train file's '" + their_id +
                "' (was one of them copied from another run or epoch?)");

  save_checkpoint(mine, ctx, run.graph, net, run.sgd, at(1, 6, my_id));
  edit_file(model, [](SafetensorsFile& f) { f.metadata["step"] = "7"; });
  EXPECT_EQ(load(), not_one + "\"step\" is '7', the train file's '6' (was one of them copied from another run or epoch?)");
  edit_file(model, [](SafetensorsFile& f) { f.metadata["epoch"] = "2"; });
  EXPECT_EQ(load(), model + ": its __metadata__ says epoch 2, its name says epoch-0001");
  edit_file(model, [](SafetensorsFile& f) { f.metadata.erase("step"); });
  EXPECT_EQ(load(), model + ": no \"step\" in its __metadata__");

  // Every file carries a well-formed run id; a checkpoint without (written
  // before run ids) is refused, naming the file and the field.
  save_checkpoint(mine, ctx, run.graph, net, run.sgd, at(1, 6, my_id));
  edit_file(model, [](SafetensorsFile& f) { f.metadata.erase("run_id"); });
  edit_file(train, [](SafetensorsFile& f) { f.metadata.erase("run_id"); });
  EXPECT_EQ(load(), train + ": no \"run_id\" in its __metadata__");
  edit_file(train, [](SafetensorsFile& f) { f.metadata["run_id"] = "run-7"; });
  EXPECT_EQ(load(), train + ": its __metadata__ \"run_id\" is 'run-7', not a run id (16 hex digits)");
  EXPECT_EQ(testing::message_of<ConfigError>([&] { save_checkpoint(mine, ctx, run.graph, net, run.sgd, at(2, 7, "")); }),
            "save_checkpoint: the run id '' is not 16 hex digits (new_run_id())");
}

// Values training cannot leave are refused naming the file, the tensor, the
// element and the value, before anything is written: load_model's and so
// eval's and a resume's.
TEST(Checkpoint, ValuesTrainingCannotLeaveAreRefusedNamingTheElement) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun trained(ctx, net, 1);
  trained.step(ctx);
  TinyRun run(ctx, net, 2);
  const std::vector<float> before = parameters(ctx, run.graph);
  const std::vector<float> statistics_before = statistics(ctx, run.graph);
  const std::string path = dir.file("m.safetensors");
  // The model file with element `i` of tensor `name` set to `value`; then its load's error.
  auto refused = [&](const std::string& name, int64_t i, float value) {
    save_model(path, ctx, trained.graph, net, 1);
    edit_file(path, [&](SafetensorsFile& f) {
      for (HostTensor& t : f.tensors) {
        if (t.name == name) std::memcpy(t.bytes.data() + i * 4, &value, 4);
      }
    });
    const std::string e = error_of([&] { load_model(path, ctx, run.graph, net); });
    expect_bits(parameters(ctx, run.graph), before, "parameters after a refused file");
    expect_bits(statistics(ctx, run.graph), statistics_before, "statistics after a refused file");
    return e;
  };
  const std::string finite = "; a model or checkpoint file holds finite values";
  // conv1.weight is (3, 1, 3, 3): element 12 is [1, 0, 1, 0].
  EXPECT_EQ(refused("conv1.weight", 12, std::nanf("")), path + ": conv1.weight[1, 0, 1, 0] is nan" + finite);
  EXPECT_EQ(refused("conv1.bias", 2, -INFINITY), path + ": conv1.bias[2] is -inf" + finite);
  EXPECT_EQ(refused("bn1.running_mean", 0, INFINITY), path + ": bn1.running_mean[0] is inf" + finite);
  EXPECT_EQ(refused("bn1.running_var", 1, -0.5f), path + ": bn1.running_var[1] is -0.5; a variance is never negative");
  // fc.weight is (4, 27).
  EXPECT_EQ(refused("fc.weight", 30, 1e38f),
            path + ": fc.weight[1, 3] is 1e+38; fp32 training keeps weights and momentum within 1.8e19 "
                   "(Note [How large a trained value can be])");
  EXPECT_EQ(refused("fc.bias", 3, -2e19f),
            path + ": fc.bias[3] is -2e+19; fp32 training keeps weights and momentum within 1.8e19 "
                   "(Note [How large a trained value can be])");
  save_model(path, ctx, trained.graph, net, 1);
  edit_file(path, [](SafetensorsFile& f) {
    const int64_t minus_one = -1;
    std::memcpy(f.tensors[6].bytes.data(), &minus_one, sizeof minus_one);  // bn1.num_batches_tracked
  });
  EXPECT_EQ(error_of([&] { load_model(path, ctx, run.graph, net); }),
            path + ": bn1.num_batches_tracked is -1; a count is never negative");

  // At the bound, and a variance of 0, are values training can leave.
  save_model(path, ctx, trained.graph, net, 1);
  edit_file(path, [](SafetensorsFile& f) {
    const float bound = 1.8e19f, zero = 0.0f;
    std::memcpy(f.tensors[7].bytes.data(), &bound, 4);  // fc.weight
    std::memcpy(f.tensors[5].bytes.data(), &zero, 4);   // bn1.running_var
  });
  load_model(path, ctx, run.graph, net);
  EXPECT_EQ(to_vector<float>(ctx, run.graph.named_parameters()[4].tensor)[0], 1.8e19f);

  // The momentum of a checkpoint, likewise, naming its train file.
  const std::string ckpt = dir.file("ckpt"), train = ckpt + "/epoch-0001.train.safetensors";
  save_checkpoint(ckpt, ctx, trained.graph, net, trained.sgd, at(1, 1));
  edit_file(train, [](SafetensorsFile& f) {
    const float nan = std::nanf("");
    std::memcpy(f.tensors[0].bytes.data() + 4, &nan, 4);  // momentum_buffer.conv1.weight[0, 0, 0, 1]
  });
  EXPECT_EQ(error_of([&] { load_checkpoint(ckpt, ctx, run.graph, net, run.sgd); }),
            train + ": momentum_buffer.conv1.weight[0, 0, 0, 1] is nan" + finite);

  // And the same rule when saving: no file is written that no load takes.
  const Tensor& bias = trained.graph.node("conv1").params[1];
  std::vector<float> values = to_vector<float>(ctx, bias);
  values[2] = std::nanf("");
  from_vector<float>(ctx, values, bias);
  const std::string unsaved = dir.file("unsaved.safetensors");
  EXPECT_EQ(testing::message_of<NumericalError>([&] { save_model(unsaved, ctx, trained.graph, net, 1); }),
            unsaved + ": not written: conv1.bias[2] is nan" + finite + " (a load refuses such a file)");
  EXPECT_FALSE(std::filesystem::exists(unsaved));
}

// One run writes into a checkpoint directory at a time: a second lock on it,
// from another process or this one, is refused naming the holder, until the
// first is released; --overwrite removes nothing while it is held.
// Note [Temporary files of a killed writer]: a save removes the temporaries
// of the files a checkpoint writes, and --overwrite removes those files;
// neither touches a user's own file that merely starts with "epoch-".
TEST(Checkpoint, OnlyTheFilesACheckpointWritesAreItsOwn) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun run(ctx, net, 1);
  const std::string ckpt = dir.file("ckpt");
  std::filesystem::create_directories(ckpt);
  const std::vector<std::string> users = {"epoch-notes.tmp.txt", "epoch-1.safetensors", "epoch-0001.pt",
                                          "latest.txt", "epoch-0001.safetensors.tmp.toolong"};
  for (const std::string& name : users) std::ofstream(ckpt + "/" + name) << "mine\n";
  EXPECT_TRUE(checkpoint_files(ckpt).empty()) << "a user's file counted as a checkpoint";
  const std::vector<std::string> stale = {"epoch-0002.safetensors.tmp.Ab12Cd", "epoch-0002.train.safetensors.tmp.x1Y2z3",
                                          "latest.tmp.000000"};
  for (const std::string& name : stale) std::ofstream(ckpt + "/" + name) << "cut short\n";
  EXPECT_EQ(checkpoint_files(ckpt), (std::vector<std::string>{"epoch-0002.safetensors.tmp.Ab12Cd",
                                                              "epoch-0002.train.safetensors.tmp.x1Y2z3",
                                                              "latest.tmp.000000"}));
  // A run killed inside its first save: no `latest`, so nothing to resume.
  EXPECT_EQ(testing::message_of<ConfigError>([&] { (void)start_checkpoint_dir(ckpt, false); }),
            "--checkpoint-dir " + ckpt + " holds the files of a run that stopped before its first checkpoint was "
            "whole (no latest: nothing to resume), 3 files: give --overwrite to remove them, or another directory");
  save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, at(1, 6));
  EXPECT_EQ(checkpoint_files(ckpt),
            (std::vector<std::string>{"epoch-0001.safetensors", "epoch-0001.train.safetensors", "latest"}));
  for (const std::string& name : users) EXPECT_TRUE(std::filesystem::exists(ckpt + "/" + name)) << name;
  (void)start_checkpoint_dir(ckpt, true);  // --overwrite
  EXPECT_TRUE(checkpoint_files(ckpt).empty());
  for (const std::string& name : users) EXPECT_TRUE(std::filesystem::exists(ckpt + "/" + name)) << name;
}

// The write check of a run killed as it started (its temporary, or the empty
// file itself) is no checkpoint, and the next start removes it.
TEST(Checkpoint, AWriteCheckLeftBehindIsRemovedByTheNextStart) {
  testing::TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  std::filesystem::create_directories(ckpt);
  for (const char* name : {"latest.write-check.tmp.3dnALO", "latest.write-check"}) std::ofstream(ckpt + "/" + name);
  EXPECT_TRUE(checkpoint_files(ckpt).empty());
  (void)start_checkpoint_dir(ckpt, false);
  for (const auto& entry : std::filesystem::directory_iterator(ckpt)) {
    EXPECT_EQ(entry.path().filename(), ".lock") << "left behind";
  }
}

// Note [A checkpoint whole or not at all]: a save that fails at its train
// file leaves no model file of that epoch, and `latest` on the epoch before.
TEST(Checkpoint, ASaveThatFailsPartWayLeavesNoFileOfItsEpoch) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun run(ctx, net, 1);
  const std::string ckpt = dir.file("ckpt");
  save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, at(1, 6));
  // A directory where the train file goes: its write is refused.
  std::filesystem::create_directories(ckpt + "/epoch-0002.train.safetensors");
  EXPECT_TRUE(testing::contains(error_of([&] { save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, at(2, 12)); }),
                                "epoch-0002.train.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(ckpt + "/epoch-0002.safetensors")) << "the model file of the failed save";
  EXPECT_TRUE(std::filesystem::is_directory(ckpt + "/epoch-0002.train.safetensors")) << "only files are removed";
  EXPECT_EQ(read_training_state(ckpt).epoch, 1);
}

// Nothing is written that no load takes: a negative step or count, a loss
// scale that is not finite; and a graph of another network than the NetSpec
// would be written under that network's names (Note [A model file is its
// network's], nets/torch_names.cpp).
TEST(Checkpoint, ASaveNoLoadWouldTakeIsRefusedAndWritesNothing) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun run(ctx, net, 1);
  const std::string ckpt = dir.file("ckpt");
  EXPECT_EQ(error_of([&] { save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, at(1, -7)); }),
            "save_checkpoint: step -7 is negative");
  TrainingState scaled = at(1, 6);
  scaled.loss_scale = LossScaleState{.scale = NAN, .clean_steps = 0, .skipped_steps = 0};
  EXPECT_TRUE(testing::contains(error_of([&] { save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, scaled); }),
                                "needs a finite scale >= 0 and counts >= 0"));
  scaled.loss_scale = LossScaleState{.scale = 1024.0f, .clean_steps = 0, .skipped_steps = -4};
  EXPECT_TRUE(testing::contains(error_of([&] { save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, scaled); }),
                                "needs a finite scale >= 0 and counts >= 0"));
  EXPECT_FALSE(std::filesystem::exists(ckpt + "/epoch-0001.safetensors"));
  EXPECT_EQ(error_of([&] { save_model(dir.file("m.safetensors"), ctx, run.graph, net, -5); }),
            "save_model: " + dir.file("m.safetensors") + ": batches_tracked -5 is negative; it counts optimizer steps");
  // The file's own keys are not the caller's to set: they would be overwritten, silently.
  for (const char* own : {"net", "format"}) {
    EXPECT_EQ(error_of([&] { save_model(dir.file("m.safetensors"), ctx, run.graph, net, 0, {{own, "mine"}}); }),
              cat("save_model: ", dir.file("m.safetensors"), ": the metadata key '", own, "' is the file's own "
                  "(\"format\": \"pt\", \"net\": the network's name); give the caller's value another key"));
  }
  EXPECT_EQ(error_of([] { (void)checkpoint_model_path("ck", -1); }), "a checkpoint's epoch is 0 or more, got -1");
  EXPECT_EQ(error_of([] { (void)checkpoint_train_path("ck", -1); }), "a checkpoint's epoch is 0 or more, got -1");
  EXPECT_EQ(error_of([&] { save_model(dir.file("m.safetensors"), ctx, run.graph, tiny_net(5), 0); }),
            "the graph is not Tiny's: its node 2 is conv1 (Conv2d, weight (3, 1, 3, 3), bias (3)), where Tiny has "
            "conv1 (Conv2d, weight (5, 1, 3, 3), bias (5))");
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.safetensors")));
  const std::string other = error_of([&] { save_checkpoint(ckpt, ctx, run.graph, tiny_net(5), run.sgd, at(1, 6)); });
  EXPECT_TRUE(testing::contains(other, "the graph is not Tiny's")) << other;
  EXPECT_FALSE(std::filesystem::exists(ckpt)) << "refused before the directory is made";
  save_model(dir.file("m.safetensors"), ctx, run.graph, net, 0);
  TinyRun wide(ctx, tiny_net(5), 1);
  EXPECT_TRUE(testing::contains(error_of([&] { load_model(dir.file("m.safetensors"), ctx, wide.graph, net); }),
                                "the graph is not Tiny's: its node 2 is conv1 (Conv2d, weight (5, 1, 3, 3)"));
}

TEST(Checkpoint, ADirectoryIsLockedWhileARunWritesIntoIt) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const NetSpec net = tiny_net();
  TinyRun run(ctx, net, 1);
  const std::string ckpt = dir.file("ckpt");
  save_checkpoint(ckpt, ctx, run.graph, net, run.sgd, at(1, 6));
  const std::string in_use = cat("--checkpoint-dir ", ckpt, " is in use by another run (process ", getpid(),
                                 " holds its lock)");
  {
    CheckpointDirLock first(ckpt);
    EXPECT_TRUE(first.held());
    EXPECT_EQ(testing::message_of<ConfigError>([&] { CheckpointDirLock second(ckpt); }), in_use);
    EXPECT_EQ(testing::message_of<ConfigError>([&] { (void)start_checkpoint_dir(ckpt, true); }), in_use);
    EXPECT_TRUE(has_checkpoint(ckpt)) << "a refused --overwrite removed the checkpoint";
    // The lock file is not a checkpoint file.
    EXPECT_TRUE(std::filesystem::exists(ckpt + "/.lock"));
    EXPECT_EQ(checkpoint_files(ckpt),
              (std::vector<std::string>{"epoch-0001.safetensors", "epoch-0001.train.safetensors", "latest"}));
    CheckpointDirLock moved = std::move(first);
    EXPECT_FALSE(first.held());
    EXPECT_EQ(testing::message_of<ConfigError>([&] { CheckpointDirLock second(ckpt); }), in_use);
  }
  {
    CheckpointDirLock again(ckpt);  // released with the last owner
    EXPECT_TRUE(again.held());
  }
  // --overwrite removes the checkpoints, not the lock file, and holds the lock.
  const CheckpointDirLock fresh = start_checkpoint_dir(ckpt, true);
  EXPECT_TRUE(fresh.held());
  EXPECT_TRUE(checkpoint_files(ckpt).empty());
  EXPECT_TRUE(std::filesystem::exists(ckpt + "/.lock"));
  EXPECT_EQ(testing::message_of<ConfigError>([&] { CheckpointDirLock second(ckpt); }), in_use);

  EXPECT_EQ(testing::message_of<Error>([&] { CheckpointDirLock none(dir.file("missing")); }),
            dir.file("missing") + "/.lock: cannot open and lock it, to write checkpoints into " + dir.file("missing") +
                ": No such file or directory");
}

}  // namespace
}  // namespace glassbox
