// optim/replica_check.h: the start-up check of a data-parallel job, that every
// rank holds the same replica.
//
// Averaging gradients keeps replicas identical only if they start identical:
// the same network at the same per-rank batch, the same parameter count, the
// same initialisation seed, and the same parameter values (a checkpoint loaded
// on one rank only, or a different build, would break that silently). Every
// rank sends these to every other (Communicator::all_gather); where any
// differs, every rank stops with the same ConfigError naming the ranks and
// what differs:
//   ranks disagree on the network: rank 0 has LeNet; rank 1 has AlexNet
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "optim/communicator.h"

namespace glassbox {

struct ReplicaDescription {
  std::string network;  // its registry name ("ResNet50", "MLP:784,100,10")
  int batch = 0;        // per rank
  uint64_t seed = 0;    // parameter initialisation
};

// 64-bit FNV-1a of the parameter values, read back from the device.
uint64_t parameter_hash(Context& ctx, const Graph& graph);

// Blocking; a no-op for a communicator of size 1.
void check_replicas(Context& ctx, const Graph& graph, Communicator& communicator, const ReplicaDescription& replica);

}  // namespace glassbox
