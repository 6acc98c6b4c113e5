// layers/linear/linear_cuda.cpp: Linear's three products on cuBLASLt,
// with the bias, a fused ReLU and the bias gradient in the products'
// epilogues.
//
// The products as column-major GEMMs and their epilogues: layers/linear/gemm_plan.h.
// Each is planned at prepare (layers/linear/linear_product_cuda.h): the forward
// writes y = x w^T + b, or max(0, .) of it where the layer applies the ReLU
// after it (Note [A ReLU fused into its producer], graph/fusion.h), in one
// kernel; the weights' product writes db = sum of dy's rows beside dW. The
// ReLU's backward stays the ReLU's own (layers/relu.cu): the mask would have
// to reach dy before both products read it, one pass either way. The
// bias-gradient epilogue serves float32 data without TF32 only (Note [The
// bias gradient in fp32], layers/linear/gemm_plan.h); there, and wherever
// cuBLASLt offers no kernel with that epilogue for the shapes, db is a
// product of dy with a vector of ones (Note [A bias gradient on cuBLAS],
// layers/bias_gradient_plan.h), and algorithms() says so. Where cuBLASLt
// offers no algorithm for an epilogue or a shape, the product takes the
// route of Note [When cuBLASLt refuses a product] (gemm_plan.h).
//
// The data (x, y, their gradients, the weights and bias in use) are float32
// (fp32 FMA, or TF32 tensor cores in a kTf32 context), or bfloat16 or float16
// in a mixed-precision graph (value_storage(), Note [16-bit values in a
// layer] in layers/layer.h), with fp32 accumulation. The parameter gradients
// stay float32: in a 16-bit graph dW is computed in the data's type into a
// scratch and added widened, as Conv2d's is (Note [16-bit parameter
// gradients] in layers/conv2d/conv2d_cuda.cpp); in float32 dW adds into the
// gradient in the product and db, which the epilogue writes rather than
// adds, is added from a scratch. Without the epilogue, db is summed in fp32
// straight into its gradient, whatever the data's type.
//
// Note [cuBLAS reductions in the output type]: with 16-bit D, cuBLAS may sum
// the partial products of a split-K GEMM in D's type rather than in fp32.
// cuBLASLt's preference allows every reduction scheme unless its mask is
// narrowed, and Glassbox leaves it so, as PyTorch does by default for bf16
// and fp16 matmuls; each dot product itself accumulates in fp32. (The
// cuBLAS handle's math mode, tensor/context_cuda.cpp, says the same for the
// legacy calls.)
#include "layers/linear/linear.h"

#include <algorithm>
#include <optional>

#include "layers/bias_gradient_cuda.h"
#include "layers/layer_cuda.h"
#include "layers/linear/linear_product_cuda.h"
#include "tensor/context_cuda.h"
#include "tensor/convert.h"

namespace glassbox {
namespace {

// The most workspace one product's algorithm may use: cuBLASLt's split-K
// and stream-K kernels keep partial sums there.
constexpr size_t kLtWorkspaceLimit = size_t{32} << 20;

struct LinearState final : BackendState {
  std::optional<LinearProduct> forward;
  std::optional<LinearProduct> backward_data, backward_weights;  // training only
  // No bias-gradient epilogue: db summed from dy by cuBLAS.
  BiasGradient bias_gradient;
  // In training: dW (O, I) in the data's type before it is added widened
  // (16-bit data only), and db (O, float32) as the epilogue writes it (float32
  // data without TF32 only). Undefined otherwise.
  Tensor weight_grad, bias_grad;

