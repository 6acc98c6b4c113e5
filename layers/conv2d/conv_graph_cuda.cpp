// layers/conv2d/conv_graph_cuda.cpp: a convolution pass through cuDNN's
// backend API (layers/conv2d/conv_graph_cuda.h).
//
// Every step returns cuDNN's status rather than throwing: a configuration
// that cannot run here is one of the search's verdicts, not an error. The
// steps throw only where cuDNN cannot make a descriptor at all.
#include "layers/conv2d/conv_graph_cuda.h"

#include <algorithm>
#include <optional>
#include <array>
#include <cstdint>

#include "tensor/checks_cuda.h"
#include "tensor/handles_cuda.h"

namespace glassbox::conv2d_cuda {
namespace {

// The bits of engine_config.h are cuDNN's enum values.
static_assert(kNoteTensorCore == 1u << CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
static_assert(kNoteDownConvertInputs == 1u << CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
static_assert(kNoteReducedPrecisionReduction == 1u << CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION);
static_assert(kNoteFft == 1u << CUDNN_NUMERICAL_NOTE_FFT);
static_assert(kNoteNondeterministic == 1u << CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
static_assert(kNoteWinograd == 1u << CUDNN_NUMERICAL_NOTE_WINOGRAD);
static_assert(kNoteRuntimeCompilation == 1u << CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
static_assert(CUDNN_KNOB_TYPE_TILE_SIZE == 2 && CUDNN_KNOB_TYPE_STAGES == 14 && CUDNN_KNOB_TYPE_SWAP_AB == 43,
              "knob_name()'s table follows cuDNN's numbering");

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;
constexpr int64_t kAlignment = 16;  // bytes; see the header

// A step that failed, thrown inside this file only and returned as a GraphFailure.
struct StepFailed {
  cudnnStatus_t status;
  const char* step;
};
void check(cudnnStatus_t status, const char* step) {
  if (status != CUDNN_STATUS_SUCCESS) throw StepFailed{status, step};
}

void set(const BackendDescriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
         int64_t count, const void* values, const char* step) {
  check(cudnnBackendSetAttribute(d.get(), name, type, count, values), step);
}
void finalize(const BackendDescriptor& d, const char* step) { check(cudnnBackendFinalize(d.get()), step); }

BackendDescriptor make_tensor(int64_t uid, const std::vector<int64_t>& nchw, bool channels_last, DType data) {
  const GraphTensorLayout layout = graph_tensor_layout(nchw, channels_last);
  const cudnnDataType_t type = cudnn_data_type(data);
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  constexpr const char* kStep = "describing a tensor";
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, kStep);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, layout.dims.data(), kStep);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, layout.strides.data(), kStep);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, kStep);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlignment, kStep);
  finalize(t, "finalizing a tensor");
  return t;
}

BackendDescriptor make_convolution(const ConvProblem& p) {
  BackendDescriptor c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  constexpr const char* kStep = "describing the convolution";
  const int64_t spatial = 2;
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // fp32 sums for 16-bit data too
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::array<int64_t, 2> pad = {p.pad_h, p.pad_w}, stride = {p.stride_h, p.stride_w},
                               dilation = {p.dilation_h, p.dilation_w};
  set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, kStep);
  set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, kStep);
  set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, kStep);
  set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data(), kStep);
  set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data(), kStep);
  set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data(), kStep);
  set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data(), kStep);
  finalize(c, "finalizing the convolution");
  return c;
}

// The operation of `pass` on x, w, y with alpha 1 and `beta`.
BackendDescriptor make_operation(Conv2d::Pass pass, const BackendDescriptor& x, const BackendDescriptor& w,
                                 const BackendDescriptor& y, const BackendDescriptor& conv, float beta) {
  struct Names {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  const Names n = pass == Conv2d::Pass::kForward
                      ? Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA}
                  : pass == Conv2d::Pass::kBackwardData
                      ? Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
                      : Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  BackendDescriptor op(n.type);
  constexpr const char* kStep = "describing the operation";
  const cudnnBackendDescriptor_t xd = x.get(), wd = w.get(), yd = y.get(), cd = conv.get();
  const float alpha = 1.0f;
  set(op, n.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &xd, kStep);
  set(op, n.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &wd, kStep);
  set(op, n.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &yd, kStep);
  set(op, n.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd, kStep);
  set(op, n.alpha, CUDNN_TYPE_FLOAT, 1, &alpha, kStep);
  set(op, n.beta, CUDNN_TYPE_FLOAT, 1, &beta, kStep);
  finalize(op, "finalizing the operation");
  return op;
}

