// layers/lstm/lstm_cuda.cpp: the LSTM on cuDNN's RNN API (the v8 entry points of cuDNN 9).
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
// cudnnAddTensor, on float32 values: the layer is staged in fp32 in a bf16 or
// fp16 graph).
// Math: kFp32 is CUDNN_FMA_MATH (no tensor cores); kTf32, and a bf16 or fp16
// graph's staged fp32 LSTM, CUDNN_DEFAULT_MATH, which lets cuDNN round float
// inputs to TF32, as the convolutions do (layers/conv2d/conv2d_cuda.cpp). In
// a 16-bit graph that rounds the fp32 master weights and the fp32 recurrent
// state too; it is the precision such a graph asks for, as PyTorch's
// autocast runs the LSTM on tensor cores.
// Backward: cudnnRNNBackwardData_v8 (dx, and the gate gradients it leaves in
// the reserve space) must run before cudnnRNNBackwardWeights_v8
// (CUDNN_WGRAD_MODE_ADD: Glassbox's parameter gradients accumulate), which is
// the split between the two passes. Neither gets dhy, dcy (nothing flows back
// from the final state) nor computes dhx, dcx (the initial state is detached).
// Determinism: cuDNN runs the products through cuBLAS on streams of its
// own, which give the same bits run to run only under a fixed
// CUBLAS_WORKSPACE_CONFIG (docs/determinism.md).
//
// Note [One backward per forward]: cudnnRNNBackwardData_v8 takes the reserve
// space, which the training forward filled, as input and output (a non-const
// pointer; cudnnRNNBackwardWeights_v8 reads it after). A second backward on
// the same forward finds the reserve space changed and gets dx wrong (cuDNN
// 9.19 on an H100), where the CPU path has no such limit. So backward_cuda
// refuses a second backward rather than return garbage, and the parity check
// (tests/support/checks.cpp) runs the forward again before its GradMode::kAdd
// backward (tests/test_lstm_cudnn.cpp, test_lstm.cpp's CudaMatchesCpu).
//
// Note [LSTM weight space]: cuDNN takes all of an RNN's weights as one buffer,
// the weight space, whose layout is cuDNN's to define; cudnnGetRNNWeightParams
// says where each matrix and bias of each layer (pseudoLayer) lies. Within one
// parameter the layout is PyTorch's: weight_ih_l{l} (4H, I_l) is the input
// matrices of gates i, f, g, o (linLayerID 0-3), each (H, I_l) row-major, one
// above the other, and so on. The order of the parameters is not per layer: the
// matrices of every layer come first, then every layer's biases (with cuDNN
// 9.19, a two-layer LSTM's bias_ih_l0 follows weight_hh_l1), and cuDNN does not
// promise any order. So prepare asks cuDNN where each parameter's gate i lies,
// checks that its other gates follow as one block and that the parameters tile
// the weight space exactly (ConfigError naming the parameter otherwise), and
// hands those offsets to the graph (Layer::packed_offsets), which places the
// packed parameters and their gradients there (Layer::packs_parameters): the
// flat buffers are the weight space and its gradient, and nothing is copied, as
// PyTorch's flat weights are views into it. Forward and backward check that the
// tensors they get lie so (a pointer comparison per parameter).
#include "layers/lstm/lstm.h"

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
  bool reserve_consumed = false;  // a backward has run since the last training forward
  std::string algorithms() const override { return "cuDNN RNN standard"; }
};

// An opaque device buffer of at least `bytes` bytes, held as float32 words.
Tensor allocate_bytes(Context& ctx, size_t bytes) {
  const auto words = static_cast<int64_t>(std::max<size_t>((bytes + 3) / 4, 1));
  return ctx.allocate(Shape{words}, DType::kFloat32, MemoryCategory::kLayerState);
}

// The weight space's start: where the first parameter's offset counts from.
void* weight_space_of(std::span<const Tensor> tensors, const std::vector<size_t>& offsets) {
  return static_cast<std::byte*>(tensors[0].raw()) - offsets[0];
}

