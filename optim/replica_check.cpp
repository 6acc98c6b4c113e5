// optim/replica_check.cpp
#include "optim/replica_check.h"

#include <map>
#include <vector>

#include "tensor/copy.h"

namespace glassbox {

uint64_t parameter_hash(Context& ctx, const Graph& graph) {
  const std::vector<float> values = to_vector<float>(ctx, graph.parameters());
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  uint64_t hash = 14695981039346656037ull;  // FNV-1a offset basis and prime (64-bit)
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

namespace {

// One "what=value" line per property, in the order they are checked.
std::vector<std::pair<std::string, std::string>> properties(Context& ctx, const Graph& graph,
                                                            const ReplicaDescription& replica) {
  return {{"network", replica.network},
          {"batch per rank", std::to_string(replica.batch)},
          {"parameter count", std::to_string(graph.parameter_count())},
          {"seed", std::to_string(replica.seed)},
          {"parameter values (hash)", std::to_string(parameter_hash(ctx, graph))}};
}

std::string encode(const std::vector<std::pair<std::string, std::string>>& props) {
  std::string text;
  for (const auto& [what, value] : props) text += value + '\n';
  return text;
}

std::vector<std::string> decode(const std::string& text) {
  std::vector<std::string> values;
  size_t from = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; from = end + 1, end = text.find('\n', from)) {
    values.push_back(text.substr(from, end - from));
  }
  return values;
}

}  // namespace

void check_replicas(Context& ctx, const Graph& graph, Communicator& communicator, const ReplicaDescription& replica) {
  if (communicator.size() == 1) return;
  const auto mine = properties(ctx, graph, replica);
  const std::vector<std::string> all = communicator.all_gather(encode(mine));
  std::vector<std::vector<std::string>> ranks;
  for (const std::string& text : all) ranks.push_back(decode(text));
  for (size_t p = 0; p < mine.size(); ++p) {
    std::map<std::string, std::vector<int>> holders;  // value -> the ranks that have it
    for (size_t r = 0; r < ranks.size(); ++r) {
      holders[p < ranks[r].size() ? ranks[r][p] : "(missing)"].push_back(static_cast<int>(r));
    }
    if (holders.size() == 1) continue;
    std::string message = cat("ranks disagree on the ", mine[p].first, ":");
    const char* separator = " ";
    for (const auto& [value, which] : holders) {
      std::string names;
      for (int r : which) names += cat(names.empty() ? "" : ", ", r);
      message += cat(separator, which.size() == 1 ? "rank " : "ranks ", names, which.size() == 1 ? " has " : " have ",
                     value);
      separator = "; ";
    }
    throw ConfigError(message + " (every rank must build the same network from the same parameters)");
  }
}

}  // namespace glassbox
