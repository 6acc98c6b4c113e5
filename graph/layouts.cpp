// graph/layouts.cpp: Note [Channels-last values on the CPU] (graph/layouts.h).
#include "graph/layouts.h"

#include <numeric>

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

}  // namespace glassbox
