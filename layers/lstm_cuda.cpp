// layers/lstm_cuda.cpp: the LSTM on cuDNN's RNN API (the v8 entry points of cuDNN 9).
//
// At prepare: an RNN descriptor (CUDNN_LSTM, two bias vectors as PyTorch
// has, a linear input, one direction, no projection, float data and maths),
// data descriptors for x and y (CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, which
// is (T,B,F) row-major when every sequence is T long), the sequence lengths on
// the device, the dropout descriptor with its generator states (seeded from
// the context's RNG, as layers/dropout_cuda.cpp does), the reserve space that
// the training forward fills and both backward calls read (layer state), and
// the shared workspace: cuDNN's, then room for dx when GradMode::kAdd asks to
// add (cudnnRNNBackwardData_v8 only writes dx, so the sum goes through
// cudnnAddTensor, as Dropout's backward does).
// Math: kFp32 is CUDNN_FMA_MATH (no tensor cores); kTf32 is
// CUDNN_DEFAULT_MATH, which lets cuDNN round float inputs to TF32, as the
// convolutions do (layers/conv2d_cuda.cpp).
// Backward: cudnnRNNBackwardData_v8 (dx, and the gate gradients it leaves in
// the reserve space) must run before cudnnRNNBackwardWeights_v8
// (CUDNN_WGRAD_MODE_ADD: Glassbox's parameter gradients accumulate), which is
// the split between the two passes. Neither gets dhy, dcy (nothing flows back
// from the final state) nor computes dhx, dcx (the initial state is detached).
// Determinism: the RNN calls are not in docs/determinism.md yet; whether
// CUDNN_RNN_ALGO_STANDARD's backward weights are bitwise reproducible has not
// been checked on a GPU.
//
// Note [LSTM weight space]: cuDNN takes all of an RNN's weights as one buffer,
// the weight space, whose layout is cuDNN's to define; cudnnGetRNNWeightParams
// says where each matrix and bias of each layer (pseudoLayer) lies. The
// layout expected for a unidirectional CUDNN_LSTM with two biases (the one
// PyTorch's flat weights are views into) is, per layer: the input matrices of gates
// i, f, g, o (linLayerID 0-3), each (H, I_l) row-major, then the recurrent
// ones (4-7), each (H, H), then the input biases of 0-3 and the recurrent ones
// of 4-7. That is param_specs() laid back to back: weight_ih_l{l} (4H, I_l) is
// the four input matrices one above the other, and so on. So the layer asks
// the graph to pack its parameters (Layer::packs_parameters), and the flat
// parameter and gradient buffers are the weight space and its gradient:
// nothing is copied. Since the layout is cuDNN's, prepare checks rather than
// assumes it: the weight space's size must be the parameters' bytes, and each
// of the 8 matrices and 8 biases of every layer must lie where Glassbox's
// views put it; otherwise prepare throws ConfigError naming the matrix and
// both offsets. Forward and backward check that the tensors they get are
// packed so (a pointer comparison per parameter).
#include "layers/lstm.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "layers/layer_cuda.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

using RnnDescriptor = UniqueHandle<cudnnRNNDescriptor_t, cudnnDestroyRNNDescriptor>;
using RnnDataDescriptor = UniqueHandle<cudnnRNNDataDescriptor_t, cudnnDestroyRNNDataDescriptor>;

struct LstmState final : BackendState {
  // The buffers first, so that the descriptors that point at them go before they do.
  Tensor dropout_states;  // cuDNN's generator states, opaque bytes (training, p > 0)
  Tensor reserve;         // what the training forward leaves for backward, opaque bytes
  Tensor seq_lengths;     // int32 (B): T for every sequence, on the device
  DropoutDescriptor dropout;
  RnnDescriptor rnn;
  RnnDataDescriptor x, y;   // (T,B,I), (T,B,H)
  TensorDescriptor state;   // (L,B,H): h0, c0, hT, cT
  TensorDescriptor dx;      // (T*B, I): the GradMode::kAdd sum
  std::vector<size_t> offsets;  // each parameter's byte offset in the weight space
  size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0, dx_offset = 0;
  bool last_forward_trained = false;
  std::string algorithms() const override { return "cuDNN RNN standard"; }
};

