// graph/graph.h: a static network graph, compiled once and run many times.
//
// A GraphBuilder (graph/builder.h) adds nodes in order, so the node list is
// already topological: every node's inputs come before it. compile() then fixes
// everything a step needs: parameters (one flat buffer, initialised from a
// seed), gradients (one flat buffer, same layout), every activation and
// activation gradient (one arena each, where tensors alive at different times
// share memory: graph/memory_plan.h), the shared workspace, and each layer's
// descriptors and algorithms. forward() and backward() then allocate nothing,
// create nothing and never wait for the device (unless asked to, for debugging).
//
// With memory reuse (the default), a layer's output is only valid until the
// plan hands its memory to a later tensor: after a step, read the loss and the
// parameters, not the intermediate values (compile with MemoryReuse::kOff to
// keep them all).
#pragma once

#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "layers/layer.h"
#include "tensor/context.h"
#include "tensor/serial.h"
#include "graph/step_spans.h"

namespace glassbox {

// A node's output, as the builder hands it out.
struct Value {
  int node = -1;
  uint32_t graph_id = 0;  // which builder made it, to catch values from another graph
};

struct Node {
  std::string name;
  std::unique_ptr<Layer> layer;  // null for a graph input
  std::vector<int> inputs;       // producer node indices
  Shape shape;
  DType dtype = DType::kFloat32;  // the element type the builder checks inputs against
  // The element type value and grad are stored in, set by compile: dtype,
  // or the 16-bit type of a bf16 or fp16 graph for a layer's float output
  // other than the loss (Note [Mixed precision], graph/mixed_precision.h).
  DType stored = DType::kFloat32;

  // Set by compile().
  Tensor value;                           // the output (or, for an input, the data)
  Tensor grad;                            // d loss / d value; undefined where none is needed
  std::vector<Tensor> input_values;       // the producers' values, in input order
  std::vector<Tensor> input_grads;        // the producers' grads (undefined for graph inputs not asked for)
  std::vector<GradMode> input_grad_modes; // write for the first gradient to reach a producer, then add
  std::vector<Tensor> params;             // views into the flat parameter buffer
  std::vector<Tensor> param_grads;        // views into the flat gradient buffer
  // value and grad hold their (N, C, H, W) in NHWC order: Note [Channels-last
  // values] (graph/layouts.h). Read their bytes accordingly.
  bool channels_last = false;
  // For a ReLU whose forward its producer does (Note [A ReLU fused into its
  // producer], graph/fusion.h): that producer's node index; -1 otherwise.
  int fused_into = -1;
  // And whose backward it does too (Note [A ReLU's backward fused into its
  // producer]): that producer; -1 otherwise. A residual add and its ReLU that
  // a batch norm does (Note [A residual add fused into its batch norm]) have
  // that batch norm in both.
  int backward_fused_into = -1;
  // For that batch norm: the add's other input z, whose value it reads after
  // its own inputs (input_values) and whose gradient it writes
  // (input_grads); -1 otherwise.
  int residual = -1;
  // Whether a training step runs this layer's backward: it has parameters
  // or writes some input's gradient (Note [Only what trains gets a
  // gradient], graph/memory_plan.h). Set by compile; false in inference.
  bool runs_backward = false;

