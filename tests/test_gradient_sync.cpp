// tests/test_gradient_sync.cpp: gradient buckets, when backward starts their
// all-reduce, and the start-up replica check, against a communicator that
// records what it is asked to do (the real collectives are tested with mpirun:
// tests/mpi/).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "data/synthetic.h"
#include "nets/nets.h"
#include "optim/replica_check.h"
#include "optim/train_step.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

// Pretends to be one rank of `size`: "averaging" leaves the data as it is
// (every simulated rank would hold the same), and each reduction records a
// copy of its data at the moment it started.
class RecordingCommunicator final : public Communicator {
 public:
  explicit RecordingCommunicator(int size = 2, std::vector<std::string> others = {})
      : size_(size), others_(std::move(others)) {}

  int rank() const override { return 0; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "recording"; }
  void begin_step(Context&) override {
    started.clear();
    watched_at_start.clear();
    offsets.clear();
    start_ = std::chrono::steady_clock::now();
    times_.clear();
  }
  void start_average(Context& ctx, const Tensor& data) override {
    started.push_back(to_vector<float>(ctx, data));
    if (watched.defined()) watched_at_start.push_back(to_vector<float>(ctx, watched));
    offsets.push_back(data.raw());
    times_.push_back({data.bytes(), now_ms(), 0.0});
  }
  void progress() override { ++progress_calls; }
  void wait_all(Context&) override {
    for (ReductionTime& t : times_) t.done_ms = now_ms();
  }
  std::vector<ReductionTime> last_times() override { return times_; }
  void broadcast(Context&, const Tensor&, int) override {}
  std::vector<std::string> all_gather(std::string_view mine) override {
    std::vector<std::string> all = {std::string(mine)};
    for (const std::string& other : others_) all.push_back(other.empty() ? std::string(mine) : other);
    return all;
  }

  std::vector<std::vector<float>> started;  // each reduction's data when it started
  std::vector<const void*> offsets;
  Tensor watched;  // when defined, copied at each start too
  std::vector<std::vector<float>> watched_at_start;
  int progress_calls = 0;

 private:
  double now_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  int size_;
  std::vector<std::string> others_;
  std::chrono::steady_clock::time_point start_;
  std::vector<ReductionTime> times_;
};

Graph compiled_mlp(Context& ctx) {
  Graph graph = mlp(4, {32, 64, 48, 10}, true);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, 10);
  return graph;
}

// In a bf16 or fp16 graph the layers' parameters are views into the 16-bit
// working copy; their ranges are still the float32 masters' and gradients'.
TEST(GradientBuckets, A16BitGraphHasTheFloat32GraphsRanges) {
  Context ctx = Context::cpu();
  Graph fp32 = compiled_mlp(ctx);
  for (Precision precision : {Precision::kBf16, Precision::kFp16}) {
    Graph narrow = mlp(4, {32, 64, 48, 10}, true);
    narrow.compile(ctx, {.precision = precision});
    ASSERT_TRUE(narrow.working_parameters().defined());
    const std::vector<Graph::ParameterRange> expected = fp32.parameter_ranges(), actual = narrow.parameter_ranges();
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      EXPECT_EQ(actual[i].node, expected[i].node);
      EXPECT_EQ(actual[i].begin, expected[i].begin) << flag_name_of(precision) << ", layer " << i;
      EXPECT_EQ(actual[i].end, expected[i].end) << flag_name_of(precision) << ", layer " << i;
      EXPECT_LE(actual[i].end, narrow.gradients().bytes());
    }
    const std::vector<GradientBucket> buckets = plan_buckets(narrow, 1);
    ASSERT_EQ(buckets.size(), 3u);
    EXPECT_EQ(buckets[0].end, narrow.gradients().bytes());
    EXPECT_EQ(buckets[2].begin, 0u);
  }
}

