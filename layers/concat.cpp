// layers/concat.cpp: shapes and the CPU path.
//
// Forward walks y as one flat range, split evenly over threads whatever N is:
// each range is cut at the boundaries between inputs into contiguous
// segments (a run of one input's channels within one sample), each a memcpy.
// Backward walks each dx_i the same way, one input after the other.
#include "layers/concat.h"

#include <algorithm>
#include <cstring>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

constexpr const char* kDimNames[4] = {"N", "C", "H", "W"};

// Calls segment(i, x_index, y_index, count) for the pieces of y[begin, end):
// `count` elements of input i starting at its element x_index land at y_index.
template <typename Segment>
void for_each_segment(const std::vector<int64_t>& offsets, int64_t hw, int64_t begin, int64_t end,
                      const Segment& segment) {
  const int64_t row = offsets.back() * hw;  // elements of one sample in y
  int64_t pos = begin;
  while (pos < end) {
    const int64_t n = pos / row;
    const int64_t r = pos - n * row;
    const auto i = static_cast<size_t>(
        std::upper_bound(offsets.begin(), offsets.end(), r / hw) - offsets.begin() - 1);
    const int64_t first = offsets[i] * hw, last = offsets[i + 1] * hw;
    const int64_t count = std::min(last - r, end - pos);
    segment(i, n * (last - first) + (r - first), pos, count);
    pos += count;
  }
}

}  // namespace

std::string Concat::describe() const {
  std::string text;
  for (const Shape& shape : input_shapes()) text += (text.empty() ? "" : " + ") + std::to_string(shape[1]);
  return text + " channels";
}

Shape Concat::infer(std::span<const Shape> inputs) const {
  int64_t channels = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    expect_rank(inputs, static_cast<int>(i), 4, "(N, C, H, W)");
    for (int d : {0, 2, 3}) {
      if (inputs[i][d] != inputs[0][d]) {
        fail(cat("input ", i, " has ", kDimNames[d], " = ", inputs[i][d], ", input 0 has ", kDimNames[d],
                 " = ", inputs[0][d], " (shapes ", inputs[i].str(), " and ", inputs[0].str(),
                 "); only channels may differ"));
      }
    }
    channels += inputs[i][1];
  }
  return Shape{inputs[0][0], channels, inputs[0][2], inputs[0][3]};
}

void Concat::compute_offsets() {
  offsets_.assign(1, 0);
  for (const Shape& shape : input_shapes()) offsets_.push_back(offsets_.back() + shape[1]);
}

void Concat::prepare_cpu(Context&, const PrepareOptions&) { compute_offsets(); }

void Concat::forward_cpu(Context&, const ForwardArgs& args) {
  const int64_t hw = output_shape()[2] * output_shape()[3];
  float* y = args.output.data<float>();
  parallel_for(args.output.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for_each_segment(offsets_, hw, begin, end, [&](size_t i, int64_t x_index, int64_t y_index, int64_t count) {
      std::memcpy(y + y_index, args.inputs[i].data<float>() + x_index, static_cast<size_t>(count) * sizeof(float));
    });
  });
}

// Input by input, in slot order: when one tensor is the gradient of two slots
// (Concat(x, x)), the graph gives the first kWrite and the second kAdd, and
// the add must see the finished write.
void Concat::backward_cpu(Context&, const BackwardArgs& args) {
  const int64_t hw = output_shape()[2] * output_shape()[3];
  const int64_t row = offsets_.back() * hw;  // elements of one sample in dy
  const float* dy = args.output_grad.data<float>();
  for (size_t i = 0; i < args.input_grads.size(); ++i) {
    const Tensor& dx_tensor = args.input_grads[i];
    if (!dx_tensor.defined()) continue;
    const int64_t row_i = (offsets_[i + 1] - offsets_[i]) * hw;  // elements of one sample in dx_i
    float* dx = dx_tensor.data<float>();
    parallel_for(dx_tensor.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t pos = begin; pos < end;) {
        const int64_t n = pos / row_i;
        const int64_t r = pos - n * row_i;
        const int64_t count = std::min(row_i - r, end - pos);
        const float* src = dy + n * row + offsets_[i] * hw + r;
        write_or_add(args.input_grad_modes[i], as_array(dx + pos, count),
                     Eigen::Map<const Eigen::ArrayXf>(src, count));
        pos += count;
      }
    });
  }
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Concat)
}  // namespace glassbox
#endif