// An opaque device buffer of at least `bytes` bytes, held as float32 words.
Tensor allocate_bytes(Context& ctx, size_t bytes) {
  const auto words = static_cast<int64_t>(std::max<size_t>((bytes + 3) / 4, 1));
  return ctx.allocate(Shape{words}, DType::kFloat32, MemoryCategory::kLayerState);
}

// Which of the parameter tensors does not lie at base + offsets[k]; -1 if all do.
int unpacked_index(std::span<const Tensor> tensors, const std::vector<size_t>& offsets) {
  const auto* base = static_cast<const std::byte*>(tensors[0].raw());
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (static_cast<const std::byte*>(tensors[k].raw()) != base + offsets[k]) return static_cast<int>(k);
  }
  return -1;
}

// The number of elements a cuDNN tensor descriptor describes.
int64_t elements_of(cudnnTensorDescriptor_t desc) {
  cudnnDataType_t type{};
  int rank = 0, dims[8] = {}, strides[8] = {};
  CUDNN_CHECK(cudnnGetTensorNdDescriptor(desc, 8, &type, &rank, dims, strides));
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= dims[d];
  return count;
}

// "" if cuDNN's weight space is the packed parameters (Note [LSTM weight
// space]), else what differs. `scratch` is a buffer of the weight space's
// size: cuDNN reports addresses inside it.
std::string weight_space_mismatch(cudnnHandle_t handle, const LstmState& s, const std::vector<ParamSpec>& specs,
                                  const Tensor& scratch, int layers, int64_t hidden, bool bias) {
  const auto* base = static_cast<const std::byte*>(scratch.raw());
  auto matrix = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  auto vector = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  const int per_layer = bias ? 4 : 2;
  const char* gates = "ifgo";
  for (int l = 0; l < layers; ++l) {
    for (int id = 0; id < 8; ++id) {
      void* m = nullptr;
      void* b = nullptr;
      CUDNN_CHECK(cudnnGetRNNWeightParams(handle, s.rnn.get(), l, s.weight_bytes, scratch.raw(), id, matrix.get(), &m,
                                          vector.get(), &b));
      const int gate = id % 4, recurrent = id / 4;
      const auto where = [&](int param, int64_t gate_elements, const void* got) -> std::string {
        const size_t expected = s.offsets[static_cast<size_t>(param)] + static_cast<size_t>(gate * gate_elements) * 4;
        const auto actual = static_cast<const std::byte*>(got) - base;
        if (got != nullptr && static_cast<size_t>(actual) == expected) return "";
        return cat("cuDNN expects ", specs[static_cast<size_t>(param)].name, " gate ", gates[gate], " (layer ", l,
                   ", linLayerID ", id, ") at byte ", got ? std::to_string(actual) : std::string("(none)"),
                   " of its weight space; Glassbox's packed parameters put it at byte ", expected,
                   " (Note [LSTM weight space] in layers/lstm_cuda.cpp)");
      };
      const int w = l * per_layer + recurrent;
      const int64_t in = specs[static_cast<size_t>(w)].shape[1];
      if (std::string error = where(w, hidden * in, m); !error.empty()) return error;
      if (elements_of(matrix.get()) != hidden * in) {
        return cat("cuDNN describes ", specs[static_cast<size_t>(w)].name, " gate ", gates[gate], " with ",
                   elements_of(matrix.get()), " elements, Glassbox with ", hidden * in);
      }
      if (!bias) continue;
      if (std::string error = where(l * per_layer + 2 + recurrent, hidden, b); !error.empty()) return error;
    }
  }
  return "";
}

}  // namespace

