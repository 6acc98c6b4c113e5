// optim/replica_check.h: the start-up check of a data-parallel job, that every
// rank holds the same replica.
//
// Averaging gradients keeps replicas identical only if they start identical:
// the same network at the same per-rank batch, the same parameter count, the
// same initialisation seed, and the same parameter values (a checkpoint loaded
// on one rank only, or a different build, would break that silently). And
// they stay in step only if every rank takes the same steps and the same
// update: the same data, steps per epoch, gradient buckets, learning rate and
// schedule, momentum, weight decay, precision, clipping (a rank with more
// steps would start an all-reduce that no other rank joins). Every rank sends
// all of these to every other (Communicator::all_gather); where any differs,
// every rank stops with the same ConfigError naming the ranks and what differs:
//   ranks disagree on the network: rank 0 has LeNet; rank 1 has AlexNet
//   ranks disagree on --data: rank 0 has synthetic:256; rank 1 has synthetic:512
#pragma once

#include <cstdint>
#include <string>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "optim/communicator.h"

namespace glassbox {

struct ReplicaDescription {
  std::string network;  // its registry name ("ResNet50", "MLP:784,100,10")
  int batch = 0;        // per rank
  uint64_t seed = 0;    // parameter initialisation
  // Every other setting that decides the steps or the update, as the flag
  // that sets it and its value: {"--data", "synthetic:256"}, {"--lr", "0.05"}.
  std::vector<std::pair<std::string, std::string>> settings;
};

// What one rank sends: each property as two length-prefixed strings (name,
// value: "6:--data13:synthetic:256"), so that any byte may appear in a
// value; a length has one spelling (no leading zeros), so a message has
// one encoding. decode_replica_message returns null for text that is not
// such a message.
std::string encode_replica_message(const std::vector<std::pair<std::string, std::string>>& properties);
std::optional<std::vector<std::pair<std::string, std::string>>> decode_replica_message(std::string_view text);

// 64-bit FNV-1a of the parameter values, read back from the device.
uint64_t parameter_hash(Context& ctx, const Graph& graph);

// Blocking; a no-op for a communicator of size 1.
void check_replicas(Context& ctx, const Graph& graph, Communicator& communicator, const ReplicaDescription& replica);

}  // namespace glassbox
