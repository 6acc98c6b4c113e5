// nets/registry.h: every network by name, with its input and default batches.
// Benchmarks, the CLI and tests look networks up here.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace glassbox {

struct NetSpec {
  std::string name;         // "VGG16": what benchmarks and the CLI call it
  std::string description;  // one line: what it is and where it comes from
  Shape sample;             // one input image: (C, H, W); a language model's: (T) tokens
  int classes = 0;          // a language model's: its vocabulary
  int gpu_batch = 0;        // default batches (DESIGN.md section 5); the CPU's
  int cpu_batch = 0;        // are small enough for a 2-core machine
  std::function<Graph(int batch)> build;
  // A language model reads sequences: its inputs are "tokens" and "labels"
  // (the next tokens), (T, B) int32, time-major, and the batch is B
  // sequences of T tokens. Every other network reads images (or an MLP's
  // feature vectors) into "images" and "labels" (N).
  bool language_model = false;

  int default_batch(const Device& device) const { return device.is_cuda() ? gpu_batch : cpu_batch; }
  // Throughput's unit: images, or tokens (T of them per sequence).
  std::string_view item_name() const { return language_model ? "tokens" : "images"; }
  int64_t items_per_sample() const { return language_model ? sample[0] : 1; }
};

// The named networks. MLPs named by their sizes are not listed: there are
// as many as there are size lists (nets/mlp_spec.h).
const std::vector<NetSpec>& all_nets();
// A network by name: one of all_nets(), case-insensitive ("vgg16" finds
// VGG16), or an MLP spec ("MLP:784,2048,10", nets/mlp_spec.h), made on
// demand; hence a copy, not a reference into the list. Throws ConfigError
// listing the names, or saying what is wrong with the MLP spec.
NetSpec find_net(std::string_view name);
std::string net_names();  // "LeNet, AlexNet, VGG11, ..."

// net.build(batch) for a batch a user asked for: a batch too large for the
// network's shapes (SizeError) becomes a ConfigError that says so, naming the
// network, the batch and the first layer that does not fit.
Graph build_net(const NetSpec& net, int batch);

}  // namespace glassbox
