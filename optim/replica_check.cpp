// optim/replica_check.cpp
#include "optim/replica_check.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "tensor/copy.h"

namespace glassbox {

uint64_t parameter_hash(Context& ctx, const Graph& graph) {
  const std::vector<float> values = to_vector<float>(ctx, graph.parameters());
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  uint64_t hash = 14695981039346656037ull;  // FNV-1a offset basis and prime (64-bit)
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

std::string encode_replica_message(const std::vector<std::pair<std::string, std::string>>& properties) {
  std::string text;
  for (const auto& [name, value] : properties) {
    for (const std::string* part : {&name, &value}) text += cat(part->size(), ":", *part);
  }
  return text;
}

std::optional<std::vector<std::pair<std::string, std::string>>> decode_replica_message(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<std::string> parts;
  while (!text.empty()) {
    size_t length = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), length);
    if (error != std::errc() || end == text.data() + text.size() || *end != ':') return std::nullopt;
    if (text[0] == '0' && end != text.data() + 1) return std::nullopt;  // "06:": one spelling per length
    text.remove_prefix(static_cast<size_t>(end - text.data()) + 1);
    if (length > text.size()) return std::nullopt;
    parts.emplace_back(text.substr(0, length));
    text.remove_prefix(length);
  }
  if (parts.size() % 2 != 0) return std::nullopt;
  for (size_t i = 0; i < parts.size(); i += 2) properties.emplace_back(parts[i], parts[i + 1]);
  return properties;
}

namespace {

// Each property in the order they are checked: the replica's first (as
// "the network" reads in a message), then the settings.
constexpr size_t kReplicaProperties = 5;
std::vector<std::pair<std::string, std::string>> properties(Context& ctx, const Graph& graph,
                                                            const ReplicaDescription& replica) {
  std::vector<std::pair<std::string, std::string>> all = {
      {"the network", replica.network},
      {"the batch per rank", std::to_string(replica.batch)},
      {"the parameter count", std::to_string(graph.parameter_count())},
      {"the seed", std::to_string(replica.seed)},
      {"the parameter values (hash)", std::to_string(parameter_hash(ctx, graph))}};
  all.insert(all.end(), replica.settings.begin(), replica.settings.end());
  return all;
}

// A value from another rank, fit for a one-line message.
std::string shown(const std::string& value) { return value.empty() ? "''" : excerpt(value, 60); }

}  // namespace

void check_replicas(Context& ctx, const Graph& graph, Communicator& communicator, const ReplicaDescription& replica) {
  if (communicator.size() == 1) return;
  const auto mine = properties(ctx, graph, replica);
  const std::vector<std::string> all = communicator.all_gather(encode_replica_message(mine));
  std::vector<std::map<std::string, std::string>> ranks;
  for (size_t r = 0; r < all.size(); ++r) {
    const auto decoded = decode_replica_message(all[r]);
    if (!decoded) {
      throw ConfigError(cat("rank ", r, " sent a start-up description that is not one (", all[r].size(),
                            " bytes): are all ranks the same program?"));
    }
    ranks.emplace_back(decoded->begin(), decoded->end());
  }
  for (size_t p = 0; p < mine.size(); ++p) {
    const std::string& what = mine[p].first;
    // value (none: the rank did not send this property) -> the ranks that have it
    std::map<std::optional<std::string>, std::vector<int>> holders;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const auto it = ranks[r].find(what);
      holders[it == ranks[r].end() ? std::nullopt : std::optional(it->second)].push_back(static_cast<int>(r));
    }
    if (holders.size() == 1) continue;
    // Named in rank order: the group of rank 0 first.
    std::vector<std::pair<std::optional<std::string>, std::vector<int>>> groups(holders.begin(), holders.end());
    std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    std::string message = cat("ranks disagree on ", what, ":");
    const char* separator = " ";
    for (const auto& [held, which] : groups) {
      std::string names;
      for (int r : which) names += cat(names.empty() ? "" : ", ", r);
      message += cat(separator, which.size() == 1 ? "rank " : "ranks ", names, which.size() == 1 ? " has " : " have ",
                     held ? shown(*held) : "nothing (it does not send this)");
      separator = "; ";
    }
    throw ConfigError(message + (p < kReplicaProperties
                                     ? " (every rank must build the same network from the same parameters)"
                                     : " (every rank must train with the same settings)"));
  }
}

}  // namespace glassbox
