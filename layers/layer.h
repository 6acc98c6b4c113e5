// layers/layer.h: what every layer is.
//
// A layer knows its maths and shapes (infer, param_specs, macs) and runs
// forward and backward on the CPU (Eigen) or on a CUDA device (cuDNN/cuBLAS).
// The public forward()/backward() are not virtual: they check the tensors
// against the shapes fixed by bind() and dispatch to the private
// forward_cpu/forward_cuda (and backward_*) that each layer implements in its
// x.cpp and x_cuda.cpp. Layers never allocate inside forward or backward:
// everything they keep is allocated in prepare(), at graph compile time.
//
// Gradients: input gradients are written or added per GradMode, which the
// graph chooses where a value fans out to several layers. That is cuDNN's and
// cuBLAS's beta = 0 | 1, one to one. Parameter gradients accumulate (+=),
// except that a layer which writes_param_grads() writes them (dW = ...) when
// BackwardArgs::param_grad_mode says so: a training step's one backward
// (Note [A step's backward writes the parameter gradients], graph/graph.h).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/context.h"
#include "tensor/pass.h"
#include "tensor/tensor.h"

namespace glassbox {

enum class GradMode { kWrite, kAdd };  // dx = ...  |  dx += ...
// dst = value for kWrite, dst += value for kAdd: every CPU backward writes its
// input gradients through this (the CUDA side passes beta_for(mode), layer_cuda.h).
// dst is anything assignable: a float, an Eigen map, block or noalias().
template <typename Dst, typename Value>
void write_or_add(GradMode mode, Dst&& dst, const Value& value) {
  if (mode == GradMode::kAdd) {
    dst += value;
  } else {
    dst = value;
  }
}
enum class Phase { kTraining, kInference };  // batch statistics and dropout vs running statistics and identity

// How a parameter is filled before training (graph/init.cpp implements them).
enum class Init {
  kHeNormal,      // N(0, 2 / fan_in): convolutions before a ReLU (He et al., 2015)
  kFanInUniform,  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)): linear layers and their biases (PyTorch's default)
  kZeros,         // convolution biases, batch-norm shift
  kOnes,          // batch-norm scale
  kUniform,       // U(-bound, bound), ParamSpec::bound fixed by the layer: embeddings (U(-0.1, 0.1), Zaremba et al.)
};

// How layers make their choices at compile time.
enum class AlgoSearch {
  kHeuristic,  // cuDNN's ranked heuristics: fast to compile, usually good
  kMeasured,   // time every candidate once and keep the fastest (glassbox --cudnn-search)
};
// Which of cuDNN's convolution APIs offer candidates on a CUDA device (Note
// [Engine configurations], layers/conv2d/engine_config.h).
enum class CudnnApi {
  kAuto,    // the measured search times both; the heuristic choice takes the legacy algorithms' ranking
  kLegacy,  // the legacy algorithms only (cudnnConvolutionForward and its backward calls)
  kGraph,   // the graph API's engine configurations only
};
// "auto", "legacy" or "graph" (the --cudnn-api flag); throws ConfigError otherwise.
CudnnApi parse_cudnn_api(std::string_view text);
std::string_view name_of(CudnnApi api);  // "auto", "legacy", "graph"
// Which path runs Conv2d on the CPU (layers/conv2d/conv2d.h, cmake/CpuConv.cmake).
enum class CpuConvPath {
  kAuto,      // oneDNN for kernels above 1x1 where the build has it; Glassbox's own for the rest
  kGlassbox,  // Glassbox's own im2col + GEMM (and depthwise taps) for every layer
  kOneDnn,    // oneDNN for every layer (ConfigError at prepare in a build without oneDNN)
};
// "auto", "glassbox" or "onednn" (the --cpu-conv flags); throws ConfigError otherwise.
CpuConvPath parse_cpu_conv_path(std::string_view text);
std::string_view name_of(CpuConvPath path);  // "auto", "glassbox", "onednn"