TEST(GradientBuckets, PartitionTheBufferInBackwardOrderWithoutSplittingALayer) {
  Context ctx = Context::cpu();
  Graph graph = compiled_mlp(ctx);
  const std::vector<Graph::ParameterRange> ranges = graph.parameter_ranges();
  ASSERT_EQ(ranges.size(), 3u);  // fc1, fc2, fc3 (the loss has no parameters)
  // The last layer's bucket runs to the end of the buffer (its alignment gap included).
  const size_t fc3_bucket_bytes = graph.gradients().bytes() - ranges[2].begin;

  // A bucket size of one byte: one bucket per layer, the last layer first.
  std::vector<GradientBucket> buckets = plan_buckets(graph, 1);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].end, graph.gradients().bytes());
  EXPECT_EQ(buckets[0].begin, ranges[2].begin);
  EXPECT_EQ(buckets[0].ready_after, ranges[2].position);
  EXPECT_EQ(buckets[2].begin, 0u);
  for (size_t b = 1; b < buckets.size(); ++b) EXPECT_EQ(buckets[b].end, buckets[b - 1].begin) << "bucket " << b;
  for (const GradientBucket& b : buckets) EXPECT_EQ(b.first_layer, b.last_layer);

  // Just over the last layer: the next layer joins the first bucket, whole.
  buckets = plan_buckets(graph, fc3_bucket_bytes + 1);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].begin, ranges[1].begin);
  EXPECT_EQ(buckets[0].first_layer, graph.nodes()[static_cast<size_t>(ranges[2].node)].name);
  EXPECT_EQ(buckets[0].last_layer, graph.nodes()[static_cast<size_t>(ranges[1].node)].name);
  EXPECT_EQ(buckets[0].ready_after, ranges[1].position);

  // Larger than everything: one bucket, the whole buffer.
  buckets = plan_buckets(graph, size_t{1} << 40);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].begin, 0u);
  EXPECT_EQ(buckets[0].end, graph.gradients().bytes());

  EXPECT_EQ(testing::message_of<ConfigError>([&] { plan_buckets(graph, 0); }), "the gradient bucket size must be at least 1 byte, got 0");
}

// With overlap, each bucket starts once its gradients are final (its data
// then equals the gradients after the whole backward), and the first bucket
// starts while earlier layers' gradients are still zero: backward goes on.
TEST(GradientSync, StartsEachBucketWhenItsGradientsAreFinalWhileBackwardGoesOn) {
  Context ctx = Context::cpu();
  Graph graph = compiled_mlp(ctx);
  RecordingCommunicator comm;
  comm.watched = graph.gradients();
  GradientSync sync(ctx, graph, comm, {.bucket_bytes = 1, .overlap = true});
  graph.zero_grad(ctx);
  graph.forward(ctx, Phase::kTraining);
  sync.backward(ctx, graph);
  const std::vector<float> final_grads = to_vector<float>(ctx, graph.gradients());

  ASSERT_EQ(comm.started.size(), sync.buckets().size());
  const auto* base = static_cast<const char*>(graph.gradients().raw());
  for (size_t b = 0; b < sync.buckets().size(); ++b) {
    const GradientBucket& bucket = sync.buckets()[b];
    EXPECT_EQ(static_cast<const char*>(comm.offsets[b]) - base, static_cast<ptrdiff_t>(bucket.begin));
    const size_t first = bucket.begin / sizeof(float);
    ASSERT_EQ(comm.started[b].size(), bucket.bytes() / sizeof(float));
    for (size_t i = 0; i < comm.started[b].size(); ++i) {
      ASSERT_EQ(comm.started[b][i], final_grads[first + i]) << "bucket " << b << " element " << i;
    }
  }
  // When the first bucket (the last layer) started, the first layer's
  // gradient was still all zeros; in the end it is not.
  const GradientBucket& first_layer = sync.buckets().back();
  const auto count = static_cast<std::ptrdiff_t>(first_layer.bytes() / sizeof(float));
  const std::vector<float> zeros(static_cast<size_t>(count), 0.0f);
  ASSERT_EQ(comm.watched_at_start.size(), sync.buckets().size());
  EXPECT_EQ(std::vector<float>(comm.watched_at_start[0].begin(), comm.watched_at_start[0].begin() + count), zeros);
  EXPECT_NE(std::vector<float>(final_grads.begin(), final_grads.begin() + count), zeros);
  EXPECT_GT(comm.progress_calls, 0);
  EXPECT_EQ(comm.last_times().size(), sync.buckets().size());
}

// Without overlap, nothing starts until backward is over: every bucket's
// data is final, and all of them started after the last layer.
TEST(GradientSync, WithoutOverlapStartsEveryBucketAfterBackward) {
  Context ctx = Context::cpu();
  Graph graph = compiled_mlp(ctx);
  RecordingCommunicator comm;
  comm.watched = graph.gradients();
  GradientSync sync(ctx, graph, comm, {.bucket_bytes = 1, .overlap = false});
  graph.zero_grad(ctx);
  graph.forward(ctx, Phase::kTraining);
  sync.backward(ctx, graph);
  EXPECT_EQ(comm.progress_calls, 0);
  ASSERT_EQ(comm.started.size(), 3u);
  // When the first reduction started, every gradient was final already.
  ASSERT_FALSE(comm.watched_at_start.empty());
  EXPECT_EQ(comm.watched_at_start[0], to_vector<float>(ctx, graph.gradients()));
}

