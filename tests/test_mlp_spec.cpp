// tests/test_mlp_spec.cpp: multilayer perceptrons by name ("MLP:784,2048,10",
// nets/mlp_spec.h): what the parser accepts, every message it refuses with,
// and the networks the registry builds from such names.
#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "nets/mlp_spec.h"
#include "nets/nets.h"
#include "nets/registry.h"
#include "tensor/parse.h"
#include "tests/support/network_checks.h"

namespace glassbox {
namespace {

std::vector<int> parsed(std::string_view name) {
  const std::optional<std::vector<int>> sizes = parse_mlp_spec(name);
  EXPECT_TRUE(sizes.has_value()) << name;
  return sizes.value_or(std::vector<int>{});
}

std::string refusal(std::string_view name) {
  try {
    parse_mlp_spec(name);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

// "MLP:3,3,...,3,2": `count` sizes.
std::string sizes_named(int count) {
  std::string name(kMlpPrefix);
  for (int i = 1; i < count; ++i) name += "3,";
  return name + "2";
}

TEST(MlpSpec, ReadsFeaturesHiddenSizesAndClasses) {
  EXPECT_EQ(parsed("MLP:784,2048,2048,10"), (std::vector<int>{784, 2048, 2048, 10}));
  EXPECT_EQ(parsed("mlp:784,10"), (std::vector<int>{784, 10})) << "no hidden layer: softmax regression";
  EXPECT_EQ(parsed("Mlp:0784,010"), (std::vector<int>{784, 10})) << "leading zeros are decimal, not octal";
  EXPECT_EQ(parsed("MLP:65536,1,2"), (std::vector<int>{65536, 1, 2})) << "the limits themselves";
  EXPECT_EQ(parsed(sizes_named(kMlpMaxLayers + 1)).size(), static_cast<size_t>(kMlpMaxLayers + 1));
}

TEST(MlpSpec, OtherNamesAreNotSpecs) {
  for (const char* name : {"", "VGG16", "MLP", "MLP784,10", "ML:784,10", "XMLP:784,10"}) {
    EXPECT_FALSE(parse_mlp_spec(name).has_value()) << name;
  }
}

TEST(MlpSpec, RefusesEveryMalformedListSayingWhy) {
  const std::string range = " must be an integer from 1 to 65536, got ";
  const struct {
    std::string name, message;
  } cases[] = {
      {"MLP:", "network 'MLP:': no sizes; write MLP:<features>,<hidden>,...,<classes>, e.g. MLP:784,2048,2048,10"},
      {"MLP:784", "network 'MLP:784': one size; an MLP needs at least two, its features and its classes "
                  "(MLP:<features>,<hidden>,...,<classes>)"},
      {"MLP:784, 2048,10",
       "network 'MLP:784, 2048,10': contains white space; write the sizes without spaces, e.g. MLP:784,2048,10"},
      {"MLP:784,2048,10\n", "network 'MLP:784,2048,10\\n': contains white space; write the sizes without spaces, "
                            "e.g. MLP:784,2048,10"},
      {"MLP:784,2048,10,", "network 'MLP:784,2048,10,': classes is empty; separate the sizes with single commas, "
                           "with none at either end"},
      {"MLP:,784,10", "network 'MLP:,784,10': features is empty; separate the sizes with single commas, "
                      "with none at either end"},
      {"MLP:784,,10", "network 'MLP:784,,10': hidden size 1 is empty; separate the sizes with single commas, "
                      "with none at either end"},
      {"MLP:abc,10", "network 'MLP:abc,10': features" + range + "'abc'"},
      {"MLP:784,2048,x,10", "network 'MLP:784,2048,x,10': hidden size 2" + range + "'x'"},
      {"MLP:784,0,10", "network 'MLP:784,0,10': hidden size 1" + range + "'0'"},
      {"MLP:784,-5,10", "network 'MLP:784,-5,10': hidden size 1" + range + "'-5'"},
      {"MLP:784,+5,10", "network 'MLP:784,+5,10': hidden size 1" + range + "'+5'"},
      {"MLP:784,2.5,10", "network 'MLP:784,2.5,10': hidden size 1" + range + "'2.5'"},
      {"MLP:784,65537,10", "network 'MLP:784,65537,10': hidden size 1" + range + "'65537'"},
      {"MLP:784,99999999999999999999,10",
       "network 'MLP:784,99999999999999999999,10': hidden size 1" + range + "'99999999999999999999'"},
      {"MLP:784,10,1", "network 'MLP:784,10,1': classes must be an integer from 2 to 65536, got '1'"},
      {"MLP:784,1e3", "network 'MLP:784,1e3': classes must be an integer from 2 to 65536, got '1e3'"},
  };
  for (const auto& c : cases) EXPECT_EQ(refusal(c.name), c.message);
}

TEST(MlpSpec, RefusesTooManyLayersAndShortensLongNames) {
  const std::string name = sizes_named(kMlpMaxLayers + 2);  // 71 characters
  EXPECT_EQ(refusal(name), "network '" + name.substr(0, 64) + "...' (71 bytes): 34 sizes make 33 linear "
                                                                "layers, more than the 32 allowed");
  const std::string digits = "MLP:784," + std::string(100, '7') + ",10";
  EXPECT_EQ(refusal(digits), "network '" + digits.substr(0, 64) + "...' (111 bytes): hidden size 1 must be an "
                                                                  "integer from 1 to 65536, got '" +
                                 std::string(64, '7') + "...' (100 bytes)");
}

TEST(MlpSpec, TheCanonicalNameRoundTrips) {
  EXPECT_EQ(mlp_spec_name({784, 2048, 10}), "MLP:784,2048,10");
  EXPECT_EQ(parsed(mlp_spec_name({5, 4, 3, 2})), (std::vector<int>{5, 4, 3, 2}));
}

// ---- The networks -------------------------------------------------------------------------

TEST(MlpNets, TheRegistryBuildsAnyValidSpecWithBiasesAndReluBetween) {
  const NetSpec net = find_net("mlp:784,2048,10");
  EXPECT_EQ(net.name, "MLP:784,2048,10");
  EXPECT_EQ(net.classes, 10);
  EXPECT_EQ(net.sample, (Shape{1, 28, 28})) << "784 features are an MNIST image";
  EXPECT_EQ(net.gpu_batch, 256);
  EXPECT_EQ(net.cpu_batch, 64);
  const Graph graph = net.build(3);
  EXPECT_EQ(graph.parameter_count(), 784 * 2048 + 2048 + 2048 * 10 + 10);
  EXPECT_EQ(graph.macs(), 3 * (784 * 2048 + 2048 * 10));
  EXPECT_EQ(graph.node("images").shape, (Shape{3, 1, 28, 28}));
  EXPECT_EQ(graph.node("fc1").shape, (Shape{3, 2048}));
  EXPECT_EQ(graph.node("relu1").shape, (Shape{3, 2048}));
  EXPECT_EQ(graph.node("fc2").shape, (Shape{3, 10}));

  const NetSpec plain = find_net("MLP:100,7");
  EXPECT_EQ(plain.sample, (Shape{100, 1, 1})) << "other feature counts are (F, 1, 1)";
  EXPECT_EQ(plain.build(2).node("images").shape, (Shape{2, 100, 1, 1}));
}

TEST(MlpNets, TheRegistryPassesOnTheParsersRefusal) {
  try {
    find_net("MLP:784,0,10");
    FAIL() << "found MLP:784,0,10";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "network 'MLP:784,0,10': hidden size 1 must be an integer from 1 to 65536, got '0'");
  }
}

TEST(MlpNets, ABatchTooLargeForTheCostsIsRefusedByName) {
  const NetSpec net = find_net("MLP:65536,65536,2");
  try {
    build_net(net, kMaxInt);
    FAIL() << "built " << net.name << " at batch 2^31 - 1";
  } catch (const ConfigError& e) {
    const std::string message = e.what(), prefix = "MLP:65536,65536,2 at batch 2147483647 is too large: ";
    EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
    // fc1 alone does 2^63 - 2^32 multiply-accumulates at this batch; fc2 tips the sum over.
    EXPECT_NE(message.find("fc2 (Linear): the network's multiply-accumulates"), std::string::npos) << message;
  }
}

TEST(MlpNets, TheBuilderWantsTwoSizes) {
  try {
    mlp(1, {784}, true);
    FAIL() << "built an MLP of one size";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "an MLP needs at least two sizes (features, classes), got 1");
  }
}

// By name, end to end: four SGD steps on one fixed batch lower its loss.
TEST(MlpNets, ANetworkByNameTrains) {
  const NetSpec net = find_net("MLP:784,64,10");
  Context ctx = Context::cpu();
  Graph graph = net.build(16);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, net.classes);
  testing::expect_sgd_steps_lower_the_loss(ctx, graph, {.lr = 5e-2f, .momentum = 0.9f, .weight_decay = 0.0f},
                                           Phase::kInference, 0.98f, net.name);
}

}  // namespace
}  // namespace glassbox