// The default of PrepareOptions::deterministic: the CMake option
// GLASSBOX_DETERMINISTIC (OFF unless configured ON) defines it for every
// target that links the library.
#ifndef GLASSBOX_DETERMINISTIC
#error "GLASSBOX_DETERMINISTIC is defined to 0 or 1 by CMakeLists.txt (option GLASSBOX_DETERMINISTIC)"
#endif
inline constexpr bool kDeterministicByDefault = GLASSBOX_DETERMINISTIC != 0;
struct PrepareOptions {
  AlgoSearch algo_search = AlgoSearch::kHeuristic;
  // With kMeasured: where the measured results are kept (Note [Autotune
  // cache], layers/conv2d/autotune_cache.h). "" keeps them for this run
  // only; a file (--autotune-cache FILE) keeps them for later runs too.
  std::string autotune_cache;
  size_t workspace_limit = size_t{4} << 30;  // most workspace one layer's algorithm may use
  // Whose candidates Conv2d chooses among on a CUDA device (--cudnn-api). The CPU ignores it.
  CudnnApi cudnn_api = CudnnApi::kAuto;
  // What the graph will run: kTraining (forward and backward) or kInference
  // (forward only), where a layer keeps nothing for a backward (no dropout
  // mask, no workspace or algorithm for the backward passes). Set by the graph
  // from CompileOptions::phase.
  Phase phase = Phase::kTraining;
  // Only algorithms that give the same bits on every run (glassbox --deterministic).
  // Restricts cuDNN's convolution algorithms to those it reports
  // CUDNN_DETERMINISTIC (prepare throws ConfigError where none is left for a
  // pass); every other CUDA call Glassbox makes is deterministic already
  // (docs/determinism.md). The CPU path is deterministic for a given thread
  // count (tests/test_determinism.cpp): there the option changes nothing.
  // Bit-identical runs also need the same algorithms each time, which the
  // heuristic search gives and a measured search (timing noise) need not.
  bool deterministic = kDeterministicByDefault;
  // What runs Conv2d on the CPU (glassbox time --cpu-conv); a layer's own pin
  // (Conv2d::pin_cpu_path) wins. CUDA devices ignore it.
  CpuConvPath cpu_conv = CpuConvPath::kAuto;
  // oneDNN's Winograd kernels for the 3x3 layers where they measured faster
  // (Note [Winograd on the CPU], layers/conv2d/conv2d_choices_onednn.cpp); false
  // keeps every oneDNN convolution direct (--no-winograd). CUDA ignores it.
  bool cpu_winograd = true;
};

struct ParamSpec {
  std::string name;  // "weight", "bias", "scale", "shift"
  Shape shape;
  Init init;
  int64_t fan_in = 1;  // inputs feeding one output unit, for the scaled initialisers
  float bound = 0.0f;  // Init::kUniform's range, which depends on no shape (positive; unused by the others)
  // How a 4-D parameter's elements lie in memory: kNHWC is a filter stored
  // KRSC (output channel, row, column, input channel), as a CUDA convolution
  // on channels-last values reads it (Note [KRSC filters], layers/conv2d/conv2d.h).
  // The shape stays (K, C, R, S); checkpoints hold PyTorch's KCRS order.
  Layout layout = Layout::kNCHW;
};

// A tensor of layer state (Layer::state), by name and shape.
struct StateSpec {
  std::string name;  // "running_mean"
  Shape shape;
};

// The tensors one forward call works on; the graph plans them at compile time.
struct ForwardArgs {
  // x0, x1, ... as given to the builder; then, for a layer that
  // fused_residual(), the residual z (Note [A residual add fused into its
  // batch norm], graph/fusion.h).
  std::span<const Tensor> inputs;
  Tensor output;                   // y: every element is written
  std::span<const Tensor> params;  // in param_specs() order; views into the flat parameter buffer
  Phase phase = Phase::kTraining;
};

struct BackwardArgs {
  std::span<const Tensor> inputs;       // as in forward
  Tensor output;                        // y, as forward left it
  Tensor output_grad;                   // dL/dy (undefined for a loss layer: its gradient is 1)
  std::span<const Tensor> input_grads;  // dL/dx_i (then dL/dz); undefined where no gradient is wanted
  std::span<const GradMode> input_grad_modes;  // per input: write or add
  std::span<const Tensor> params;
  std::span<const Tensor> param_grads;  // dW += ... (kAdd), or dW = ... (kWrite)
  // kWrite only for a layer that writes_param_grads(); Layer::backward refuses it otherwise.
  GradMode param_grad_mode = GradMode::kAdd;
};

// What a layer's device half keeps between calls: cuDNN descriptors and
// algorithm choices (the concrete type is defined in the layer's x_cuda.cpp),
// or a CPU path's own state (Conv2d's oneDNN primitives, layers/conv2d/conv2d_onednn.h).
struct BackendState {
  virtual ~BackendState() = default;
  // The algorithms chosen at compile time, for reports ("" if none).
  virtual std::string algorithms() const { return ""; }
};