  bool is_input() const { return layer == nullptr; }
};

// Whether activations (and their gradients) whose lifetimes do not overlap
// share memory (graph/memory_plan.h). kOff gives every tensor its own memory,
// so each one can still be read after a step: for debugging, and to check
// that reuse changes no result.
enum class MemoryReuse { kOn, kOff };

enum class LayoutChoice { kAuto, kNchw, kNhwc };
LayoutChoice parse_layout_choice(const std::string& text);  // "auto", "nchw", "nhwc"; ConfigError otherwise
std::string_view name_of(LayoutChoice choice);
// Whether a graph compiled for `device` in `precision` plans NHWC values.
bool plans_channels_last(LayoutChoice choice, Device device, Precision precision);

struct CompileOptions {
  PrepareOptions layers;                 // algorithm search, workspace limit (phase: set from `phase`)
  Precision precision = Precision::kFp32;
  uint64_t seed = 1;                     // parameter initialisation
  // kTraining: forward and backward (the default). kInference: a forward-only
  // graph: no gradients, nothing kept for a backward, and forward runs only in
  // Phase::kInference (running statistics, no dropout).
  Phase phase = Phase::kTraining;
  MemoryReuse memory_reuse = MemoryReuse::kOn;
  bool layer_timing = false;             // time every layer's passes (layer_times(), spans())
  // Push an NVTX range per layer and pass on a GPU (Nsight Systems shows the
  // step's structure); false for a run with no NVTX calls at all (--no-nvtx).
  bool nvtx = true;
  bool sync_each_layer = false;          // debug: wait after every layer to localise device faults
  // Graph inputs whose gradient backward computes, by name ({"images"}): for
  // saliency maps, adversarial examples, or a Glassbox graph inside a larger
  // model. Read them with Graph::input_gradient() after backward. Only float
  // inputs of a training plan; compile throws ConfigError naming the choices.
  std::vector<std::string> input_gradients;
  // Where values are stored NHWC: Note [Channels-last values] (graph/layouts.h).
  // kAuto: NHWC on the CPU, and on a GPU in tf32, bf16 and fp16 (tensor-core
  // kernels work on NHWC); NCHW for fp32 on a GPU. kNhwc stores NHWC wherever
  // the layers that write and read a value can; kNchw keeps every value NCHW
  // (`--layout nchw`: what channels-last saves, measured).
  LayoutChoice layout = LayoutChoice::kAuto;
  // A ReLU done by the convolution or batch norm before it, where the ReLU
  // runs in place: Note [A ReLU fused into its producer] (graph/fusion.h).
  // false runs every ReLU itself (`--no-fusion`: what fusion saves, measured).
  bool fusion = true;
};

// Per-layer times of the last forward and backward, in milliseconds.
struct LayerTime {
  int node = -1;
  double forward_ms = 0.0;
  double backward_ms = 0.0;          // the whole backward: data and weights
  double backward_weights_ms = 0.0;  // its parameter-gradient part, where the layer splits (Layer::splits_backward)
  double backward_data_ms() const { return backward_ms - backward_weights_ms; }
};

struct MemoryPlan;  // graph/memory_plan.h
class PrecisionStaging;  // graph/mixed_precision.h

// What fp16's loss scaling multiplies the loss's gradient by in backward
// (optim/loss_scale.h): `value`, or on a CUDA device the float at `device`
// (device memory, kept there by optim/loss_scaler.h) where that is set.
struct LossScale {
  float value = 1.0f;
  const float* device = nullptr;
  bool active() const { return device != nullptr || value != 1.0f; }
};

class Graph final {
 public:
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  ~Graph();

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(std::string_view name) const;  // throws ConfigError listing the names
  int loss_node() const { return loss_; }
  int64_t parameter_count() const;  // learnable scalars
  int64_t macs() const;             // multiply-accumulates of one forward pass (whole batch)
  // The batch: dimension 0 of the first input, or dimension 1 of a
  // language model's time-major "tokens" (T, B). SizeError above INT_MAX.
  int batch() const;

  // Once per graph: a second compile would make new parameter, gradient and
  // input buffers and leave every tensor, view and optimizer taken from the
  // first behind, so it is refused (ConfigError); build the graph again for
  // other options. A compile that failed may be retried.
  void compile(Context& ctx, const CompileOptions& options = {});
  bool compiled() const { return compiled_ && !moved_.yes; }

  // The tensor of a graph input, to fill before forward(). Throws ConfigError
  // naming the inputs if there is none of that name.
  const Tensor& input(std::string_view name) const;
  // d loss / d input, for an input named in CompileOptions::input_gradients:
  // written by each backward (the first layer to reach it writes, later ones
  // add) and kept until the next one. Throws ConfigError naming the inputs
  // for an unknown name, and saying how to ask for one that was not asked for.
  const Tensor& input_gradient(std::string_view name) const;

  // Dropout's probability from the next training forward on, set between
  // steps (a backward uses its forward's): p in [0, 1), and 0 turns dropout
  // off (a training forward is then the identity). Before or after compile.
  // set_dropout(p) sets every Dropout layer and returns how many there are;
  // set_dropout(layer, p) one of them by name. Invalid p: ConfigError naming
  // the layer, and no layer changed; an unknown layer: ConfigError listing the
  // dropout layers. An LSTM's dropout between its own layers is not a Dropout
  // layer: it is the LSTM's option (Lstm::Options::dropout), fixed when the
  // graph is built, and set_dropout leaves it.
  int set_dropout(float p);
  void set_dropout(std::string_view layer, float p);

