// layers/embedding.cpp: options, shapes, costs and the CPU path.
#include "layers/embedding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {

Embedding::Embedding(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  if (options_.vocabulary <= 0) fail_option(cat("vocabulary must be positive, got ", options_.vocabulary));
  if (options_.dim <= 0) fail_option(cat("dim must be positive, got ", options_.dim));
  if (!(options_.init_range > 0.0f) || !std::isfinite(options_.init_range)) {  // also rejects NaN
    fail_option(cat("init_range must be positive and finite, got ", options_.init_range));
  }
}

std::string Embedding::describe() const { return cat(options_.vocabulary, " x ", options_.dim); }

Shape Embedding::infer(std::span<const Shape> inputs) const {
  if (inputs[0].rank() < 1) {
    fail(cat("expects int32 tokens of rank 1 or more ((T, B) for a sequence), got shape ", inputs[0].str()));
  }
  std::vector<int64_t> dims = inputs[0].dims();
  dims.push_back(options_.dim);
  return Shape(std::move(dims));
}

std::vector<ParamSpec> Embedding::param_specs() const {
  return {{.name = "weight",
           .shape = Shape{options_.vocabulary, options_.dim},
           .init = Init::kUniform,
           .bound = options_.init_range}};
}

// The defaults count the whole (V, E) table read in the forward, a
// backward-data pass, and the whole gradient table read and written; a gather
// reads only the rows its tokens name, there is no float input to get a
// gradient, and the scatter-add touches only those rows. At least min(N, V)
// distinct rows for N positions: the least traffic, as the defaults count it
// (a token repeated in a batch is read once at best).
int64_t Embedding::bytes_moved(Pass pass) const {
  const int64_t positions = input_shapes().at(0).numel();
  const int64_t row_bytes = int64_t{options_.dim} * static_cast<int64_t>(size_of(DType::kFloat32));
  const int64_t tokens = positions * static_cast<int64_t>(size_of(DType::kInt32));
  const int64_t rows = std::min<int64_t>(positions, options_.vocabulary) * row_bytes;
  const int64_t activations = positions * row_bytes;  // y, or dy
  switch (pass) {
    case Pass::kForward: return tokens + rows + activations;
    case Pass::kBackwardData: return 0;
    case Pass::kBackwardWeights:
    case Pass::kBackward: return activations + tokens + 2 * rows;
    case Pass::kOptimizer: return 0;
  }
  return 0;
}

void Embedding::check_tokens(const Tensor& tokens) const {
  const int* token = tokens.data<int>();
  const int64_t count = tokens.numel();
  for (int64_t p = 0; p < count; ++p) {
    if (token[p] < 0 || token[p] >= options_.vocabulary) {
      throw DataError(cat(name(), " (Embedding): the token at position ", input_shapes()[0].index_str(p), " is ",
                      token[p], ", outside [0, ", options_.vocabulary, ")"));
    }
  }
}

void Embedding::forward_cpu(Context&, const ForwardArgs& args) {
  check_tokens(args.inputs[0]);  // before any work, and outside the parallel region
  const int64_t dim = options_.dim;
  const int* tokens = args.inputs[0].data<int>();
  const float* weight = args.params[0].data<float>();
  float* y = args.output.data<float>();
  parallel_for(args.inputs[0].numel(), std::max<int64_t>(1, kElementwiseGrain / dim), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      std::memcpy(y + p * dim, weight + int64_t{tokens[p]} * dim, static_cast<size_t>(dim) * sizeof(float));
    }
  });
}

// Note [Embedding scatter-add without races]: two positions with the same
// token add into the same row of dweight, so splitting the positions over the
// threads would race. Each work item owns a block of columns instead, for
// every row, and walks the positions in order: each element of dweight has
// one writer and its sums one order, so the result has the same bits for any
// thread count (and equals the CUDA ordered kernel's, embedding.cu). Blocks of
// 64 floats are one 256-byte span per row, contiguous in dy and dweight.
constexpr int64_t kColumnsPerBlock = 64;

void Embedding::backward_cpu(Context&, const BackwardArgs& args) {
  check_tokens(args.inputs[0]);  // the row index below must be in range
  const int64_t dim = options_.dim, positions = args.inputs[0].numel();
  const int* tokens = args.inputs[0].data<int>();
  const float* dy = args.output_grad.data<float>();
  float* dweight = args.param_grads[0].data<float>();
  const int64_t blocks = (dim + kColumnsPerBlock - 1) / kColumnsPerBlock;
#pragma omp parallel for schedule(static) if (blocks > 1 && positions * dim >= kElementwiseGrain)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t begin = block * kColumnsPerBlock, width = std::min(dim, begin + kColumnsPerBlock) - begin;
    for (int64_t p = 0; p < positions; ++p) {
      as_array(dweight + int64_t{tokens[p]} * dim + begin, width) +=
          Eigen::Map<const Eigen::ArrayXf>(dy + p * dim + begin, width);
    }
  }
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Embedding)
}  // namespace glassbox
#endif
