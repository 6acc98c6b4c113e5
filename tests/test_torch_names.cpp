// tests/test_torch_names.cpp: Glassbox's PyTorch names (nets/torch_names.h)
// are exactly the state_dict of the PyTorch model: every key, dtype and
// shape, in order, for every network, against tests/data/torch_keys/ (the
// state_dicts of torchvision's and the peer's models, written by
// bench/peers/torch_state_keys.py; torch is not needed here).
//
// The networks are built at batch 1 and not compiled: names and shapes come
// from the layers (param_specs, state_specs), so VGG and ResNet-152 cost
// nothing here. One network is compiled to check that the uncompiled listing
// agrees with the compiled graph's own names (named_parameters, named_state).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "graph/builder.h"
#include "nets/nets.h"
#include "nets/torch_names.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

const std::string kKeysDir = std::string(GLASSBOX_TEST_DATA_DIR) + "/torch_keys";

struct KeysFile {
  std::string net;                  // "# NET: ResNet50"
  std::vector<std::string> entries;  // "layer1.0.conv1.weight F32 (64, 64, 1, 1)"
};

KeysFile read_keys(const std::filesystem::path& path) {
  KeysFile file;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# NET: ", 0) == 0) file.net = line.substr(7);
    if (!line.empty() && line[0] != '#') file.entries.push_back(line);
  }
  return file;
}

std::vector<std::string> glassbox_entries(const NetSpec& net) {
  const Graph graph = build_net(net, 1);
  std::vector<std::string> lines;
  for (const TorchTensor& t : torch_state_dict(net, graph)) {
    const bool int64 = t.kind == TorchTensorKind::kBatchesTracked;
    std::string shape = t.shape.str();
    lines.push_back(cat(t.torch, int64 ? " I64 " : " F32 ", shape));
  }
  return lines;
}

std::vector<std::filesystem::path> keys_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(kKeysDir)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(TorchNames, ShapeStringsAreTheKeyFilesFormat) {
  // The files write shapes as "(64, 3, 7, 7)", "(64)" and "()" (a scalar).
  EXPECT_EQ(Shape({64, 3, 7, 7}).str(), "(64, 3, 7, 7)");
  EXPECT_EQ(Shape({64}).str(), "(64)");
  EXPECT_EQ(Shape().str(), "()");
}

// The heart of it: every network's whole state_dict, in order.
TEST(TorchNames, EveryNetworkIsPyTorchsStateDictInOrder) {
  const std::vector<std::filesystem::path> files = keys_files();
  ASSERT_GE(files.size(), all_nets().size()) << "tests/data/torch_keys/ is incomplete; run "
                                                "bench/peers/torch_state_keys.py";
  for (const std::filesystem::path& path : files) {
    const KeysFile expected = read_keys(path);
    ASSERT_FALSE(expected.net.empty()) << path << " has no '# NET: ' line";
    const NetSpec net = find_net(expected.net);
    const std::vector<std::string> actual = glassbox_entries(net);
    const size_t common = std::min(actual.size(), expected.entries.size());
    const auto first_difference =
        std::mismatch(actual.begin(), actual.begin() + static_cast<std::ptrdiff_t>(common), expected.entries.begin());
    if (first_difference.first != actual.begin() + static_cast<std::ptrdiff_t>(common)) {
      ADD_FAILURE() << net.name << ": entry " << (first_difference.first - actual.begin()) << " is '"
                    << *first_difference.first << "', PyTorch's is '" << *first_difference.second << "'";
    }
    EXPECT_EQ(actual.size(), expected.entries.size()) << net.name << ": entries in Glassbox's list and PyTorch's";
  }
}

TEST(TorchNames, EveryRegisteredNetworkHasItsPyTorchList) {
  std::set<std::string> covered;
  for (const std::filesystem::path& path : keys_files()) covered.insert(read_keys(path).net);
  for (const NetSpec& net : all_nets()) EXPECT_TRUE(covered.count(net.name)) << net.name << " has no keys file";
  EXPECT_TRUE(covered.count("MLP:784,100,10"));
  EXPECT_TRUE(covered.count("MLP:20,7,5,3"));
}

std::string torch_name_of(const NetSpec& net, const std::string& glassbox) {
  const Graph graph = build_net(net, 1);
  for (const TorchTensor& t : torch_state_dict(net, graph)) {
    if (t.glassbox == glassbox) return t.torch;
  }
  return "(none)";
}

