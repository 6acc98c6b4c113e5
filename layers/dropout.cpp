// layers/dropout.cpp: options, and the CPU path.
//
// Note [Dropout mask bits]: a mask element needs one Bernoulli(1 - p) draw,
// and one std::mt19937_64 call per element would cost more than the memory
// traffic. Each forward takes a single 64-bit key from the context's RNG;
// element pair j then gets its 64 bits from a counter-based hash, SplitMix64's
// output function applied to key + (j + 1) * golden-ratio increment, and each
// element of the pair keeps one 32-bit half: kept iff half >= p * 2^32. The
// bits of an element depend only on the key and its index, so the mask is
// the same for a given seed whatever the thread count or chunking, and the
// loop has no carried state, so it vectorises. The index is the element's
// place in the global batch (Context::replica): replica r of R counts from
// r x count, so R data-parallel replicas draw the masks of one process at R x B.
#include "layers/dropout.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Pairs [begin, end), elements 2j and 2j + 1: the mask and y in one pass.
// Everything by value, so the compiler knows the stores cannot change the
// loop's inputs, and vectorises.
// `first_pair`: the global index of local pair 0.
void draw_and_apply(const float* x, float* m, float* y, int64_t begin, int64_t end, uint64_t key,
                    uint64_t threshold, float scale, uint64_t first_pair) {
  for (int64_t j = begin; j < end; ++j) {
    const uint64_t bits = mix64(key + (first_pair + static_cast<uint64_t>(j) + 1) * kGolden);
    const float m0 = (bits & 0xFFFFFFFFull) >= threshold ? scale : 0.0f;
    const float m1 = (bits >> 32) >= threshold ? scale : 0.0f;
    m[2 * j] = m0;
    m[2 * j + 1] = m1;
    y[2 * j] = x[2 * j] * m0;
    y[2 * j + 1] = x[2 * j + 1] * m1;
  }
}

}  // namespace

Dropout::Dropout(std::string name, Options options) : Layer(std::move(name)) { set_probability(options.p); }

void Dropout::set_probability(float p) {
  if (!(p >= 0.0f && p < 1.0f)) fail_option(cat("p must be in [0, 1), got ", p));  // also rejects NaN
  options_.p = p;
}

int64_t Dropout::bytes_moved(Pass pass) const {
  const int64_t mask = output_shape().numel() * static_cast<int64_t>(size_of(DType::kFloat32));
  // An inference plan keeps no mask: its forward copies x to y.
  const bool moves_mask = (pass == Pass::kForward && !prepared_for_inference()) || pass == Pass::kBackward;
  return Layer::bytes_moved(pass) + (moves_mask ? mask : 0);
}

std::string Dropout::describe() const { return cat("p ", options_.p); }

void Dropout::prepare_cpu(Context& ctx, const PrepareOptions& options) {
  // An inference graph never draws a mask; a training one at p = 0 keeps one, as p may be raised later.
  if (options.phase == Phase::kTraining) mask_ = ctx.allocate(output_shape(), DType::kFloat32, MemoryCategory::kLayerState);
  last_forward_masked_ = false;
}

void Dropout::forward_cpu(Context& ctx, const ForwardArgs& args) {
  last_forward_masked_ = args.phase == Phase::kTraining && options_.p > 0.0f;
  float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  const int64_t count = args.output.numel();
  if (!last_forward_masked_) {
    parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      std::memcpy(y + begin, x + begin, static_cast<size_t>(end - begin) * sizeof(float));
    });
    return;
  }
  // See Note [Dropout mask bits].
  const uint64_t key = ctx.rng()();
  const auto threshold = static_cast<uint64_t>(std::llround(static_cast<double>(options_.p) * 4294967296.0));
  const float scale = 1.0f / (1.0f - options_.p);
  float* m = mask_.data<float>();
  const auto first = static_cast<uint64_t>(ctx.replica().index) * static_cast<uint64_t>(count);
  // Element e of the global batch keeps half e % 2 of pair e / 2's bits.
  auto draw_one = [&](int64_t i) {
    const uint64_t e = first + static_cast<uint64_t>(i);
    const uint64_t bits = mix64(key + (e / 2 + 1) * kGolden);
    m[i] = ((e % 2 == 0 ? bits : bits >> 32) & 0xFFFFFFFFull) >= threshold ? scale : 0.0f;
    y[i] = x[i] * m[i];
  };
  if (first % 2 != 0) {  // local pairs straddle global ones (an odd count on an odd replica): one by one
    parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) draw_one(i);
    });
    return;
  }
  const int64_t pairs = (count + 1) / 2, full_pairs = count / 2;
  parallel_for(pairs, kElementwiseGrain / 2, [&](int64_t begin, int64_t end) {
    draw_and_apply(x, m, y, begin, std::min(end, full_pairs), key, threshold, scale, first / 2);
    if (end > full_pairs) draw_one(count - 1);  // the odd last element: the low half of its pair's bits
  });
}

void Dropout::backward_cpu(Context&, const BackwardArgs& args) {
  const Tensor& dx_tensor = args.input_grads[0];
  if (!dx_tensor.defined()) return;
  const GradMode mode = args.input_grad_modes[0];
  const bool through_mask = last_forward_masked_;
  float* dy = args.output_grad.data<float>();
  float* dx = dx_tensor.data<float>();
  float* m = mask_.data<float>();
  parallel_for(args.output.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    auto out = as_array(dx + begin, n);
    auto in = as_array(dy + begin, n);
    if (through_mask) {
      write_or_add(mode, out, in * as_array(m + begin, n));
    } else {
      write_or_add(mode, out, in);
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Dropout)
}  // namespace glassbox
#endif