  std::string algorithms() const override {
    std::string text = cat("cuBLASLt forward: ", forward->describe());
    if (backward_data) text += cat("; backward-data: ", backward_data->describe());
    if (backward_weights) text += cat("; backward-weights: ", backward_weights->describe());
    if (bias_gradient.planned()) text += cat("; bias gradient: ", bias_gradient.describe());
    return text;
  }
};

}  // namespace

void Linear::prepare_cuda(Context& ctx, const PrepareOptions& options) {
  const DType data = value_storage();
  const bool tf32 = ctx.precision() == Precision::kTf32;
  const int64_t n = rows(), in = in_features(), out = options_.out_features;
  const size_t limit = std::min(kLtWorkspaceLimit, options.workspace_limit);
  auto plan = [&](LinearGemmPass pass, LinearEpilogue epilogue) {
    return LinearProduct::plan(ctx, name(), linear_gemm(pass, n, in, out), data, tf32, epilogue, limit,
                               cuda_library_);
  };
  auto state = std::make_unique<LinearState>();
  state->forward = plan(LinearGemmPass::kForward, linear_epilogue(LinearGemmPass::kForward, options_.bias,
                                                                  fused_relu()));
  if (options.phase == Phase::kTraining) {
    state->backward_data = plan(LinearGemmPass::kBackwardData, LinearEpilogue::kNone);
    // Note [The bias gradient in fp32]: db in the epilogue, or by cuBLAS.
    const bool epilogue_db = options_.bias && bias_gradient_in_epilogue(data, tf32);
    state->backward_weights = plan(LinearGemmPass::kBackwardWeights,
                                   epilogue_db ? LinearEpilogue::kBiasGradientOfB : LinearEpilogue::kNone);
    if (options_.bias && (!epilogue_db || state->backward_weights->passes().bias_gradient)) {
      // Not output_shape(): n rows of `out` features whatever the leading
      // dimensions (Linear::Options::over_last_dim).
      state->bias_gradient = BiasGradient(ctx, n, out, 1, Layout::kNCHW, data);
    }
    if (data != DType::kFloat32) {  // Note [16-bit parameter gradients]
      state->weight_grad = allocate_narrow_param_grads(ctx, Shape{out, in}, 0, data).weight;
    } else if (options_.bias && !state->bias_gradient.planned()) {
      state->bias_grad = ctx.allocate(Shape{out}, DType::kFloat32, MemoryCategory::kGradients);
    }
  }
  size_t workspace = state->forward->workspace_bytes();
  for (const auto* product : {&state->backward_data, &state->backward_weights}) {
    if (*product) workspace = std::max(workspace, (*product)->workspace_bytes());
  }
  set_workspace_bytes(workspace);
  backend_ = std::move(state);
}

void Linear::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<LinearState>(backend_);
  void* workspace = workspace_bytes() > 0 ? checked_workspace(ctx) : nullptr;
  s.forward->run(ctx, name(), args.params[0].raw(), args.inputs[0].raw(), &kZero, args.output.raw(),
                 options_.bias ? args.params[1].raw() : nullptr, workspace);
}

void Linear::backward_cuda(Context& ctx, const BackwardArgs& args) {
  auto& s = state_as<LinearState>(backend_);
  void* workspace = workspace_bytes() > 0 ? checked_workspace(ctx) : nullptr;
  const Tensor& dy = args.output_grad;
  if (args.input_grads[0].defined()) {
    s.backward_data->run(ctx, name(), args.params[0].raw(), dy.raw(), beta_for(args.input_grad_modes[0]),
                         args.input_grads[0].raw(), nullptr, workspace);
  }
  ctx.switch_pass(Pass::kBackwardWeights);
  // float32 data: dW adds into the gradient. 16-bit data: written into the
  // 16-bit scratch, then added widened. db (Note [The bias gradient in
  // fp32]): written into its fp32 scratch by the epilogue, then added; or
  // summed by cuBLAS into the gradient.
  const bool narrow = value_storage() != DType::kFloat32;
  const Tensor& dw = narrow ? s.weight_grad : args.param_grads[0];
  const bool epilogue_db = s.bias_grad.defined();
  s.backward_weights->run(ctx, name(), args.inputs[0].raw(), dy.raw(), narrow ? &kZero : &kOne, dw.raw(),
                          epilogue_db ? s.bias_grad.raw() : nullptr, workspace);
  if (narrow) accumulate_widened(ctx, s.weight_grad, args.param_grads[0]);
  if (!options_.bias) return;
  if (!epilogue_db) {
    s.bias_gradient.run(ctx, dy.raw(), args.param_grads[1].data<float>(), nullptr);  // rows: one product
    return;
  }
  CUBLAS_CHECK(cublasSaxpy(cublas_of(ctx), options_.out_features, &kOne, s.bias_grad.data<float>(), 1,
                           args.param_grads[1].data<float>(), 1));
}

}  // namespace glassbox