// The CPU path's name in algorithms(), where the layer runs its own code or
// Eigen's products and keeps no other state ("Glassbox im2col + GEMM").
class NamedCpuPath final : public BackendState {
 public:
  explicit NamedCpuPath(std::string name) : name_(std::move(name)) {}
  std::string algorithms() const override { return name_; }

 private:
  std::string name_;
};

class Layer {
 public:
  explicit Layer(std::string name);
  virtual ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual std::string_view type() const = 0;     // "Conv2d"
  virtual std::string describe() const = 0;      // options in a few words: "3x3 s1 p1, 64 -> 128"

  // How many inputs the layer takes: [min_inputs, max_inputs].
  virtual int min_inputs() const { return 1; }
  virtual int max_inputs() const { return 1; }
  // The element type input i must have (labels are int32).
  virtual DType input_dtype(int /*index*/) const { return DType::kFloat32; }
  // A loss layer ends the graph: its output is the scalar loss, and its
  // backward starts the chain (it takes no output gradient).
  virtual bool is_loss() const { return false; }

  // Output shape from input shapes. Throws ShapeError naming this layer and the
  // expected and actual shapes. Depends on nothing but the shapes and options.
  virtual Shape infer(std::span<const Shape> inputs) const = 0;

  // Shape inference, done once when the layer joins a graph: checks the input
  // count, infers and stores the shapes. The methods below read these shapes.
  const Shape& bind(std::span<const Shape> inputs);
  bool bound() const { return bound_; }
  // Both throw ShapeError naming the layer before bind(): describe(), macs(),
  // param_specs() and the rest read them, and an unbound layer has none.
  const std::vector<Shape>& input_shapes() const {
    if (!bound_) fail_unbound();
    return input_shapes_;
  }
  const Shape& output_shape() const {
    if (!bound_) fail_unbound();
    return output_shape_;
  }