TEST(TorchNames, TheHeadersExamples) {
  EXPECT_EQ(torch_name_of(find_net("AlexNet"), "conv1.weight"), "features.0.weight");
  EXPECT_EQ(torch_name_of(find_net("AlexNet"), "fc6.weight"), "classifier.1.weight");  // after Dropout(0)
  EXPECT_EQ(torch_name_of(find_net("VGG16"), "fc6.bias"), "classifier.0.bias");
  EXPECT_EQ(torch_name_of(find_net("VGG16"), "conv5_3.weight"), "features.28.weight");
  EXPECT_EQ(torch_name_of(find_net("ResNet50"), "layer1.0.bn1.scale"), "layer1.0.bn1.weight");
  EXPECT_EQ(torch_name_of(find_net("ResNet50"), "layer1.0.bn1.shift"), "layer1.0.bn1.bias");
  EXPECT_EQ(torch_name_of(find_net("ResNet50"), "layer1.0.bn1.running_mean"), "layer1.0.bn1.running_mean");
  EXPECT_EQ(torch_name_of(find_net("ResNet56"), "linear.weight"), "linear.weight");
  EXPECT_EQ(torch_name_of(find_net("LeNet"), "fc5.bias"), "fc5.bias");
}

// torch_names() lists what the compiled graph names: named_parameters, then
// named_state; the uncompiled shapes (state_specs) are the allocated ones.
TEST(TorchNames, AgreeWithTheCompiledGraphsNames) {
  Context ctx = Context::cpu();
  const NetSpec net = find_net("GoogLeNet");
  Graph graph = build_net(net, 1);
  const std::vector<TorchTensor> uncompiled = torch_state_dict(net, graph);
  graph.compile(ctx, {.phase = Phase::kInference});
  std::vector<std::string> compiled;
  std::vector<Shape> compiled_shapes;
  for (const auto& list : {graph.named_parameters(), graph.named_state()}) {
    for (const NamedTensor& t : list) {
      compiled.push_back(t.name);
      compiled_shapes.push_back(t.tensor.shape());
    }
  }
  const std::vector<TorchName> names = torch_names(net, graph);
  ASSERT_EQ(names.size(), compiled.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i].glassbox, compiled[i]) << i;
  // The same tensors, by name, with the same shapes before and after compile.
  for (size_t i = 0; i < compiled.size(); ++i) {
    const auto it = std::find_if(uncompiled.begin(), uncompiled.end(),
                                 [&](const TorchTensor& t) { return t.glassbox == compiled[i]; });
    ASSERT_NE(it, uncompiled.end()) << compiled[i];
    EXPECT_EQ(it->shape, compiled_shapes[i]) << compiled[i];
    EXPECT_EQ(it->torch, names[i].torch);
  }
  const std::vector<std::string> tracked = torch_batches_tracked_names(net, graph);
  EXPECT_EQ(tracked.size(), graph.named_state().size() / 2);  // two statistics per batch norm
  EXPECT_EQ(tracked.front(), "conv1.bn.num_batches_tracked");
  EXPECT_EQ(tracked.back(), "inception5b.branch4.1.bn.num_batches_tracked");
  EXPECT_EQ(uncompiled.size(), names.size() + tracked.size());
}

TEST(TorchNames, NetworksWithoutBatchNormTrackNothing) {
  const NetSpec net = find_net("VGG11");
  const Graph graph = build_net(net, 1);
  EXPECT_TRUE(torch_batches_tracked_names(net, graph).empty());
  EXPECT_EQ(torch_names(net, graph).size(), 22u);  // 8 convolutions and 3 linear layers, weight and bias each
}

// A layer with parameters named both "scale" and "weight": PyTorch would
// call both "weight". None of Glassbox's layers is one; a new one is refused.
class ScaleAndWeight final : public Layer {
 public:
  ScaleAndWeight() : Layer("odd") {}
  std::string_view type() const override { return "ScaleAndWeight"; }
  std::string describe() const override { return "two parameters PyTorch would name alike"; }
  Shape infer(std::span<const Shape> inputs) const override { return inputs[0]; }
  std::vector<ParamSpec> param_specs() const override {
    return {{"scale", Shape{2}, Init::kOnes}, {"weight", Shape{2}, Init::kOnes}};
  }

 private:
  void prepare_cuda(Context&, const PrepareOptions&) override {}
  void forward_cpu(Context&, const ForwardArgs&) override {}
  void forward_cuda(Context&, const ForwardArgs&) override {}
  void backward_cpu(Context&, const BackwardArgs&) override {}
  void backward_cuda(Context&, const BackwardArgs&) override {}
};

TEST(TorchNames, TwoTensorsWithOnePyTorchNameAreRefused) {
  GraphBuilder g;
  const Value x = g.input("images", {1, 2});
  const Value labels = g.input("labels", {1}, DType::kInt32);
  const Value y = g.append(std::make_unique<ScaleAndWeight>(), {x});
  const Graph graph = std::move(g).build(g.softmax_cross_entropy(y, labels));
  const NetSpec net{.name = "Odd"};
  try {
    torch_names(net, graph);
    FAIL() << "two tensors got one name";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Odd: 'odd.scale' and 'odd.weight' would both be 'odd.weight' in PyTorch's state_dict");
  }
}

}  // namespace
}  // namespace glassbox