// The descriptors an attribute of `from` holds (at most `count`), each made
// of `type` for cuDNN to fill, as the backend API hands them out.
std::vector<BackendDescriptor> get_descriptors(cudnnBackendDescriptor_t from, cudnnBackendAttributeName_t name,
                                               cudnnBackendDescriptorType_t type, int64_t count, const char* step) {
  std::vector<BackendDescriptor> descriptors;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    descriptors.emplace_back(type);
    raw.push_back(descriptors.back().get());
  }
  int64_t returned = 0;
  check(cudnnBackendGetAttribute(from, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()), step);
  descriptors.resize(static_cast<size_t>(std::clamp<int64_t>(returned, 0, count)));
  return descriptors;
}

// An engine's numerical or behaviour notes as bits (1 << the note's value).
template <typename Note>
uint32_t read_notes(const BackendDescriptor& engine, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int count) {
  std::vector<Note> notes(static_cast<size_t>(count));
  int64_t n = 0;
  check(cudnnBackendGetAttribute(engine.get(), name, type, count, &n, notes.data()), "reading an engine's notes");
  uint32_t bits = 0;
  for (int64_t i = 0; i < std::min<int64_t>(n, count); ++i) {
    const auto note = static_cast<uint32_t>(notes[static_cast<size_t>(i)]);
    if (note < 32) bits |= 1u << note;
  }
  return bits;
}

// What cuDNN says about one engine configuration of the heuristics' results.
EngineConfig describe(const BackendDescriptor& config) {
  constexpr const char* kStep = "reading an engine configuration";
  int64_t n = 0;
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t engine_raw = engine.get();
  check(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                 &engine_raw),
        kStep);
  EngineConfig out;
  check(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &out.engine),
        kStep);
  out.numerical_notes = read_notes<cudnnBackendNumericalNote_t>(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                                                 CUDNN_TYPE_NUMERICAL_NOTE,
                                                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  out.behavior_notes = read_notes<cudnnBackendBehaviorNote_t>(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                                              CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
  for (const BackendDescriptor& choice : get_descriptors(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                                        CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS,
                                                        kStep)) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0;
    check(cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type),
          kStep);
    check(cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &value),
          kStep);
    out.knobs.emplace_back(static_cast<int>(type), value);
  }
  return out;
}

// The configurations of one heuristics mode, in its order.
std::vector<EngineConfig> heuristic_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode) {
  BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  constexpr const char* kStep = "asking cuDNN's heuristics";
  set(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, kStep);
  set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, kStep);
  finalize(heuristics, kStep);
  int64_t count = 0;
  check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                 &count, nullptr),
        kStep);
  std::vector<EngineConfig> out;
  if (count == 0) return out;
  // One configuration that cannot be read is left out, not the whole list;
  // the failure is reported where none could be read.
  std::optional<StepFailed> first_failure;
  for (const BackendDescriptor& config : get_descriptors(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                         CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count, kStep)) {
    try {
      out.push_back(describe(config));
    } catch (const StepFailed& e) {
      if (!first_failure) first_failure = e;
    }
  }
  if (out.empty() && first_failure) throw *first_failure;
  return out;
}

}  // namespace

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) {
  CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_));
}
BackendDescriptor& BackendDescriptor::operator=(BackendDescriptor&& other) noexcept {
  if (this != &other) {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
    d_ = other.d_;
    other.d_ = nullptr;
  }
  return *this;
}
BackendDescriptor::~BackendDescriptor() {
  if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
}

std::string GraphFailure::text() const { return cat(cudnnGetErrorString(status), " while ", step); }

std::shared_ptr<const ConvOperationGraph> ConvOperationGraph::build(cudnnHandle_t handle, const ConvProblem& problem,
                                                                    Conv2d::Pass pass, DType data, float beta,
                                                                    GraphFailure& failure) {
  std::shared_ptr<ConvOperationGraph> g(new ConvOperationGraph());
  g->handle_ = handle;
  g->pass_ = pass;
  g->beta_ = beta;
  const bool channels_last = problem.layout == "NHWC";
  try {
    BackendDescriptor x = make_tensor(kUidX, problem.x, channels_last, data);
    BackendDescriptor w = make_tensor(kUidW, problem.w, channels_last, data);
    BackendDescriptor y = make_tensor(kUidY, problem.y, channels_last, data);
    BackendDescriptor conv = make_convolution(problem);
    BackendDescriptor op = make_operation(pass, x, w, y, conv, beta);
    BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    const cudnnBackendDescriptor_t op_raw = op.get();
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op_raw, "building the graph");
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "building the graph");
    finalize(graph, "finalizing the operation graph");
    for (BackendDescriptor* part : {&x, &w, &y, &conv, &op}) g->parts_.push_back(std::move(*part));
    g->graph_ = std::move(graph);
  } catch (const StepFailed& e) {
    failure = {e.status, e.step};
    return nullptr;
  }
  return g;
}