  // `after_each_layer`, when given, is called after each layer's forward (for
  // checks that must see a value before its memory is reused).
  void forward(Context& ctx, Phase phase = Phase::kTraining,
               const std::function<void(const Node&)>& after_each_layer = {});
  void zero_grad(Context& ctx);  // for backward(kAccumulate): a sum of backwards starts from zero
  // Note [A step's backward writes the parameter gradients]: with kReplace,
  // the parameter gradients afterwards hold this backward's alone, whatever
  // they held before, and no zero_grad is needed: on the CPU each layer that
  // writes_param_grads() writes them (dW = ...), so they are neither zeroed
  // nor read back (VGG16's 528 MiB of gradients: a fill and a read of each,
  // PyTorch's zero_grad(set_to_none=True) skips both too); the graph zeroes
  // the other layers' just before their backward, and on a CUDA device all
  // of them first. kAccumulate adds this backward's onto what they hold
  // (gradient accumulation; zero_grad first for a fresh sum).
  enum class ParamGrads { kAccumulate, kReplace };
  // `after_each_layer`, when given, is called after each layer's backward has
  // been queued, with its position in backward order (0: the loss layer):
  // data-parallel training starts a bucket's all-reduce there
  // (optim/gradient_sync.h).
  void backward(Context& ctx, ParamGrads param_grads = ParamGrads::kAccumulate,
                const std::function<void(const Node&, int position)>& after_each_layer = {});
  float loss(Context& ctx) const;  // waits for the device
  // Zeroes what layers carry from one forward to the next (an LSTM's final
  // hidden and cell state, the next window's initial state): at the start of
  // each epoch of a language model and of each evaluation. Queued on ctx's stream.
  void reset_carried_state(Context& ctx);

  const Tensor& parameters() const { return parameters_; }  // flat, all learnable parameters
  const Tensor& gradients() const { return gradients_; }    // flat, same layout (undefined in inference plans)
  // A bf16 or fp16 graph's 16-bit copy of parameters(), element for element,
  // which the layers use (Note [Mixed precision]); undefined in fp32 and tf32.
  // The optimizer rewrites it in its update (pass it to Sgd); whoever else
  // writes parameters() (loading a model or a checkpoint) calls
  // refresh_working_parameters afterwards.
  const Tensor& working_parameters() const { return working_parameters_; }
  void refresh_working_parameters(Context& ctx);

  // What fp16's loss scaling multiplies the loss's gradient by in backward
  // (optim/loss_scale.h): positive and finite, 1 unless set. The parameter
  // gradients come out multiplied by it too; the optimizer's loss scaler
  // divides them back. set_loss_scale_on_device: the scale is the float at
  // `scale`, in the CUDA device's memory, read there by backward's kernels,
  // so that the host never waits for it (null: back to the host value; Error
  // on a CPU graph).
  void set_loss_scale(float scale);
  void set_loss_scale_on_device(const float* scale);
  float loss_scale() const { return loss_scale_.value; }

  // A number that changes (tensor/serial.h) whenever a step of this graph
  // would queue other work: at each compile (new buffers), and when the
  // dropout probability or the loss scale (its host value, or the device
  // address it is read from) changes. A step captured as a CUDA graph
  // replays only while it stays (Note [Replaying a step], optim/step_replay.h).
  uint64_t replay_generation() const { return replay_generation_; }

  // Every learnable parameter by name, "<layer>.<parameter>" ("conv1.weight",
  // "layer1.0.bn1.scale"), as views into parameters(). The order is stable and
  // documented: layers in graph order, each layer's parameters in its
  // param_specs() order, which is the order of the flat buffer. Valid after compile().
  std::vector<NamedTensor> named_parameters() const;
  // The same names and shapes as views into another buffer laid out as
  // parameters() is (gradients(), an optimizer's velocity). Throws ShapeError
  // if `flat` is not that buffer's size.
  std::vector<NamedTensor> named_views(const Tensor& flat) const;
  // Layer state that is not learned, "<layer>.<state>"
  // ("layer1.0.bn1.running_mean"), in graph order (Layer::state()).
  std::vector<NamedTensor> named_state() const;

  // Where each layer's parameter gradients lie in gradients() (and its
  // parameters in parameters()), for the layers that have parameters, in
  // graph order: bytes [begin, end), ascending and disjoint (alignment gaps
  // between layers belong to no layer). `position` is the layer's place in
  // backward order, as after_each_layer receives it. Valid after compile().
  struct ParameterRange {
    int node = -1;
    int position = -1;
    size_t begin = 0;
    size_t end = 0;
  };
  std::vector<ParameterRange> parameter_ranges() const;

