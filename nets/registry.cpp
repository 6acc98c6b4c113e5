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
    // ---- Xception and FCN-5 ----
    // CPU batches: Xception's forward+backward took 1.09 s at batch 2 on the 2-core
    // EPYC (glassbox time, a quiet moment), about VGG16's 1.4 s at its batch 2, so
    // bench_nets' three CPU modes take about half a minute; FCN-5 is 0.9 GMAC at 64.
    list.push_back({"Xception", "Xception (Chollet, 2017), as Cadene's pretrainedmodels port, 299x299",
                    Shape{3, 299, 299}, 1000, 32, 2, [](int batch) { return xception(batch); }});
    list.push_back({"FCN5", "FCN-5: fully connected 784-4096-2048-1024-10, ReLU, no biases, on 28x28 images",
                    mlp_sample(784), 10, 256, 64, fcn5});
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
  throw ConfigError(
      cat("unknown network '", name, "'; valid: ", net_names(), ", or MLP:<features>,<hidden>,...,<classes>"));
}

Graph build_net(const NetSpec& net, int batch) {
  try {
    return net.build(batch);
  } catch (const SizeError& e) {
    throw ConfigError(cat(net.name, " at batch ", batch, " is too large: ", e.what()));
  }
}

}  // namespace glassbox
