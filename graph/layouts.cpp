// graph/layouts.cpp: Note [Channels-last values] (graph/layouts.h).
#include "graph/layouts.h"

#include <algorithm>
#include <numeric>

#include "tensor/copy.h"

namespace glassbox {

namespace {

// Groups of nodes that must share a layout: the inputs and output of every
// layer that keeps its inputs' layout (union-find over node indices).
class LayoutGroups {
 public:
  explicit LayoutGroups(size_t count) : parent_(count) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t root(size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void join(size_t a, size_t b) { parent_[root(a)] = root(b); }

 private:
  std::vector<size_t> parent_;
};

}  // namespace

LayoutChoice parse_layout_choice(const std::string& text) {
  for (LayoutChoice c : {LayoutChoice::kAuto, LayoutChoice::kNchw, LayoutChoice::kNhwc}) {
    if (text == name_of(c)) return c;
  }
  throw ConfigError(cat("unknown layout '", text, "'; valid: auto, nchw, nhwc"));
}

std::string_view name_of(LayoutChoice choice) {
  switch (choice) {
    case LayoutChoice::kAuto: return "auto";
    case LayoutChoice::kNchw: return "nchw";
    case LayoutChoice::kNhwc: return "nhwc";
  }
  return "?";
}

bool plans_channels_last(LayoutChoice choice, Device device, Precision precision) {
  switch (choice) {
    case LayoutChoice::kNchw: return false;
    case LayoutChoice::kNhwc: return true;
    case LayoutChoice::kAuto: return !device.is_cuda() || precision != Precision::kFp32;
  }
  return false;
}

std::vector<bool> plan_channels_last(const std::vector<Node>& nodes, const std::vector<int>& layers, int loss) {
  LayoutGroups groups(nodes.size());
  for (int i : layers) {
    const Node& node = nodes[static_cast<size_t>(i)];
    if (!node.layer->keeps_layout()) continue;
    for (int input : node.inputs) groups.join(static_cast<size_t>(i), static_cast<size_t>(input));
  }
  // A group qualifies until one of its members, writers or readers says no.
  std::vector<bool> group_ok(nodes.size(), true);
  auto refuse = [&](size_t node) { group_ok[groups.root(node)] = false; };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    const bool image = node.shape.rank() == 4 && node.dtype == DType::kFloat32;
    if (node.is_input() || !image || static_cast<int>(i) == loss) refuse(i);
  }
  for (int i : layers) {
    const Node& node = nodes[static_cast<size_t>(i)];
    if (node.layer->keeps_layout()) continue;  // its inputs are in its own group
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      if (!node.layer->can_read_channels_last(static_cast<int>(j))) refuse(static_cast<size_t>(node.inputs[j]));
    }
  }
  // Whether a layer can write NHWC may depend on its inputs' layouts (max
  // pooling writes NHWC only from NHWC): refusing one group can refuse the
  // next, so this runs until nothing changes (each round refuses or stops).
  auto layouts = [&] {
    std::vector<bool> channels_last(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) channels_last[i] = group_ok[groups.root(i)];
    return channels_last;
  };
  for (bool changed = true; changed;) {
    changed = false;
    const std::vector<bool> channels_last = layouts();
    for (int i : layers) {
      const Node& node = nodes[static_cast<size_t>(i)];
      if (!channels_last[static_cast<size_t>(i)] || node.layer->keeps_layout()) continue;
      std::vector<bool> inputs;
      for (int producer : node.inputs) inputs.push_back(channels_last[static_cast<size_t>(producer)]);
      if (!node.layer->can_write_channels_last(inputs)) refuse(static_cast<size_t>(i)), changed = true;
    }
  }
  return layouts();
}

namespace {
template <bool kToNchw>
std::vector<float> transposed(const std::vector<float>& from, const Shape& shape) {
  const int64_t n = shape[0], c = shape[1], pixels = shape[2] * shape[3];
  std::vector<float> to(from.size());
  for (int64_t image = 0; image < n; ++image) {
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t ch = 0; ch < c; ++ch) {
        const auto nchw = static_cast<size_t>((image * c + ch) * pixels + p);
        const auto nhwc = static_cast<size_t>((image * pixels + p) * c + ch);
        to[kToNchw ? nchw : nhwc] = from[kToNchw ? nhwc : nchw];
      }
    }
  }
  return to;
}
}  // namespace

std::vector<float> nchw_from_channels_last(const std::vector<float>& nhwc, const Shape& shape) {
  return transposed<true>(nhwc, shape);
}

std::vector<float> channels_last_from_nchw(const std::vector<float>& nchw, const Shape& shape) {
  return transposed<false>(nchw, shape);
}

std::string layout_path(const std::vector<Node>& nodes, const Node& node) {
  if (node.shape.rank() != 4) return "";
  const char* written = node.channels_last ? "NHWC" : "NCHW";
  for (int producer : node.inputs) {
    const Node& input = nodes[static_cast<size_t>(producer)];
    if (input.shape.rank() == 4 && input.dtype == DType::kFloat32 && input.channels_last != node.channels_last &&
        !layouts_share_bytes(input.shape)) {
      return cat(written, " from ", input.channels_last ? "NHWC" : "NCHW");
    }
  }
  return written;
}

bool any_channels_last(const std::vector<Node>& nodes) {
  return std::any_of(nodes.begin(), nodes.end(), [](const Node& node) { return node.channels_last; });
}

std::vector<float> values_in_nchw_order(Context& ctx, const Tensor& t) {
  std::vector<float> values = to_vector<float>(ctx, t);
  return t.layout() == Layout::kNHWC ? nchw_from_channels_last(values, t.shape()) : values;
}

void write_in_nchw_order(Context& ctx, const std::vector<float>& nchw, const Tensor& t) {
  from_vector<float>(ctx, t.layout() == Layout::kNHWC ? channels_last_from_nchw(nchw, t.shape()) : nchw, t);
}

}  // namespace glassbox
