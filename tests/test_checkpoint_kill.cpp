// tests/test_checkpoint_kill.cpp: a training run killed while it writes a
// checkpoint leaves a complete, consistent earlier one (train/checkpoint.h).
//
// A forked child writes the checkpoints of a 17 MB model in a loop, epoch
// after epoch, every value a function of the epoch; the parent kills it
// (SIGKILL: no handler, no clean-up) at random moments, loads the checkpoint
// `latest` names, and checks that every parameter, running statistic and
// momentum buffer, and the training state, are those of one epoch the child
// finished. Then a new child goes on from there, as a resumed run would.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include "graph/builder.h"
#include "train/checkpoint.h"
#include "tensor/copy.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

using Clock = std::chrono::steady_clock;

// conv1 bn1 relu1 flatten fc1 (1024 -> 4096: 4.2 M weights) fc2: 17 MB of
// parameters, so that a checkpoint takes long enough to be killed inside.
Graph big(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 8, 8});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 16, .kernel = 3, .pad = 1}, "conv1"), {}, "bn1"), "relu1");
  x = g.linear(g.flatten(x, "flatten"), {.out_features = 4096}, "fc1");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 10}, "fc2"), labels));
}

const NetSpec kBig{.name = "Big", .sample = Shape{3, 8, 8}, .classes = 10, .gpu_batch = 2, .cpu_batch = 2, .build = big};

// Every value of epoch e: a function of the epoch and the element's place.
float value(int epoch, size_t i, float sign) { return sign * (static_cast<float>(epoch) + static_cast<float>(i % 997) * 0.25f); }

// Plain loops over host memory: the child must not start OpenMP threads
// (Note [No OpenMP after fork] below), and on the CPU these tensors are host memory.
void fill(const Tensor& t, int epoch, float sign) {
  float* data = t.data<float>();
  for (size_t i = 0; i < static_cast<size_t>(t.numel()); ++i) data[i] = value(epoch, i, sign);
}

bool holds(Context& ctx, const Tensor& t, int epoch, float sign) {
  const std::vector<float> v = to_vector<float>(ctx, t);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != value(epoch, i, sign)) return false;
  }
  return true;
}

struct Model {
  Graph graph;
  Sgd sgd;
  explicit Model(Context& ctx) : graph(compiled(ctx)), sgd(ctx, graph.parameters(), graph.gradients(), {}) {}
  static Graph compiled(Context& ctx) {
    Graph g = big(2);
    g.compile(ctx);
    return g;
  }
  void set_epoch(int epoch) {
    for (const NamedTensor& p : graph.named_parameters()) fill(p.tensor, epoch, 1.0f);
    for (const NamedTensor& s : graph.named_state()) fill(s.tensor, epoch, 2.0f);
    for (const NamedTensor& v : graph.named_views(sgd.velocity())) fill(v.tensor, epoch, -1.0f);
  }
  // Whether everything is epoch `epoch`'s; names the first tensor that is not.
  std::string check(Context& ctx, int epoch) {
    for (const NamedTensor& p : graph.named_parameters()) {
      if (!holds(ctx, p.tensor, epoch, 1.0f)) return p.name;
    }
    for (const NamedTensor& s : graph.named_state()) {
      if (!holds(ctx, s.tensor, epoch, 2.0f)) return s.name;
    }
    for (const NamedTensor& v : graph.named_views(sgd.velocity())) {
      if (!holds(ctx, v.tensor, epoch, -1.0f)) return "momentum of " + v.name;
    }
    return "";
  }
};

TrainingState state_of(int epoch) {
  return {.epoch = epoch, .step = 10 * int64_t{epoch}, .run_id = "00000000000000b1",
          .config = {{"net", "Big"}, {"epoch_squared", cat(epoch * epoch)}}};
}

// Note [No OpenMP after fork]: the child is forked from a process whose
// OpenMP runtime may have started threads (other tests ran first); a runtime
// that is not fork-safe (libgomp) can hang in the child's first parallel
// region. The child's work, filling host memory in plain loops and
// save_checkpoint (copies, JSON, writes), starts none. It leaves with _exit:
// no destructors, no LeakSanitizer pass over a copy of the parent's heap.
[[noreturn]] void write_forever(Context& ctx, Model& model, const std::string& dir, int first_epoch) {
  try {
    for (int epoch = first_epoch;; ++epoch) {
      model.set_epoch(epoch);
      save_checkpoint(dir, ctx, model.graph, kBig, model.sgd, state_of(epoch));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint writer: %s\n", e.what());
  }
  _exit(1);
}

int temporaries(const std::string& dir) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    count += entry.path().filename().string().find(".tmp.") != std::string::npos;
  }
  return count;
}

TEST(CheckpointKill, AWriterKilledMidWriteLeavesACompleteEarlierCheckpoint) {
  Context ctx = Context::cpu();
  testing::TempDir dir;
  const std::string run = dir.file("run");
  Model writer(ctx), reader(ctx);

  // How long one checkpoint takes here: the kills fall within two of them.
  auto start = Clock::now();
  writer.set_epoch(0);
  save_checkpoint(run, ctx, writer.graph, kBig, writer.sgd, state_of(0));
  const auto one_save = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int64_t> moment(0, 2 * one_save.count());

  // At least six kills, and on until one has fallen inside a write (a temporary left), which the test is for.
  int epoch = 0, interrupted = 0, kills = 0;
  for (int round = 0; round < 40 && (round < 6 || interrupted == 0); ++round, ++kills) {
    const pid_t child = fork();
    ASSERT_GE(child, 0) << "fork failed";
    if (child == 0) write_forever(ctx, writer, run, epoch + 1);
    // Wait for the child's first checkpoint, then kill it at a random moment.
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (read_training_state(run).epoch <= epoch && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(moment(random)));
    kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer stopped by itself before it was killed (status " << status << "); see its message above";
    interrupted += temporaries(run) > 0;

    const TrainingState loaded = load_checkpoint(run, ctx, reader.graph, kBig, reader.sgd);
    EXPECT_GT(loaded.epoch, epoch) << "round " << round << ": the checkpoint went back";
    EXPECT_EQ(loaded.step, 10 * int64_t{loaded.epoch});
    EXPECT_EQ(loaded.config, state_of(loaded.epoch).config);
    EXPECT_EQ(loaded.run_id, state_of(loaded.epoch).run_id);
    EXPECT_EQ(reader.check(ctx, loaded.epoch), "") << "round " << round << ": not all of epoch " << loaded.epoch;
    epoch = loaded.epoch;
  }
  std::printf("%d kills, %d inside a write (temporaries left); the last checkpoint: epoch %d; one save: %.0f ms\n",
              kills, interrupted, epoch, one_save.count() / 1000.0);
  EXPECT_GT(interrupted, 0) << "no kill of " << kills << " fell inside a write";
  // The next save removes what the killed writers left.
  writer.set_epoch(epoch + 1);
  save_checkpoint(run, ctx, writer.graph, kBig, writer.sgd, state_of(epoch + 1));
  EXPECT_EQ(temporaries(run), 0);
}

}  // namespace
}  // namespace glassbox
