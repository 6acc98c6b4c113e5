// tests/test_bench_session.cpp: bench_nets' session (bench/support): a step
// whose loss is not finite ends the benchmark with an error naming the step
// of its mode, counted from the first warm-up step. And a flag parsed into
// what the session is compiled with (the rest: BenchNets in test_cli.cpp).
#include <gtest/gtest.h>

#include <limits>

#include "bench/support/bench_flags.h"
#include "bench/support/net_session.h"
#include "tensor/copy.h"

namespace glassbox::bench {
namespace {

TEST(BenchFlags, DeterministicIsASwitchThatDefaultsToTheBuild) {
  EXPECT_EQ(parse_bench_flags({}).deterministic, kDeterministicByDefault);
  EXPECT_TRUE(parse_bench_flags({"--deterministic"}).deterministic);
  EXPECT_TRUE(parse_bench_flags({"--deterministic"}).passed_on.empty()) << "Google Benchmark does not see it";
}

TEST(NetSession, ANonFiniteLossIsAnErrorNamingTheStep) {
  const NetSpec& net = find_net("LeNet");
  NetSession session(net, {.net = "LeNet", .batch = 4, .device = Device::cpu()}, CompileOptions{});
  for (int i = 0; i < 3; ++i) {
    session.step(StepMode::kForward);
    EXPECT_TRUE(std::isfinite(session.checked_loss(StepMode::kForward)));
  }
  const Tensor& bias = session.graph().node("fc5").params[1];
  std::vector<float> values = to_vector<float>(session.ctx(), bias);
  values[3] = std::numeric_limits<float>::quiet_NaN();
  from_vector<float>(session.ctx(), values, bias);
  session.step(StepMode::kForward);
  try {
    session.checked_loss(StepMode::kForward);
    FAIL() << "a NaN loss passed";
  } catch (const NumericalError& e) {
    EXPECT_STREQ(e.what(), "step 4: the loss is nan; first non-finite output: fc5 (Linear); non-finite parameters: "
                           "fc5.bias");
  }
  session.step(StepMode::kTrainStep);  // another mode counts its own steps
  EXPECT_THROW(
      {
        try {
          session.checked_loss(StepMode::kTrainStep);
        } catch (const NumericalError& e) {
          EXPECT_EQ(std::string(e.what()).substr(0, 8), "step 1: ");
          throw;
        }
      },
      NumericalError);
}

}  // namespace
}  // namespace glassbox::bench