// Which of the parameter tensors does not lie at base + offsets[k]; -1 if all do.
int unpacked_index(std::span<const Tensor> tensors, const std::vector<size_t>& offsets) {
  const auto* base = static_cast<const std::byte*>(weight_space_of(tensors, offsets));
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

// Where cuDNN's weight space has each parameter (param_specs() order), in
// bytes, read from cudnnGetRNNWeightParams (Note [LSTM weight space]); throws
// ConfigError if a parameter's four gates are not one
// row-major block or the parameters do not tile the weight space exactly.
// `scratch` is a buffer of the weight space's size: cuDNN reports addresses
// inside it.
std::vector<size_t> weight_space_offsets(const Lstm& layer, cudnnHandle_t handle, const LstmState& s,
                                         const std::vector<ParamSpec>& specs, const Tensor& scratch) {
  const int layers = layer.options().layers, per_layer = layer.options().bias ? 4 : 2;
  const int64_t hidden = layer.options().hidden;
  const auto* base = static_cast<const std::byte*>(scratch.raw());
  auto matrix = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  auto vector = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  const char* gates = "ifgo";
  std::vector<size_t> offsets(specs.size());
  const auto fail_at = [&](const std::string& what) {
    throw ConfigError(cat(layer.name(), " (LSTM): ", what, " (Note [LSTM weight space] in layers/lstm/lstm_cuda.cpp)"));
  };
  for (int l = 0; l < layers; ++l) {
    for (int id = 0; id < 8; ++id) {
      void* m = nullptr;
      void* b = nullptr;
      CUDNN_CHECK(cudnnGetRNNWeightParams(handle, s.rnn.get(), l, s.weight_bytes, scratch.raw(), id, matrix.get(), &m,
                                          vector.get(), &b));
      const int gate = id % 4, recurrent = id / 4;
      // Gate 0 places the parameter; gates 1-3 must follow it, row-major.
      const auto place = [&](int param, int64_t gate_elements, const void* got, int64_t described) {
        const std::string& name = specs[static_cast<size_t>(param)].name;
        if (got == nullptr) fail_at(cat("cuDNN has no ", name, " gate ", gates[gate], " (layer ", l, ", linLayerID ", id, ")"));
        if (described != gate_elements) {
          fail_at(cat("cuDNN describes ", name, " gate ", gates[gate], " with ", described, " elements, Glassbox with ",
                      gate_elements));
        }
        const auto at = static_cast<size_t>(static_cast<const std::byte*>(got) - base);
        size_t& offset = offsets[static_cast<size_t>(param)];
        if (gate == 0) offset = at;
        const size_t expected = offset + static_cast<size_t>(gate * gate_elements) * sizeof(float);
        if (at != expected) {
          fail_at(cat("cuDNN has ", name, " gate ", gates[gate], " (layer ", l, ", linLayerID ", id, ") at byte ", at,
                      " of its weight space, not at byte ", expected, " after gate i: the gates are not one block"));
        }
      };
      const int w = l * per_layer + recurrent;
      const int64_t in = specs[static_cast<size_t>(w)].shape[1];
      place(w, hidden * in, m, elements_of(matrix.get()));
      if (per_layer == 4) place(l * per_layer + 2 + recurrent, hidden, b, elements_of(vector.get()));
    }
  }
  // The sizes add up to the weight space (checked by the caller), so disjoint
  // parameters inside it tile it exactly.
  std::vector<size_t> order(specs.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
  size_t end = 0;
  for (size_t k : order) {
    if (offsets[k] < end) fail_at(cat("cuDNN's ", specs[k].name, " at byte ", offsets[k], " overlaps the parameter before it"));
    end = offsets[k] + static_cast<size_t>(specs[k].shape.numel()) * sizeof(float);
  }
  if (end > s.weight_bytes) fail_at(cat("cuDNN's parameters end at byte ", end, " of a ", s.weight_bytes, "-byte weight space"));
  return offsets;
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
    // Each data-parallel replica its own masks (Context::replica), as
    // layers/dropout_cuda.cpp seeds them: cuDNN's generator cannot draw one
    // process's masks by global element.
    const unsigned long long seed =
        ctx.rng()() + static_cast<unsigned long long>(ctx.replica().index) * 0x9E3779B97F4A7C15ull;
    CUDNN_CHECK(cudnnSetDropoutDescriptor(s->dropout.get(), handle, options_.dropout, s->dropout_states.raw(),
                                          state_bytes, seed));
  } else {
    CUDNN_CHECK(cudnnSetDropoutDescriptor(s->dropout.get(), handle, 0.0f, nullptr, 0, 0));
  }

  const cudnnMathType_t math = ctx.precision() == Precision::kFp32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
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

  // The packed parameters are the weight space, each where cuDNN has it
  // (Note [LSTM weight space]); the graph places them after prepare.
  const std::vector<ParamSpec> specs = param_specs();
  size_t total = 0;
  for (const ParamSpec& spec : specs) total += static_cast<size_t>(spec.shape.numel()) * sizeof(float);
  CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle, s->rnn.get(), &s->weight_bytes));
  if (s->weight_bytes != total) {
    fail_option(cat("cuDNN's weight space is ", s->weight_bytes, " bytes, the parameters are ", total,
                    " bytes (Note [LSTM weight space] in layers/lstm/lstm_cuda.cpp)"));
  }
  {
    const Tensor scratch = allocate_bytes(ctx, s->weight_bytes);  // freed at once: only its addresses are read
    s->offsets = weight_space_offsets(*this, handle, *s, specs, scratch);
  }
  packed_offsets_ = s->offsets;

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
                    " is not where cuDNN's weight space has it: the parameters must lie at packed_offsets()"
                    " (Layer::packs_parameters)"));
  }
  begin_forward(ctx);
  const bool training = args.phase == Phase::kTraining;
  // Until the forward returns, no backward may use the reserve space: a
  // forward that fails leaves nothing for one.
  s.last_forward_trained = false;
  CUDNN_CHECK(cudnnRNNForward(cudnn_of(ctx), s.rnn.get(), training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                              static_cast<const int32_t*>(s.seq_lengths.raw()), s.x.get(), args.inputs[0].raw(),
                              s.y.get(), args.output.raw(), s.state.get(), h0_.raw(), hT_.raw(), s.state.get(),
                              c0_.raw(), cT_.raw(), s.weight_bytes, weight_space_of(args.params, s.offsets), s.work_bytes,
                              checked_workspace(ctx), training ? s.reserve_bytes : 0,
                              training ? s.reserve.raw() : nullptr));
  s.last_forward_trained = training;
  s.reserve_consumed = false;
}

