// layers/embedding_cuda.cpp: Embedding with the kernels of embedding.cu.
//
// Note [Deterministic embedding gradient]: the default backward adds each
// position's dy row into its token's row of dweight with float atomicAdd, one
// position per block. Positions that share a token (frequent words, in every
// batch) then add in whatever order the blocks run, and float addition is not
// associative, so dweight can differ in its last bits from run to run: the
// same class of call as cuDNN's atomic convolution algorithms
// (docs/determinism.md). With PrepareOptions::deterministic the layer runs the
// ordered kernel instead: one thread per (column, slice of the vocabulary),
// adding the positions in order, so each element has one writer and one
// order. It gives the same bits every run, and the CPU path's bits (the same
// adds in the same order). It rescans the tokens once per slice, so it is
// slower; refusing to run (a ConfigError) would have left a language model
// with no deterministic mode at all.
#include "layers/embedding.h"

#include "layers/embedding_kernels_cuda.h"
#include "layers/layer_cuda.h"

namespace glassbox {

void Embedding::prepare_cuda(Context&, const PrepareOptions& options) {
  deterministic_ = options.deterministic;  // Note [Deterministic embedding gradient]
}

void Embedding::forward_cuda(Context& ctx, const ForwardArgs& args) {
  launch_embedding_gather(args.inputs[0].data<int>(), args.params[0].data<float>(), args.inputs[0].numel(),
                          options_.vocabulary, options_.dim, args.output.data<float>(), stream_of(ctx));
}

void Embedding::backward_cuda(Context& ctx, const BackwardArgs& args) {
  const int* tokens = args.inputs[0].data<int>();
  const float* dy = args.output_grad.data<float>();
  float* dweight = args.param_grads[0].data<float>();
  const int64_t n = args.inputs[0].numel();
  if (deterministic_) {
    launch_embedding_scatter_add_ordered(tokens, dy, n, options_.vocabulary, options_.dim, dweight, stream_of(ctx));
  } else {
    launch_embedding_scatter_add_atomic(tokens, dy, n, options_.vocabulary, options_.dim, dweight, stream_of(ctx));
  }
}

}  // namespace glassbox
