// nets/registry.cpp
#include "nets/registry.h"

#include <algorithm>
#include <cctype>

#include "nets/mlp_spec.h"
#include "nets/nets.h"

namespace glassbox {

const std::vector<NetSpec>& all_nets() {
  static const std::vector<NetSpec> nets = [] {
    std::vector<NetSpec> list = {
        {"LeNet", "LeNet-5 (LeCun et al., 1998) for 28x28 grey images, ReLU and max pooling", Shape{1, 28, 28}, 10,
         256, 64, lenet},
        {"AlexNet", "AlexNet, torchvision's single-tower variant (Krizhevsky, 2014)", Shape{3, 224, 224}, 1000, 128,
         16, alexnet},
    };
    const std::pair<int, const char*> vggs[] = {{11, "A"}, {13, "B"}, {16, "D"}, {19, "E"}};
    for (const auto& [depth, configuration] : vggs) {
      list.push_back({cat("VGG", depth),
                      cat("VGG-", depth, ", configuration ", configuration, " (Simonyan & Zisserman, 2014), no batch norm"),
                      // Note [Structured bindings in captures]: clang before 16 cannot capture a
                      // structured binding by name ([depth]); [depth = depth] copies it.
                      Shape{3, 224, 224}, 1000, 64, 2, [depth = depth](int batch) { return vgg(depth, batch); }});
    }
    // OverFeat, GoogLeNet, Inception-v3. CPU batches: 134, 144 and 137 GFLOP per training step.
    list.push_back({"Overfeat", "OverFeat fast (Sermanet et al., 2013) as convnet-benchmarks defines it, no dropout",
                    Shape{3, 231, 231}, 1000, 128, 8, overfeat});
    list.push_back({"GoogLeNet", "GoogLeNet (Szegedy et al., 2014) as torchvision builds it: batch norm, no aux heads",
                    Shape{3, 224, 224}, 1000, 128, 16, googlenet});
    list.push_back({"InceptionV3", "Inception-v3 (Szegedy et al., 2015) as torchvision builds it, no aux head",
                    Shape{3, 299, 299}, 1000, 32, 4, inception_v3});
    // ResNets: GPU batches as DESIGN.md section 5 (ResNet-50 64, -101/152 32).
    // CPU: one forward+backward of ResNet-50 at batch 8 (33 GMAC forward) takes
    // about 3 core-seconds; the other ImageNet ResNets
    // are sized to 29-46 GMAC a batch, so bench_nets' three modes stay near a
    // minute or two each. ResNet-56 at 64 (8 GMAC, small convolutions): about 1 core-second.
    const struct { int depth; int gpu_batch; int cpu_batch; } resnets[] = {
        {18, 64, 16}, {34, 64, 8}, {50, 64, 8}, {101, 32, 4}, {152, 32, 4}};
    for (const auto& r : resnets) {
      const bool bottleneck = r.depth >= 50;
      list.push_back({cat("ResNet", r.depth),
                      cat("ResNet-", r.depth, " (He et al., 2015) as torchvision builds it",
                          bottleneck ? " (v1.5: stride on the bottleneck's 3x3)" : ""),
                      Shape{3, 224, 224}, 1000, r.gpu_batch, r.cpu_batch,
                      [depth = r.depth](int batch) { return resnet(depth, batch); }});
    }
    list.push_back({"ResNet56", "ResNet-56 for CIFAR-10 (He et al., 2015, section 4.2), option A shortcuts",
                    Shape{3, 32, 32}, 10, 128, 64, [](int batch) { return cifar_resnet(56, batch); }});
    // ---- Xception and FCN-5 ----
    // CPU batches: Xception's forward+backward at batch 2 takes about a second
    // on two cores, less than VGG16's at its batch 2, so bench_nets' three CPU
    // modes take about half a minute; FCN-5 is 0.9 GMAC at 64.
    list.push_back({"Xception", "Xception (Chollet, 2017), as Cadene's pretrainedmodels port, 299x299",
                    Shape{3, 299, 299}, 1000, 32, 2, [](int batch) { return xception(batch); }});
    list.push_back({"FCN5", "FCN-5: fully connected 784-4096-2048-1024-10, ReLU, no biases, on 28x28 images",
                    mlp_sample(784), 10, 256, 64, fcn5});
    // ---- Language models: Zaremba et al. (2014)'s LSTMs on a 10,000-word
    // vocabulary at batch 20: medium (2 x 650, 35 steps, dropout 0.5) and
    // large (2 x 1500, 35 steps, dropout 0.65), the benchmark pair of dlbench
    // and DeepBench, and small (2 x 200, 20 steps, no dropout), which trains
    // on a 2-core CPU in minutes an epoch.
    const struct { const char* name; const char* what; LstmLmConfig config; } lms[] = {
        {"LSTM", "medium: 2 x 650 units, 35 steps, dropout 0.5", {.hidden = 650, .steps = 35, .dropout = 0.5f}},
        {"LSTMLarge", "large: 2 x 1500 units, 35 steps, dropout 0.65", {.hidden = 1500, .steps = 35, .dropout = 0.65f}},
        {"LSTMSmall", "small: 2 x 200 units, 20 steps, no dropout", {.hidden = 200, .steps = 20, .dropout = 0.0f}},
    };
    for (const auto& lm : lms) {
      list.push_back({lm.name, cat("LSTM language model (Zaremba et al., 2014), ", lm.what, ", 10,000 words"),
                      Shape{lm.config.steps}, lm.config.vocabulary, 20, 20,
                      [config = lm.config](int batch) { return lstm_language_model(config, batch); },
                      /*language_model=*/true});
    }
    return list;
  }();
  return nets;
}

std::string net_names() {
  std::string names;
  for (const NetSpec& net : all_nets()) names += (names.empty() ? "" : ", ") + net.name;
  return names;
}

namespace {

NetSpec mlp_net(const std::vector<int>& sizes) {
  std::string shape;
  for (size_t i = 0; i < sizes.size(); ++i) shape += cat(i ? "-" : "", sizes[i]);
  return {mlp_spec_name(sizes),
          cat("multilayer perceptron ", shape, " from its name: linear layers with biases, ReLU between"),
          mlp_sample(sizes.front()), sizes.back(), 256, 64,
          [sizes](int batch) { return mlp(batch, sizes, /*bias=*/true); }};
}

}  // namespace

NetSpec find_net(std::string_view name) {
  if (const std::optional<std::vector<int>> sizes = parse_mlp_spec(name)) return mlp_net(*sizes);
  auto lower = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
  };
  for (const NetSpec& net : all_nets()) {
    if (lower(net.name) == lower(name)) return net;
  }
  // The name as typed, escaped and cut (a pasted file, a terminal escape).
  throw ConfigError(cat("unknown network '", excerpt(name, 80), "'; valid: ", net_names(),
                        ", or MLP:<features>,<hidden>,...,<classes>"));
}

Graph build_net(const NetSpec& net, int batch) {
  if (!net.build) throw ConfigError(cat("build_net: the NetSpec '", net.name, "' has no build function"));
  try {
    return net.build(batch);
  } catch (const SizeError& e) {
    throw ConfigError(cat(net.name, " at batch ", batch, " is too large: ", e.what()));
  }
}

}  // namespace glassbox