  // What compile() decided (valid after compile): the phase it was compiled
  // for, and which activations share memory (graph/memory_plan.h).
  Phase compiled_phase() const { return options_.phase; }
  Precision compiled_precision() const { return options_.precision; }
  MemoryReuse compiled_memory_reuse() const { return options_.memory_reuse; }
  const CompileOptions& compiled_options() const { return options_; }
  const MemoryPlan& memory_plan() const;

  // Times of the last forward and backward per layer (compile with
  // layer_timing). Reading waits for the device.
  std::vector<LayerTime> layer_times() const;
  // The last step's spans, one per layer and pass, in the order they ran,
  // with any the caller added (train_step's optimizer); compile with
  // layer_timing. Reading waits for the device.
  std::vector<SpanTime> spans() const;
  // The recorder itself: to add a span of one's own to the step (the
  // optimizer) or to listen to the spans (tensor/kernel_trace.h). Valid after compile.
  StepSpans& step_spans();

  // Sets each node's Node::stored as compile() does for `precision` (Note
  // [Mixed precision]): what plan_activations of a graph not compiled yet
  // needs to plan a bf16 or fp16 graph's bytes. compile() sets them again.
  void set_stored_types(Precision precision);

 private:
  friend class GraphBuilder;
  Graph(std::vector<Node> nodes, int loss);

  void check_context(const Context& ctx, std::string_view what) const;
  void check_not_moved(std::string_view what) const;
  void require_compiled(std::string_view what) const;  // check_not_moved, then compiled
  void allocate_parameters(Context& ctx);
  void allocate_activations(Context& ctx);
  void plan_layouts(Context& ctx, bool prepare_all);  // sets Node::channels_last and prepares layers again
  // Note [A ReLU fused into its producer]: plans the fusion for the layers'
  // current layouts, sets it on the nodes and layers, plans memory for it,
  // and prepares again each layer whose fusion changed, where `prepare`.
  void plan_fusion(Context& ctx, const PrepareOptions* prepare);
  void check_training(std::string_view what) const;
  Pass backward_pass(const Node& node) const;
  void after_layer(Context& ctx, const Node& node, std::string_view pass) const;

  // Whether this graph was moved from: its nodes and buffers are the other
  // Graph's now; compiled() is false, and each call that needs a compiled
  // graph says it was moved from (a defaulted move alone would leave it
  // looking compiled, with nothing behind it).
  struct MovedFrom {
    bool yes = false;
    MovedFrom() = default;
    MovedFrom(MovedFrom&& other) noexcept : yes(other.yes) { other.yes = true; }
    MovedFrom& operator=(MovedFrom&& other) noexcept {
      if (this != &other) yes = std::exchange(other.yes, true);
      return *this;
    }
  };
  MovedFrom moved_;
  std::vector<Node> nodes_;
  std::vector<int> layers_;  // indices of layer nodes, in topological order
  std::vector<int> input_gradient_nodes_;  // graph inputs that get a gradient (CompileOptions::input_gradients)
  int loss_ = -1;
  bool compiled_ = false;
  // The phase of the last forward since compile (none yet: empty). backward
  // and loss() need one: before it the values hold nothing. A forward that
  // throws leaves none, and forward_stopped_ says so: the values are then
  // part that forward's and part an earlier one's, or the plan's reuse.
  std::optional<Phase> last_forward_;
  bool forward_stopped_ = false;
  // Why backward or loss() has no forward to read: "no forward has run since
  // compile" or "the last forward stopped ...".
  std::string no_forward(std::string_view what, std::string_view so) const;
  uint64_t replay_generation_ = next_serial();
  Device device_;
  const Allocator* compiled_allocator_ = nullptr;  // the compiling context's: who it was (check_context)
  CompileOptions options_;
  Tensor parameters_;
  Tensor gradients_;
  Tensor working_parameters_;  // 16-bit, in bf16 and fp16 graphs
  LossScale loss_scale_;
  std::unique_ptr<PrecisionStaging> staging_;  // a bf16 or fp16 graph
  struct ParameterSlot {
    std::string name;  // "conv1.weight"
    Shape shape;
    size_t offset = 0;  // bytes into the flat buffers
    Layout layout = Layout::kNCHW;  // ParamSpec::layout: kNHWC for a KRSC filter
  };
  std::vector<ParameterSlot> parameter_slots_;  // in flat-buffer order
  std::vector<Tensor> arenas_;  // activations, activation gradients, inputs
  std::unique_ptr<MemoryPlan> plan_;
  std::unique_ptr<StepSpans> spans_;  // per layer and pass: timing marks, NVTX ranges, kernel attribution
};

}  // namespace glassbox