  // Learnable parameters, in the order forward/backward receive them.
  virtual std::vector<ParamSpec> param_specs() const { return {}; }
  // Whether the layer uses its fp32 master parameters in a bf16 or fp16
  // graph (Note [Mixed precision], graph/mixed_precision.h). The default is
  // no: it uses their 16-bit working copy. Batch norm says yes, as cuDNN's
  // batch norm takes its scale and shift in fp32 whatever the data type,
  // and PyTorch's autocast runs it so.
  virtual bool keeps_fp32_parameters() const { return false; }
  // Note [16-bit values in a layer]: whether the layer, on ctx's device,
  // reads and writes its float values (inputs, output and their gradients)
  // and its weights in 16 bits itself, with fp32 arithmetic inside (cuDNN and
  // cuBLAS with fp32 compute types). The graph gives such a layer its 16-bit
  // tensors as they are, and casts an fp32 input (the images) to 16 bits for
  // it, as autocast does; every other layer of a 16-bit graph gets its
  // tensors widened into fp32 staging (graph/mixed_precision.h), which is
  // correct but costs a conversion pass over each of them. Parameter
  // gradients are fp32 either way. The default is no; a loss layer must say no.
  virtual bool computes_16_bit(const Context& /*ctx*/) const { return false; }
  // Note [A ReLU fused into its producer] (graph/fusion.h): whether the
  // layer, on ctx's device, in a plan of `phase`, can apply max(0, .) to its
  // output as it writes it, so that the ReLU after it need not run its
  // forward. It may depend on the layer's layouts and value type, which the
  // graph sets before it asks. The default is no.
  virtual bool can_fuse_relu(const Context& /*ctx*/, Phase /*phase*/) const { return false; }
  // Where it applies the ReLU in a training plan, whether it also runs the
  // ReLU's backward: it masks its output gradient (the ReLU's) with y > 0,
  // y being its own output, max(0, .), as it reads it (Note [A ReLU's
  // backward fused into its producer]). The default is no.
  virtual bool fuses_relu_backward() const { return false; }
  // Note [A residual add fused into its batch norm] (graph/fusion.h):
  // whether the layer, on ctx's device, in a plan of `phase`, can add a
  // second value of its output's shape, layout and type (the residual z) to
  // its output before the ReLU, y = max(0, f(x) + z), and in a training plan
  // write z's gradient (the ReLU's, masked) as well as its own input's. The
  // default is no.
  virtual bool can_fuse_residual_relu(const Context& /*ctx*/, Phase /*phase*/) const { return false; }
  // Set before prepare (bind resets it): the output is ReLU's; with
  // `residual`, of f(x) + z, z coming after the layer's own inputs in
  // ForwardArgs::inputs and its gradient after theirs in BackwardArgs. Throws
  // ConfigError where can_fuse_relu (can_fuse_residual_relu) is false.
  void set_fused_relu(const Context& ctx, Phase phase, bool fused, bool residual = false);
  bool fused_relu() const { return fused_relu_; }
  bool fused_residual() const { return fused_residual_; }
  // fused_relu() in a training plan, by a layer that fuses_relu_backward():
  // backward takes the ReLU's gradient and reads the output.
  bool fused_relu_backward() const { return fused_relu_backward_; }
  // The type of the layer's float values and weights, set before prepare
  // (bind resets it to float32): float32, or float16 or bfloat16 for a layer
  // that computes_16_bit on the device it is prepared for (prepare throws
  // ConfigError otherwise). Forward and backward check their tensors against it.
  void set_value_storage(DType values);
  DType value_storage() const { return value_storage_; }
  // The weights' type: value_storage(), or float32 for a layer that
  // keeps_fp32_parameters().
  DType weight_storage() const { return keeps_fp32_parameters() ? DType::kFloat32 : value_storage_; }
  // What backward reads besides the output gradient and the parameters, so
  // that the memory plan (graph/memory_plan.h) keeps exactly that alive until
  // the layer's backward and lets the rest share memory. The defaults keep
  // everything; a layer that needs less says so.
  virtual bool backward_reads_input(int /*index*/) const { return true; }
  virtual bool backward_reads_output() const { return true; }
  // Whether input `index`'s gradient is the output gradient itself (dx = dy,
  // an add's), so that the plan may give the two one block and backward then
  // skips that input (Note [Gradients shared through an add], graph/memory_plan.h).
  virtual bool input_grad_is_output_grad(int /*index*/) const { return false; }
  // Whether forward may write its output over its only input's memory (the
  // plan does so where nothing else reads that input).
  virtual bool can_run_in_place() const { return false; }

  // Note [Channels-last values] (graph/layouts.h): whether the
  // layer, as prepared, can read input `index` stored in NHWC order (and
  // write that input's gradient so), and write its output in NHWC order (and
  // read its gradient so) when its inputs are stored as `inputs` says. The
  // shapes stay (N, C, H, W). The graph asks after a first prepare in NCHW,
  // then sets the layouts and prepares again.
  virtual bool can_read_channels_last(int /*index*/) const { return false; }
  virtual bool can_write_channels_last(const std::vector<bool>& /*inputs*/) const { return false; }
  // A layer whose output and gradients are in its inputs' order, whichever
  // it is (ReLU, Add, batch norm on the CPU): the graph gives all the same layout.
  virtual bool keeps_layout() const { return false; }
  // Set before prepare (bind resets them to NCHW); prepare reads them, and
  // forward and backward check that the tensors they get say the same
  // (Tensor::layout).
  void set_channels_last(std::vector<bool> inputs, bool output);
  bool input_channels_last(int index) const { return input_channels_last_[static_cast<size_t>(index)]; }
  bool output_channels_last() const { return output_channels_last_; }
  // Whether the last prepare was for a CUDA device: what a layer can read and
  // write channels-last differs between cuDNN and the CPU's kernels.
  bool prepared_for_cuda() const { return prepared_ && !prepared_on_cpu_; }
  // Whether the last prepare planned a forward only (Phase::kInference):
  // the layer then keeps nothing for a backward (no dropout mask, no cells).
  bool prepared_for_inference() const { return prepared_ && prepared_phase_ == Phase::kInference; }

  // State that belongs to the model but is not learned (batch norm's running
  // statistics), named as PyTorch's buffers are ("running_mean"), valid after
  // prepare(). Checkpoints save and restore it; the default is none.
  virtual std::vector<NamedTensor> state() const { return {}; }
  // The names and shapes of state(), known once the layer is bound (before
  // prepare()): a model's tensors listed without allocating it (nets/torch_names.h).
  virtual std::vector<StateSpec> state_specs() const { return {}; }

