// tests/fuzz/fuzz_mlp_spec.cpp: MLP specs ("MLP:784,2048,10", nets/mlp_spec.h)
// through parse_mlp_spec and the registry, up to the built network. The whole
// input is the name.
//
// A name either is not a spec (no "MLP:" prefix: parse_mlp_spec says so and
// nothing else happens), or is refused with a ConfigError, or is accepted,
// and then:
//   - an oracle written here from the documented grammar agrees, size by size;
//   - the canonical name parses back to the same sizes;
//   - find_net builds the network at batch 1 and 3 with exactly
//     sum (a_i * a_{i+1} + a_{i+1}) parameters and batch x sum a_i * a_{i+1}
//     multiply-accumulates, the input shaped as documented.
// Any other exception, even another glassbox::Error, is a finding.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "nets/mlp_spec.h"
#include "nets/nets.h"
#include "nets/registry.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

namespace {

// The grammar, read the plain way: "MLP:" in any case, then 2 to
// kMlpMaxLayers + 1 comma-separated runs of decimal digits, each from 1 to
// kMlpMaxSize, the last at least 2. nullopt: not valid (or not a spec).
std::optional<std::vector<int>> oracle(std::string_view text) {
  if (text.size() < 4) return std::nullopt;
  for (size_t i = 0; i < 4; ++i) {
    if (std::toupper(static_cast<unsigned char>(text[i])) != "MLP:"[i]) return std::nullopt;
  }
  std::vector<int> sizes;
  int64_t value = 0;
  bool digits = false;
  for (size_t i = 4; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',') {
      if (!digits) return std::nullopt;
      sizes.push_back(static_cast<int>(value));
      value = 0, digits = false;
      continue;
    }
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = std::min<int64_t>(value * 10 + (text[i] - '0'), int64_t{kMlpMaxSize} + 1);  // capped: no overflow
    digits = true;
  }
  if (sizes.size() < 2 || sizes.size() > static_cast<size_t>(kMlpMaxLayers) + 1) return std::nullopt;
  for (int size : sizes) {
    if (size < 1 || size > kMlpMaxSize) return std::nullopt;
  }
  if (sizes.back() < 2) return std::nullopt;
  return sizes;
}

bool has_prefix(std::string_view text) {
  if (text.size() < 4) return false;
  for (size_t i = 0; i < 4; ++i) {
    if (std::toupper(static_cast<unsigned char>(text[i])) != "MLP:"[i]) return false;
  }
  return true;
}

void check_network(std::string_view text, const std::vector<int>& sizes) {
  const NetSpec net = find_net(text);
  FUZZ_CHECK(net.name == mlp_spec_name(sizes));
  FUZZ_CHECK(net.classes == sizes.back());
  FUZZ_CHECK(net.sample == mlp_sample(sizes.front()));
  int64_t params = 0, macs = 0;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    params += int64_t{sizes[i]} * sizes[i + 1] + sizes[i + 1];
    macs += int64_t{sizes[i]} * sizes[i + 1];
  }
  for (const int batch : {1, 3}) {
    const Graph graph = net.build(batch);
    FUZZ_CHECK(graph.parameter_count() == params);
    FUZZ_CHECK(graph.macs() == batch * macs);
    const Shape& images = graph.node("images").shape;
    FUZZ_CHECK(images == Shape({batch, net.sample[0], net.sample[1], net.sample[2]}));
    FUZZ_CHECK(graph.node(cat("fc", sizes.size() - 1)).shape == Shape({batch, sizes.back()}));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::optional<std::vector<int>> expected = oracle(text);
  try {
    const std::optional<std::vector<int>> sizes = parse_mlp_spec(text);
    if (!sizes) {
      FUZZ_CHECK(!has_prefix(text));
      return 0;
    }
    FUZZ_CHECK(expected.has_value() && *sizes == *expected);
    FUZZ_CHECK(parse_mlp_spec(mlp_spec_name(*sizes)) == sizes);
    check_network(text, *sizes);
  } catch (const ConfigError&) {
    FUZZ_CHECK(has_prefix(text) && !expected.has_value());  // refused: a spec, and not a valid one
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: %s escaped: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
