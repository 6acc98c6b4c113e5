// tests/fuzz/fuzz_replica_check.cpp: the start-up check of a data-parallel
// job (optim/replica_check.h), fed what another rank might send. The whole
// input is rank 1's message; rank 0 is this process, with a small compiled MLP.
//
// The message either is not a replica description (decode_replica_message
// says so and check_replicas refuses it with a ConfigError), or decodes, and
// then:
//   - it encodes back to the same bytes (one encoding per description);
//   - check_replicas passes exactly when it holds rank 0's properties, each
//     with rank 0's value, and refuses otherwise with a ConfigError whose
//     message starts "ranks disagree on " and fits on one line.
// Any other exception, even another glassbox::Error, is a finding.
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "nets/nets.h"
#include "optim/replica_check.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

namespace {

// Rank 0 is this process; rank 1 sends the fuzzer's bytes.
class TwoRanks final : public Communicator {
 public:
  explicit TwoRanks(std::string theirs) : theirs_(std::move(theirs)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string_view backend() const override { return "fuzz"; }
  void begin_step(Context&) override {}
  void start_average(Context&, const Tensor&) override {}
  void progress() override {}
  void wait_all(Context&) override {}
  std::vector<ReductionTime> last_times() override { return {}; }
  void broadcast(Context&, const Tensor&, int) override {}
  std::vector<std::string> all_gather(std::string_view mine) override {
    mine_ = std::string(mine);
    return {mine_, theirs_};
  }
  const std::string& mine() const { return mine_; }

 private:
  std::string theirs_;
  std::string mine_;
};

struct Replica {
  Context ctx = Context::cpu();
  Graph graph = mlp(2, {8, 4, 3}, true);
  ReplicaDescription description{.network = "MLP:8,4,3",
                                 .batch = 2,
                                 .seed = 1,
                                 .settings = {{"--data", "synthetic:64"}, {"--lr", "0.05"}}};
  Replica() { graph.compile(ctx); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Replica replica;
  const std::string theirs(reinterpret_cast<const char*>(data), size);
  try {
    const auto decoded = decode_replica_message(theirs);
    if (decoded) FUZZ_CHECK(encode_replica_message(*decoded) == theirs);
    TwoRanks communicator(theirs);
    bool passed = false;
    try {
      check_replicas(replica.ctx, replica.graph, communicator, replica.description);
      passed = true;
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      FUZZ_CHECK(message.find('\n') == std::string::npos);
      FUZZ_CHECK(decoded ? message.starts_with("ranks disagree on ")
                         : message.starts_with("rank 1 sent a start-up description that is not one"));
      FUZZ_CHECK(message.size() < 600);  // other ranks' values are cut to an excerpt
    }
    // Passes exactly when rank 1 holds each of rank 0's properties with rank 0's value.
    const auto mine = decode_replica_message(communicator.mine());
    FUZZ_CHECK(mine.has_value());
    bool same = decoded.has_value();
    if (decoded) {
      const std::map<std::string, std::string> held(decoded->begin(), decoded->end());
      for (const auto& [name, value] : *mine) {
        const auto it = held.find(name);
        same = same && it != held.end() && it->second == value;
      }
    }
    FUZZ_CHECK(passed == same);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: %s escaped: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