// The step with a communicator is the step without one when every rank holds
// the same batch: averaging identical gradients changes nothing.
TEST(GradientSync, TrainStepWithSyncMatchesTheStepWithout) {
  Context ctx = Context::cpu();
  Graph alone = compiled_mlp(ctx);
  Graph synced = compiled_mlp(ctx);
  const SgdOptions options{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f};
  Sgd sgd_alone(ctx, alone.parameters(), alone.gradients(), options);
  Sgd sgd_synced(ctx, synced.parameters(), synced.gradients(), options);
  RecordingCommunicator comm;
  GradientSync sync(ctx, synced, comm, {.bucket_bytes = 1024});
  for (int step = 0; step < 3; ++step) {
    train_step(ctx, alone, sgd_alone);
    train_step(ctx, synced, sgd_synced, &sync);
  }
  EXPECT_EQ(to_vector<float>(ctx, alone.parameters()), to_vector<float>(ctx, synced.parameters()));
  // The step's split: every part measured, none negative, one time per bucket.
  const SyncTimes times = sync.last_times();
  for (double part : {times.forward_ms, times.backward_ms, times.exposed_ms, times.optimizer_ms, times.allreduce_ms}) {
    EXPECT_GE(part, 0.0);
  }
  EXPECT_GT(times.forward_ms + times.backward_ms, 0.0);
  EXPECT_EQ(times.buckets.size(), sync.buckets().size());
}

TEST(GradientBuckets, NeedACompiledGraph) {
  Graph graph = mlp(4, {32, 10}, true);
  EXPECT_EQ(testing::message_of<Error>([&] { graph.parameter_ranges(); }),
            "parameter_ranges: the graph is not compiled; call compile(ctx) first");
}

TEST(GradientSync, RefusesAnInferencePlan) {
  Context ctx = Context::cpu();
  Graph graph = mlp(4, {32, 10}, true);
  graph.compile(ctx, {.phase = Phase::kInference});
  RecordingCommunicator comm;
  EXPECT_EQ(testing::message_of<ConfigError>([&] { GradientSync(ctx, graph, comm, {}); }),
            "data-parallel training needs a graph compiled for training; this one has no gradients");
}

using Properties = std::vector<std::pair<std::string, std::string>>;

// What a rank with this replica sends, as check_replicas builds it.
Properties replica_properties(const std::string& network, int batch, int64_t parameters, uint64_t seed,
                              uint64_t hash, const Properties& settings = {}) {
  Properties all = {{"the network", network},
                    {"the batch per rank", std::to_string(batch)},
                    {"the parameter count", std::to_string(parameters)},
                    {"the seed", std::to_string(seed)},
                    {"the parameter values (hash)", std::to_string(hash)}};
  all.insert(all.end(), settings.begin(), settings.end());
  return all;
}

TEST(ReplicaCheck, PassesIdenticalReplicasAndNamesTheRanksThatDiffer) {
  Context ctx = Context::cpu();
  Graph graph = compiled_mlp(ctx);
  const ReplicaDescription replica{.network = "MLP:32,64,48,10", .batch = 4, .seed = 1};
  RecordingCommunicator same(3, {"", ""});
  EXPECT_NO_THROW(check_replicas(ctx, graph, same, replica));

  // Rank 2 built another network; rank 1 is the same as rank 0.
  const std::string other = encode_replica_message(replica_properties("LeNet", 4, 61706, 1, 42));
  RecordingCommunicator differs(3, {"", other});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { check_replicas(ctx, graph, differs, replica); }),
            "ranks disagree on the network: ranks 0, 1 have MLP:32,64,48,10; rank 2 has LeNet (every rank must "
            "build the same network from the same parameters)");

  // Same network, other parameter values (a checkpoint loaded on one rank).
  Graph changed = compiled_mlp(ctx);
  from_vector<float>(ctx, std::vector<float>(static_cast<size_t>(changed.parameters().numel()), 0.5f),
                     changed.parameters());
  const std::string text = encode_replica_message(
      replica_properties("MLP:32,64,48,10", 4, graph.parameter_count(), 1, parameter_hash(ctx, changed)));
  RecordingCommunicator hashes(2, {text});
  const std::string message = testing::message_of<ConfigError>([&] { check_replicas(ctx, graph, hashes, replica); });
  EXPECT_TRUE(message.starts_with("ranks disagree on the parameter values (hash): ")) << message;
  EXPECT_NE(parameter_hash(ctx, graph), parameter_hash(ctx, changed));
}