  // Zeroes state a layer carries from one forward to the next (a recurrent
  // layer's final state, truncated backpropagation through time's next
  // initial state); the default carries none. Graph::reset_carried_state calls it.
  virtual void reset_carried_state(Context& /*ctx*/) {}

  // Multiply-accumulates of one forward pass over the whole batch. Counted for
  // convolutions and linear layers (forward FLOPs = 2 x MACs), zero for the
  // memory-bound layers, as the reference tables count them.
  virtual int64_t macs() const { return 0; }
  // The roofline's work and traffic of one pass over the whole batch
  // (glassbox time, tools/cli/roofline.h). Analytic, from the bound shapes:
  //   flops: forward 2*macs(); a split backward's backward-data and
  //     backward-weights 2*macs() each, kBackward (the whole) their sum; zero
  //     for the memory-bound layers, as macs() counts them, and for kOptimizer
  //     (the update is the optimizer's, not a layer's).
  //   bytes_moved: every tensor read or written once, in the type the layer
  //     computes in (value_storage(), weight_storage(); parameter gradients
  //     and labels 4 bytes an element); caches and re-reads (im2col, a tiled
  //     GEMM) are not counted, so this is the least traffic the pass can have.
  //     forward:          reads the inputs and parameters, writes the output
  //     backward-data:    reads dy and the weight (parameter 0), writes dx
  //     backward-weights: reads dy and the inputs, writes every parameter
  //                       gradient, and reads it too unless the layer
  //                       writes_param_grads() (as a training step's
  //                       backward runs it; dW += ... reads them)
  //     backward (whole): reads dy (none for a loss), the inputs and output
  //                       that backward_reads_input/backward_reads_output
  //                       name, and the parameters; writes dx for every
  //                       float input and the parameter gradients, as above
  // A layer whose passes move something else (saved state) overrides them and
  // says why. The caller adds the passes that ran: a split layer whose input
  // is the data runs no backward-data (graph/step_spans.h).
  virtual int64_t flops(Pass pass) const;
  virtual int64_t bytes_moved(Pass pass) const;
  // Whether backward computes the input gradient and then, apart, the
  // parameter gradients, calling ctx.switch_pass(Pass::kBackwardWeights)
  // between the two, so that each is timed and traced as its own pass
  // (graph/step_spans.h). Layers whose one call computes both (batch norm) say no.
  virtual bool splits_backward() const { return false; }
  // Whether backward, handed BackwardArgs::param_grad_mode == kWrite, writes
  // the parameter gradients without reading them: the layers whose CPU passes
  // can (Linear, Conv2d, LSTM; prepared on a CPU). The graph zeroes the others'
  // before their backward (graph/graph.h). bytes_moved counts the parameter
  // gradients written only, where this holds, and read and written otherwise.
  bool writes_param_grads() const { return prepared_on_cpu_ && writes_param_grads_on_cpu(); }
  // Whether the graph must place this layer's parameters in one block with
  // no gaps (aligned at its start), each at its packed_offsets() entry, and
  // their gradients likewise. For a layer whose library call takes all its
  // weights as one buffer (cuDNN's RNN weight space, layers/lstm/lstm_cuda.cpp):
  // the parameters are then views into that buffer, and nothing is copied.
  // Other layers' parameters are each aligned.
  virtual bool packs_parameters() const { return false; }
  // Where each parameter (param_specs() order) lies in the packed block, in
  // bytes: back to back in that order unless the layer's library lays them
  // out otherwise (Note [LSTM weight space]). Read after prepare.
  virtual std::vector<size_t> packed_offsets() const;

  // Makes everything the layer needs on ctx's device: saved state,
  // descriptors, algorithm choices, its workspace size. Called once, at graph
  // compile time, after bind().
  void prepare(Context& ctx, const PrepareOptions& options = {});
  // Bytes of shared workspace the layer needs (valid after prepare()).
  size_t workspace_bytes() const { return workspace_bytes_; }
  // Algorithms chosen for this device ("" for layers with no choice): cuDNN's,
  // or on the CPU the path a Conv2d took (oneDNN's implementations).
  std::string algorithms() const { return backend_ ? backend_->algorithms() : ""; }

  void forward(Context& ctx, const ForwardArgs& args);
  void backward(Context& ctx, const BackwardArgs& args);