void Lstm::backward_cuda(Context& ctx, const BackwardArgs& args) {
  auto& s = state_as<LstmState>(backend_);
  if (!s.last_forward_trained) {
    fail("backward after an inference-phase forward: cuDNN kept nothing for it; run a training forward first");
  }
  if (s.reserve_consumed) {
    fail("a second backward after one forward: cuDNN's backward uses up what the forward kept in its reserve "
         "space (Note [One backward per forward] in layers/lstm/lstm_cuda.cpp); run the forward again first");
  }
  if (const int k = unpacked_index(args.param_grads, s.offsets); k >= 0) {
    fail_option(cat("gradient of ", param_specs()[static_cast<size_t>(k)].name,
                    " is not where cuDNN's weight space has it: the gradients must be packed as the parameters"));
  }
  s.reserve_consumed = true;  // from here on cuDNN's backward changes it
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
                                      weight_space_of(args.params, s.offsets), s.work_bytes, work, s.reserve_bytes, s.reserve.raw()));
  if (dx.defined() && !direct) {
    CUDNN_CHECK(cudnnAddTensor(handle, &kOne, s.dx.get(), dx_out, &kOne, s.dx.get(), dx.raw()));
  }
  ctx.switch_pass(Pass::kBackwardWeights);
  CUDNN_CHECK(cudnnRNNBackwardWeights_v8(handle, s.rnn.get(), CUDNN_WGRAD_MODE_ADD, seq_lengths, s.x.get(),
                                         args.inputs[0].raw(), s.state.get(), h0_.raw(), s.y.get(), args.output.raw(),
                                         s.weight_bytes, weight_space_of(args.param_grads, s.offsets), s.work_bytes, work,
                                         s.reserve_bytes, s.reserve.raw()));
}

}  // namespace glassbox