// The settings that decide the steps and the update are compared too, by
// flag: a rank with more data would start all-reduces no other rank joins.
TEST(ReplicaCheck, NamesTheSettingTheRanksDisagreeOn) {
  Context ctx = Context::cpu();
  Graph graph = compiled_mlp(ctx);
  const Properties settings = {{"--data", "synthetic:256"}, {"--bucket-mb", "25"}, {"--lr", "0.05"}};
  const ReplicaDescription replica{.network = "MLP:32,64,48,10", .batch = 4, .seed = 1, .settings = settings};
  const uint64_t hash = parameter_hash(ctx, graph);
  const auto rank_with = [&](const Properties& theirs) {
    return encode_replica_message(replica_properties("MLP:32,64,48,10", 4, graph.parameter_count(), 1, hash, theirs));
  };
  RecordingCommunicator same(2, {rank_with(settings)});
  EXPECT_NO_THROW(check_replicas(ctx, graph, same, replica));

  RecordingCommunicator data(2, {rank_with({{"--data", "synthetic:512"}, {"--bucket-mb", "25"}, {"--lr", "0.05"}})});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { check_replicas(ctx, graph, data, replica); }),
            "ranks disagree on --data: rank 0 has synthetic:256; rank 1 has synthetic:512 (every rank must train "
            "with the same settings)");

  RecordingCommunicator buckets(
      3, {"", rank_with({{"--data", "synthetic:256"}, {"--bucket-mb", "1"}, {"--lr", "0.05"}})});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { check_replicas(ctx, graph, buckets, replica); }),
            "ranks disagree on --bucket-mb: ranks 0, 1 have 25; rank 2 has 1 (every rank must train with the same "
            "settings)");

  // A rank that does not send a setting (another version of the program).
  RecordingCommunicator missing(2, {rank_with({{"--data", "synthetic:256"}, {"--bucket-mb", "25"}})});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { check_replicas(ctx, graph, missing, replica); }),
            "ranks disagree on --lr: rank 0 has 0.05; rank 1 has nothing (it does not send this) (every rank must "
            "train with the same settings)");

  // Another rank's value is escaped and cut before it is shown.
  RecordingCommunicator odd(2, {rank_with({{"--data", "folder:a\nb" + std::string(100, 'x')}, {"--bucket-mb", "25"},
                                           {"--lr", "0.05"}})});
  const std::string message = testing::message_of<ConfigError>([&] { check_replicas(ctx, graph, odd, replica); });
  EXPECT_TRUE(message.starts_with("ranks disagree on --data: rank 0 has synthetic:256; rank 1 has folder:a\\nb"))
      << message;
  EXPECT_NE(message.find("... (110 bytes)"), std::string::npos) << message;
}

TEST(ReplicaCheck, RefusesAMessageThatIsNotADescription) {
  Context ctx = Context::cpu();
  Graph graph = compiled_mlp(ctx);
  const ReplicaDescription replica{.network = "MLP:32,64,48,10", .batch = 4, .seed = 1};
  RecordingCommunicator garbage(2, {"12 34 0x1p+3"});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { check_replicas(ctx, graph, garbage, replica); }),
            "rank 1 sent a start-up description that is not one (12 bytes): are all ranks the same program?");
}

TEST(ReplicaMessage, RoundTripsAnyBytesAndRefusesWhatIsNotOne) {
  const Properties properties = {{"--data", std::string("a:b\n\0c", 7)}, {"", ""}, {"5:x", "12:"}};
  EXPECT_EQ(decode_replica_message(encode_replica_message(properties)), properties);
  EXPECT_EQ(decode_replica_message(""), Properties{});
  for (const char* bad : {"5", "5:abc", "x:1", "3:abc", "3:abc9999999999999999999999:", "-1:", "06:--data0:"}) {
    EXPECT_FALSE(decode_replica_message(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace glassbox
