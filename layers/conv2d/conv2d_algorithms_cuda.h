// layers/conv2d/conv2d_algorithms_cuda.h: choosing Conv2d's cuDNN algorithms, one
// per pass. Internal to layers/conv2d/conv2d_cuda.cpp (the convolution calls) and
// layers/conv2d/conv2d_algorithms_cuda.cpp (the search), which says how the choice is made.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "layers/conv2d/autotune_cache.h"
#include "layers/conv2d/conv2d.h"
#include "layers/conv2d/conv_graph_cuda.h"
#include "layers/layer_cuda.h"

namespace glassbox::conv2d_cuda {

using Pass = Conv2d::Pass;
inline constexpr std::array<Pass, 3> kPasses = {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter};
inline size_t index_of(Pass pass) { return static_cast<size_t>(pass); }

// The descriptors every cuDNN convolution call takes.
struct ConvDescriptors {
  cudnnHandle_t handle;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
};

// A convolution descriptor of the layer's geometry with the given math type.
using MakeConvolution = std::function<ConvolutionDescriptor(cudnnMathType_t)>;

// What the search is given about the layer.
struct SearchInput {
  std::string layer;                    // the layer's name, for errors
  ConvDescriptors descriptors;
  Shape x, w, y;                        // shapes of the measured search's scratch tensors
  DType data = DType::kFloat32;         // the type of x, w and y (and of that scratch): float32, bfloat16, float16
  std::array<int, 3> pins;              // per pass: Conv2d::kChoose or a pinned algorithm
  MakeConvolution make_convolution;
  bool tf32 = false;                    // the context's precision allows TF32 tensor-op math on float data
  cudnnMathType_t base_math = CUDNN_FMA_MATH;  // the math of a descriptor with no result to follow
  // The measured search's problem, for its cache (Note [Autotune cache]):
  // data, layout, shapes and geometry; the search fills in the rest. The
  // graph API's operation graphs are built from it too.
  ConvProblem problem;
  // What backward-filter's output keeps of its old value: 1 adds dW into the
  // fp32 gradients, 0 writes the 16-bit scratch (Note [16-bit parameter
  // gradients], conv2d_cuda.cpp). A graph-API plan is built for it.
  float filter_beta = 1.0f;
  // Whether backward-data may add into the input's gradient (GradMode::kAdd),
  // which a graph-API engine does through a second plan built with beta 1.
  // False where dx goes through a layout bridge, which does the adding
  // itself: no engine is then refused for want of that plan.
  bool data_adds = true;
  // Where the layer's ReLU is fused into cudnnConvolutionBiasActivationForward,
  // a legacy call, that call's bias and activation descriptors (null
  // otherwise): such a forward runs on no graph-API plan, and the measured
  // search times each legacy forward algorithm through the call.
  cudnnTensorDescriptor_t fused_bias = nullptr;
  cudnnActivationDescriptor_t fused_relu = nullptr;
  bool fused_forward() const { return fused_relu != nullptr; }
};

// One pass's choice: a legacy algorithm with the convolution descriptor to
// run it with (Note [Math type per pass]), or a graph-API plan; and the
// workspace it needs.
struct PassChoice {
  ConvolutionDescriptor convolution;
  int algo = 0;
  size_t workspace = 0;
  // Set where an engine configuration won: the plan that writes the pass's
  // output (beta 0; backward-filter: SearchInput::filter_beta) and, for
  // backward-data, its twin that adds into it (beta 1), for an input whose
  // gradient another layer wrote first (GradMode::kAdd); none where a layout
  // bridge does the adding (SearchInput::data_adds).
  std::shared_ptr<const GraphPlan> plan, plan_adding;
};

struct AlgorithmChoice {
  std::array<PassChoice, 3> passes;  // in Pass order
  std::string summary;               // Conv2d::algorithms(): what was chosen, how, and what was skipped
  // Note [When cuDNN refuses the fused call]: set where the layer's ReLU is
  // fused (SearchInput::fused_forward) but cudnnConvolutionBiasActivationForward
  // runs none of the forward's candidates: why, as the search found it. The
  // forward is then chosen for the plain call, and the layer adds the bias
  // and applies the ReLU in one more pass after it, as the summary says.
  std::string fused_call_refused;
};

// Chooses one algorithm per pass and reserves each choice's workspace in ctx;
// an inference prepare (options.phase) chooses the forward only, and the
// backward passes keep an empty PassChoice and no candidates. Every candidate
// seen, with its verdict, is appended to `candidates` (empty on entry).
// Throws ConfigError for a pin that cannot run and, when
// options.deterministic, when no deterministic algorithm is left for a pass;
// Error when no algorithm can run at all.
AlgorithmChoice choose_algorithms(Context& ctx, const PrepareOptions& options, const SearchInput& input,
                                  std::array<std::vector<Conv2d::AlgorithmCandidate>, 3>& candidates);

}  // namespace glassbox::conv2d_cuda