std::vector<std::vector<EngineConfig>> ConvOperationGraph::offered_configs(GraphFailure& failure) const {
  std::vector<std::vector<EngineConfig>> lists;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    try {
      lists.push_back(heuristic_configs(graph_.get(), mode));
    } catch (const StepFailed& e) {
      // Mode A's failure is reported; the fallback list is what is left to try.
      if (mode == CUDNN_HEUR_MODE_A) failure = {e.status, e.step};
    }
  }
  return lists;
}

std::shared_ptr<const GraphPlan> GraphPlan::make(cudnnHandle_t handle, std::shared_ptr<const ConvOperationGraph> graph,
                                                 const EngineConfig& config, GraphFailure& failure) {
  std::shared_ptr<GraphPlan> p(new GraphPlan());
  p->config_ = config;
  try {
    BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    const cudnnBackendDescriptor_t graph_raw = graph->get();
    set(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_raw, "choosing the engine");
    set(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &config.engine, "choosing the engine");
    finalize(engine, "finalizing the engine");
    std::vector<cudnnBackendDescriptor_t> choices;
    for (const auto& [type, value] : config.knobs) {
      BackendDescriptor choice(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
      const auto knob = static_cast<cudnnBackendKnobType_t>(type);
      set(choice, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &knob, "setting a knob");
      set(choice, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value, "setting a knob");
      finalize(choice, "finalizing a knob choice");
      choices.push_back(choice.get());
      p->parts_.push_back(std::move(choice));
    }
    BackendDescriptor engine_config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    const cudnnBackendDescriptor_t engine_raw = engine.get();
    set(engine_config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine_raw,
        "configuring the engine");
    if (!choices.empty()) {
      set(engine_config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          static_cast<int64_t>(choices.size()), choices.data(), "configuring the engine");
    }
    finalize(engine_config, "finalizing the engine configuration");
    BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    const cudnnBackendDescriptor_t config_raw = engine_config.get();
    set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "planning");
    set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config_raw, "planning");
    finalize(plan, "finalizing the execution plan");
    int64_t n = 0, workspace = 0;
    check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                   &workspace),
          "reading the plan's workspace");
    p->workspace_ = static_cast<size_t>(std::max<int64_t>(workspace, 0));
    p->parts_.push_back(std::move(engine));
    p->parts_.push_back(std::move(engine_config));
    p->plan_ = std::move(plan);
  } catch (const StepFailed& e) {
    failure = {e.status, e.step};
    return nullptr;
  }
  p->graph_ = std::move(graph);
  return p;
}

cudnnStatus_t GraphPlan::execute(cudnnHandle_t handle, const std::string& layer, const void* x, const void* w,
                                 const void* y, void* workspace) const {
  if (handle != graph_->handle()) {
    throw Error(cat(layer, " (Conv2d): its graph-API plan (", engine_config_name(config_),
                    ") was built on another context's cuDNN handle; run a graph on the context it was compiled on"));
  }
  const std::array<const void*, 3> pointers = {x, w, y};
  for (const void* pointer : pointers) {
    if (reinterpret_cast<uintptr_t>(pointer) % kAlignment != 0) {
      throw Error(cat(layer, " (Conv2d): the graph-API plan (", engine_config_name(config_),
                      ") was built for 16-byte aligned tensors; ", pointer, " is not"));
    }
  }
  const std::array<const void*, 4> key = {x, w, y, workspace};
  auto found = std::find_if(packs_.begin(), packs_.end(), [&](const Pack& p) { return p.pointers == key; });
  if (found == packs_.end()) {
    const std::array<int64_t, 3> uids = {kUidX, kUidW, kUidY};
    std::array<void*, 3> data = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    cudnnStatus_t status =
        cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data());
    if (status == CUDNN_STATUS_SUCCESS) {
      status = cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                                        data.data());
    }
    if (status == CUDNN_STATUS_SUCCESS) {
      status =
          cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    }
    if (status == CUDNN_STATUS_SUCCESS) status = cudnnBackendFinalize(pack.get());
    if (status != CUDNN_STATUS_SUCCESS) return status;
    constexpr size_t kKeptPacks = 4;  // a layer passes one or two pointer sets (a bridged input, a twin plan's)
    if (packs_.size() == kKeptPacks) packs_.erase(packs_.begin());
    packs_.push_back({key, std::move(pack)});
    found = packs_.end() - 1;
  }
  return cudnnBackendExecute(handle, plan_.get(), found->descriptor.get());
}

}  // namespace glassbox::conv2d_cuda