void Lstm::prepare_cuda(Context& ctx, const PrepareOptions& options) {
  allocate_state(ctx);
  const Shape& xs = input_shapes()[0];
  for (int64_t size : {xs[0], xs[1], xs[2], xs[0] * xs[1] * std::max<int64_t>(xs[2], options_.hidden)}) {
    if (size > std::numeric_limits<int>::max()) fail(cat("input ", xs.str(), " is too large for cuDNN's int sizes"));
  }
  const int T = static_cast<int>(xs[0]), B = static_cast<int>(xs[1]), I = static_cast<int>(xs[2]);
  const int H = options_.hidden, L = options_.layers;
  const bool training = options.phase == Phase::kTraining;
  cudnnHandle_t handle = cudnn_of(ctx);
  auto s = std::make_unique<LstmState>();

  // Dropout between layers; an inference plan, or p = 0, keeps no generator.
  s->dropout = make_descriptor<DropoutDescriptor>(cudnnCreateDropoutDescriptor);
  if (training && options_.dropout > 0.0f) {
    size_t state_bytes = 0;
    CUDNN_CHECK(cudnnDropoutGetStatesSize(handle, &state_bytes));
    s->dropout_states = allocate_bytes(ctx, state_bytes);
    CUDNN_CHECK(cudnnSetDropoutDescriptor(s->dropout.get(), handle, options_.dropout, s->dropout_states.raw(),
                                          state_bytes, ctx.rng()()));
  } else {
    CUDNN_CHECK(cudnnSetDropoutDescriptor(s->dropout.get(), handle, 0.0f, nullptr, 0, 0));
  }

  const cudnnMathType_t math = ctx.precision() == Precision::kTf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  s->rnn = make_descriptor<RnnDescriptor>(cudnnCreateRNNDescriptor);
  CUDNN_CHECK(cudnnSetRNNDescriptor_v8(s->rnn.get(), CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM,
                                       options_.bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
                                       CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                                       math, I, H, /*projSize: none*/ H, L, s->dropout.get(),
                                       CUDNN_RNN_PADDED_IO_DISABLED));

  const std::vector<int> lengths(static_cast<size_t>(B), T);
  s->x = make_descriptor<RnnDataDescriptor>(cudnnCreateRNNDataDescriptor);
  s->y = make_descriptor<RnnDataDescriptor>(cudnnCreateRNNDataDescriptor);
  CUDNN_CHECK(cudnnSetRNNDataDescriptor(s->x.get(), CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, T, B, I,
                                        lengths.data(), nullptr));
  CUDNN_CHECK(cudnnSetRNNDataDescriptor(s->y.get(), CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, T, B, H,
                                        lengths.data(), nullptr));
  s->seq_lengths = ctx.allocate(Shape{B}, DType::kInt32, MemoryCategory::kLayerState);
  from_vector<int>(ctx, lengths, s->seq_lengths);
  s->state = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  const int dims[3] = {L, B, H}, strides[3] = {B * H, H, 1};
  CUDNN_CHECK(cudnnSetTensorNdDescriptor(s->state.get(), CUDNN_DATA_FLOAT, 3, dims, strides));
  s->dx = make_tensor_descriptor(Shape{xs[0] * xs[1], xs[2]});

  // The weight space must be the packed parameters (Note [LSTM weight space]).
  const std::vector<ParamSpec> specs = param_specs();
  size_t total = 0;
  for (const ParamSpec& spec : specs) {
    s->offsets.push_back(total);
    total += static_cast<size_t>(spec.shape.numel()) * sizeof(float);
  }
  CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle, s->rnn.get(), &s->weight_bytes));
  if (s->weight_bytes != total) {
    fail_option(cat("cuDNN's weight space is ", s->weight_bytes, " bytes, the parameters are ", total,
                    " bytes (Note [LSTM weight space] in layers/lstm_cuda.cpp)"));
  }
  {
    const Tensor scratch = allocate_bytes(ctx, s->weight_bytes);  // freed at once: only its addresses are read
    const std::string mismatch = weight_space_mismatch(handle, *s, specs, scratch, L, H, options_.bias);
    if (!mismatch.empty()) fail_option(mismatch);
  }

  size_t inference_work = 0, training_work = 0, unused = 0;
  CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(handle, s->rnn.get(), CUDNN_FWD_MODE_INFERENCE, s->x.get(), &inference_work,
                                        &unused));
  if (training) {
    CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(handle, s->rnn.get(), CUDNN_FWD_MODE_TRAINING, s->x.get(), &training_work,
                                          &s->reserve_bytes));
    s->reserve = allocate_bytes(ctx, s->reserve_bytes);
  }
  s->work_bytes = std::max(inference_work, training_work);
  s->dx_offset = (s->work_bytes + 255) / 256 * 256;  // the kAdd dx after cuDNN's part, aligned
  set_workspace_bytes(training ? s->dx_offset + static_cast<size_t>(xs.numel()) * sizeof(float) : s->work_bytes);
  backend_ = std::move(s);
}

