// tests/mpi/data_parallel_check.cpp: the data-parallel correctness check, run
// by CTest as `mpirun -np 2 data_parallel_check`: R ranks at batch B, each on
// its own rows of every global batch, end with the parameters that one
// process reaches at batch R x B on all the rows (within float rounding: the
// sum over ranks adds in another order).
//
// The network is an MLP, which has no batch norm: batch norm's statistics
// stay per rank (as in PyTorch's DDP), so a network with it does not match
// the one-process run exactly, by design. Momentum and weight decay are on,
// the buckets are small (several per step), and the check runs with overlap
// on and off, and in bf16 (whose layers read a 16-bit working copy of the
// parameters, while the buckets cover the fp32 gradients: within 2e-2, the
// working copy's rounding of weights that differ in their last fp32 bits).
// Exits 0 when every parameter matches, 1 otherwise, naming the worst.
//
// With an argument, a fault in the middle of a step instead (the job must end,
// not hang: tests/mpi/test_data_parallel_faults.cpp): rank 1 runs the forward
// of step 2 and then exits with code 3 (`exit-mid-step`) or sleeps for a
// minute (`hang-mid-step`) while rank 0, with a 2 s deadline, waits for its
// gradients.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <random>
#include <vector>

#include "nets/nets.h"
#include "optim/communicator.h"
#include "optim/replica_check.h"
#include "optim/train_step.h"
#include "tensor/copy.h"
#include "tools/entry_point.h"

namespace glassbox {
namespace {

constexpr int kBatchPerRank = 6;
constexpr int kSteps = 6;
constexpr int kClasses = 5;
const std::vector<int> kSizes = {20, 48, 32, kClasses};
constexpr SgdOptions kSgd{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-3f};

// Step s's global batch: `rows` samples, the same on every rank.
struct Batch {
  std::vector<float> features;  // (rows, 20)
  std::vector<int> labels;
};
Batch global_batch(int step, int rows) {
  std::mt19937 rng(1000 + static_cast<unsigned>(step));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Batch batch;
  for (int i = 0; i < rows * kSizes[0]; ++i) batch.features.push_back(uniform(rng));
  for (int i = 0; i < rows; ++i) batch.labels.push_back(static_cast<int>(rng() % kClasses));
  return batch;
}

enum class Fault { kNone, kExitMidStep, kHangMidStep };

// Rank 1's fault, after the forward of step 2 (when rank 0 is in backward or
// waiting for its buckets).
void inject(Fault fault, Context& ctx, Graph& graph) {
  graph.zero_grad(ctx);
  graph.forward(ctx, Phase::kTraining);
  std::fflush(stdout);
  if (fault == Fault::kExitMidStep) std::_Exit(3);
  std::this_thread::sleep_for(std::chrono::seconds(60));
}

// Trains `graph` (batch rows) on rows [first, first + rows) of each global batch.
std::vector<float> train(Context& ctx, Graph& graph, int first, int global_rows, GradientSync* sync, Sgd& sgd,
                         Fault fault = Fault::kNone) {
  const int rows = graph.batch();
  for (int step = 0; step < kSteps; ++step) {
    const Batch batch = global_batch(step, global_rows);
    const auto from = batch.features.begin() + static_cast<std::ptrdiff_t>(first) * kSizes[0];
    from_vector<float>(ctx, std::vector<float>(from, from + static_cast<std::ptrdiff_t>(rows) * kSizes[0]),
                       graph.input("images"));
    const auto label = batch.labels.begin() + first;
    from_vector<int>(ctx, std::vector<int>(label, label + rows), graph.input("labels"));
    if (fault != Fault::kNone && sync != nullptr && sync->communicator().rank() == 1 && step == 2) {
      inject(fault, ctx, graph);
    }
    train_step(ctx, graph, sgd, sync);
  }
  return to_vector<float>(ctx, graph.parameters());
}

int check(bool overlap, Fault fault = Fault::kNone, Precision precision = Precision::kFp32) {
  Context ctx = Context::cpu();
  const std::unique_ptr<Communicator> communicator =
      make_communicator(ctx, {.timeout_seconds = fault == Fault::kNone ? 60.0 : 2.0});
  const int ranks = communicator->size(), rank = communicator->rank();

  Graph replica = mlp(kBatchPerRank, kSizes, true);
  replica.compile(ctx, {.precision = precision});
  check_replicas(ctx, replica, *communicator, {.network = "MLP check", .batch = kBatchPerRank, .seed = 1});
  Sgd sgd(ctx, replica.parameters(), replica.gradients(), kSgd, replica.working_parameters());
  GradientSync sync(ctx, replica, *communicator, {.bucket_bytes = 512, .overlap = overlap});
  const std::vector<float> mine =
      train(ctx, replica, rank * kBatchPerRank, ranks * kBatchPerRank, &sync, sgd, fault);

  Graph whole = mlp(ranks * kBatchPerRank, kSizes, true);
  whole.compile(ctx, {.precision = precision});
  Sgd whole_sgd(ctx, whole.parameters(), whole.gradients(), kSgd, whole.working_parameters());
  const std::vector<float> expected = train(ctx, whole, 0, ranks * kBatchPerRank, nullptr, whole_sgd);

  double worst = 0.0;
  size_t worst_at = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const double error = std::abs(mine[i] - expected[i]) / (1.0 + std::abs(expected[i]));
    // A NaN compares false with everything: it is the worst difference, not none.
    if (std::isnan(error) || error > worst) worst = std::isnan(error) ? INFINITY : error, worst_at = i;
  }
  // A job the communicator took for one rank (an mpirun whose environment it cannot read) would compare one
  // process with itself and pass: the check is of two ranks.
  const bool two_ranks = fault != Fault::kNone || ranks == 2;
  const bool ok = two_ranks && worst <= (precision == Precision::kFp32 ? 1e-5 : 2e-2);
  std::printf("rank %d of %d, %s, overlap %s: %zu parameters in %zu buckets after %d steps; largest relative "
              "difference from one process at batch %d: %.3g (parameter %zu)%s\n",
              rank, ranks, flag_name_of(precision).data(), overlap ? "on" : "off", mine.size(), sync.buckets().size(), kSteps,
              ranks * kBatchPerRank, worst, worst_at,
              ok ? "" : two_ranks ? " -- MISMATCH" : " -- MISMATCH: ran as 1 rank, not 2");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace glassbox

int main(int argc, char** argv) {
  return glassbox::run_program("data_parallel_check", [&] {
    using glassbox::Fault;
    const std::string fault = argc > 1 ? argv[1] : "";
    if (fault == "exit-mid-step") return glassbox::check(true, Fault::kExitMidStep);
    if (fault == "hang-mid-step") return glassbox::check(true, Fault::kHangMidStep);
    if (!fault.empty()) throw glassbox::ConfigError("data_parallel_check [exit-mid-step | hang-mid-step]");
    const int with_overlap = glassbox::check(true);
    const int without = glassbox::check(false);
    const int bf16 = glassbox::check(true, Fault::kNone, glassbox::Precision::kBf16);
    return with_overlap | without | bf16;
  });
}