 protected:
  // Set by prepare_cpu/prepare_cuda: the workspace this layer will use.
  void set_workspace_bytes(size_t bytes) { workspace_bytes_ = bytes; }
  // The context's shared workspace, checked to hold workspace_bytes(); throws
  // Error "name (Type): needs 2.00 MiB of workspace, the context has 0 B (...)".
  void* checked_workspace(const Context& ctx) const;
  // Throws ShapeError "name (Type): <message>": shapes that do not fit.
  [[noreturn]] void fail(const std::string& message) const;
  // "conv1 (Conv2d) forward, input (64, 3, 224, 224) bfloat16 NHWC: ", put before a library's error.
  std::string library_error_context(std::string_view pass) const;
  // Throws ConfigError "name (Type): <message>": an invalid option.
  [[noreturn]] void fail_option(const std::string& message) const;
  // Fails unless input `index` has `rank` dimensions ("(N, C, H, W)" names the layout).
  void expect_rank(std::span<const Shape> inputs, int index, int rank, std::string_view layout) const;
  // The order of input `index`'s and the output's elements, as set_channels_last said.
  Layout input_layout(size_t index) const;
  Layout output_layout() const;

  std::unique_ptr<BackendState> backend_;  // the device half's state, set by prepare_cuda (or prepare_cpu)

 private:
  // The backend halves: *_cpu in layers/x.cpp, *_cuda in layers/x_cuda.cpp.
  virtual void prepare_cpu(Context& /*ctx*/, const PrepareOptions& /*options*/) {}
  virtual void prepare_cuda(Context& ctx, const PrepareOptions& options) = 0;
  virtual void forward_cpu(Context& ctx, const ForwardArgs& args) = 0;
  virtual void forward_cuda(Context& ctx, const ForwardArgs& args) = 0;
  virtual void backward_cpu(Context& ctx, const BackwardArgs& args) = 0;
  virtual void backward_cuda(Context& ctx, const BackwardArgs& args) = 0;
  // Whether backward_cpu honours BackwardArgs::param_grad_mode (writes_param_grads).
  virtual bool writes_param_grads_on_cpu() const { return false; }

  [[noreturn]] void fail_unbound() const;
  // input_dtype(index), with float32 read as value_storage() (labels stay int32).
  DType stored_input_dtype(size_t index) const;
  void check_tensor(const Context& ctx, const Tensor& t, const Shape& shape, DType dtype, std::string_view role,
                    Layout layout = Layout::kNCHW) const;

  std::string name_;
  bool bound_ = false;
  bool prepared_ = false;
  Phase prepared_phase_ = Phase::kTraining;
  bool prepared_on_cpu_ = false;
  std::vector<Shape> input_shapes_;
  Shape output_shape_;
  std::vector<bool> input_channels_last_;  // Note [Channels-last values]
  bool output_channels_last_ = false;
  DType value_storage_ = DType::kFloat32;  // Note [16-bit values in a layer]
  bool fused_relu_ = false;                // Note [A ReLU fused into its producer]
  bool fused_relu_backward_ = false;       // and its backward
  bool fused_residual_ = false;            // Note [A residual add fused into its batch norm]
  std::vector<Shape> param_shapes_;
  std::vector<Layout> param_layouts_;  // ParamSpec::layout as prepared
  size_t workspace_bytes_ = 0;
};

}  // namespace glassbox

// In a CPU-only build a layer's x_cuda.cpp is not compiled; its x.cpp ends with
//   #if !GLASSBOX_WITH_CUDA
//   GLASSBOX_LAYER_WITHOUT_CUDA(Conv2d)
//   #endif
// so that the CUDA entry points exist and throw NotBuiltError instead.
#define GLASSBOX_LAYER_WITHOUT_CUDA(Type)                                                   \
  void Type::prepare_cuda(::glassbox::Context&, const ::glassbox::PrepareOptions&) {         \
    ::glassbox::throw_not_built(#Type);                                                     \
  }                                                                                         \
  void Type::forward_cuda(::glassbox::Context&, const ::glassbox::ForwardArgs&) {           \
    ::glassbox::throw_not_built(#Type);                                                     \
  }                                                                                         \
  void Type::backward_cuda(::glassbox::Context&, const ::glassbox::BackwardArgs&) {         \
    ::glassbox::throw_not_built(#Type);                                                     \
  }

namespace glassbox {
[[noreturn]] void throw_not_built(std::string_view layer_type);
}  // namespace glassbox