void Lstm::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<LstmState>(backend_);
  if (const int k = unpacked_index(args.params, s.offsets); k >= 0) {
    fail_option(cat("parameter ", param_specs()[static_cast<size_t>(k)].name,
                    " is not where cuDNN's weight space has it: the parameters must be packed back to back"
                    " (Layer::packs_parameters)"));
  }
  begin_forward();
  const bool training = args.phase == Phase::kTraining;
  s.last_forward_trained = training;
  CUDNN_CHECK(cudnnRNNForward(cudnn_of(ctx), s.rnn.get(), training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                              static_cast<const int32_t*>(s.seq_lengths.raw()), s.x.get(), args.inputs[0].raw(),
                              s.y.get(), args.output.raw(), s.state.get(), h0_.raw(), hT_.raw(), s.state.get(),
                              c0_.raw(), cT_.raw(), s.weight_bytes, args.params[0].raw(), s.work_bytes,
                              checked_workspace(ctx), training ? s.reserve_bytes : 0,
                              training ? s.reserve.raw() : nullptr));
}

void Lstm::backward_cuda(Context& ctx, const BackwardArgs& args) {
  auto& s = state_as<LstmState>(backend_);
  if (!s.last_forward_trained) {
    fail("backward after an inference-phase forward: cuDNN kept nothing for it; run a training forward first");
  }
  if (const int k = unpacked_index(args.param_grads, s.offsets); k >= 0) {
    fail_option(cat("gradient of ", param_specs()[static_cast<size_t>(k)].name,
                    " is not where cuDNN's weight space has it: the gradients must be packed as the parameters"));
  }
  cudnnHandle_t handle = cudnn_of(ctx);
  auto* work = static_cast<std::byte*>(checked_workspace(ctx));
  const auto* seq_lengths = static_cast<const int32_t*>(s.seq_lengths.raw());
  const Tensor& dx = args.input_grads[0];
  // cuDNN writes dx; an unwanted or added one goes to the workspace first.
  const bool direct = dx.defined() && args.input_grad_modes[0] == GradMode::kWrite;
  void* dx_out = direct ? dx.raw() : work + s.dx_offset;
  CUDNN_CHECK(cudnnRNNBackwardData_v8(handle, s.rnn.get(), seq_lengths, s.y.get(), args.output.raw(),
                                      args.output_grad.raw(), s.x.get(), dx_out, s.state.get(), h0_.raw(), nullptr,
                                      nullptr, s.state.get(), c0_.raw(), nullptr, nullptr, s.weight_bytes,
                                      args.params[0].raw(), s.work_bytes, work, s.reserve_bytes, s.reserve.raw()));
  if (dx.defined() && !direct) {
    CUDNN_CHECK(cudnnAddTensor(handle, &kOne, s.dx.get(), dx_out, &kOne, s.dx.get(), dx.raw()));
  }
  ctx.switch_pass(Pass::kBackwardWeights);
  CUDNN_CHECK(cudnnRNNBackwardWeights_v8(handle, s.rnn.get(), CUDNN_WGRAD_MODE_ADD, seq_lengths, s.x.get(),
                                         args.inputs[0].raw(), s.state.get(), h0_.raw(), s.y.get(), args.output.raw(),
                                         s.weight_bytes, args.param_grads[0].raw(), s.work_bytes, work,
                                         s.reserve_bytes, s.reserve.raw()));
}

}  // namespace glassbox
