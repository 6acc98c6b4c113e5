// layers/lstm/lstm_cpu.cpp: the LSTM's CPU path (layers/lstm/lstm.h has the maths).
//
// CPU forward, per layer: the input projection of all T steps as one product
// (T*B, I) x (I, 4H) with both biases added, then per step the recurrent
// product h_{t-1} W_hh^T fused with the gates and the cell update, split over
// blocks of hidden units (each block needs the four gate columns of its own
// units only, so blocks are independent within a step). Backward mirrors it:
// per step, from the last, dL/dh_t (from above plus the recurrent product of
// step t + 1's gate gradients) and dL/da_t for a block of units; then the
// whole-sequence products dx = da W_ih (the data half) and dW_ih += da^T x,
// dW_hh += da^T h_{t-1}, db += sum da (the weight half). The gate gradients of
// every layer are kept between the halves, so the two are timed apart.
// Where built with oneDNN, the forward (of training and inference plans
// alike) runs its per-step recurrent products on oneDNN's matmul instead, the
// gates after them (Note [The recurrent step on oneDNN's matmul] in
// layers/lstm/lstm_steps_onednn.h; Note [LSTM inference on the training forward's
// steps] below).
// Eigen runs single-threaded (Note [Eigen's own threads]); the products are
// split into blocks over OpenMP threads, as layers/linear/linear.cpp does.
#include "layers/lstm/lstm.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <omp.h>

#include "layers/linear/streamed_product.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"
#include "tensor/product.h"
#if GLASSBOX_WITH_ONEDNN
#include "layers/lstm/lstm_steps_onednn.h"
#endif

namespace glassbox {
namespace {

// Rows of a weight matrix per work item, in products of fewer than
// kComputeBoundRows rows (Note [Blocks of a product over the threads]).
constexpr int64_t kRowsPerBlock = 64;
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// Note [The recurrent step streamed]: built without oneDNN (the sanitizer
// build, the GPU machine's; with it, Note [The recurrent step on oneDNN's
// matmul] in layers/lstm/lstm_steps_onednn.h), a step's recurrent product is B rows
// against all of W_hh (4H x H). At small batches, once W_hh no longer stays
// in a core's cache, streaming the weights once per step is all its cost, as
// in a linear layer's forward (Note [Linear forward at small batches] in
// layers/linear/linear.cpp): OpenBLAS's GEMM, under Eigen's product, packs each
// block of W_hh before reading the copy, where streamed_forward
// (layers/linear/streamed_product.h) reads it as it is, about a quarter faster on
// LSTM and LSTMLarge at batch 10. A W_hh that fits in L2 (LSTMSmall's) is
// faster on Eigen's product, so only a W_hh past kMinStreamedWeightBytes (a
// core's L2) streams. The backward's dh += da_{t+1} W_hh streamed
// (streamed_backward_data) gains nothing, so it stays on Eigen's product.
constexpr int64_t kMinStreamedWeightBytes = int64_t{2} << 20;

// Hidden units per work item within a step: an even share per thread, in
// multiples of 16 floats. A step is small (B rows), and every step ends in a
// barrier, so one block per thread wastes least waiting for the slowest.
int64_t units_per_block(int64_t hidden) {
  const int64_t share = (hidden + omp_get_max_threads() - 1) / omp_get_max_threads();
  return std::max<int64_t>(16, (share + 15) / 16 * 16);
}

// SplitMix64's output function, as layers/dropout.cpp uses it (Note [Dropout mask bits]).
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

StridedMatrixMap columns(float* data, int64_t rows, int64_t cols, int64_t stride) {
  return StridedMatrixMap(data, rows, cols, Eigen::OuterStride<>(stride));
}

// One layer's tensors in a forward. Pointers into (T,B,.) buffers, row-major.
struct LayerForward {
  float* x;                // (T*B, in)
  int64_t in;
  float* w_ih;             // (4H, in)
  float* w_hh;             // (4H, H)
  float* b_ih;             // (4H), or null without bias
  float* b_hh;
  float* h0;               // (B,H)
  float* c0;
  float* gates;            // (T,B,4H): pre-activations, then the activated gates
  float* cells;            // (T,B,H), or null: only the running c, in c_last (inference)
  float* h;                // (T,B,H)
  float* h_last;           // (B,H): the final state
  float* c_last;
  OneDnnLstmSteps* steps;  // the recurrent products on oneDNN (where built with it), or null
  void* workspace;         // the layer's, for `steps`
};

// Units [j0, j0 + n) of one sequence: a (4H) holds the pre-activations,
// which become i, f, g, o in place; then c and h.
void gate_step(float* a, const float* c_prev, float* c, float* h, int64_t H, int64_t j0, int64_t n) {
  ArrayMap i(a + j0, n), f(a + H + j0, n), g(a + 2 * H + j0, n), o(a + 3 * H + j0, n);
  i = (1.0f + (-i).exp()).inverse();
  f = (1.0f + (-f).exp()).inverse();
  g = g.tanh();
  o = (1.0f + (-o).exp()).inverse();
  ArrayMap cell(c + j0, n);
  cell = f * Eigen::Map<const Eigen::ArrayXf>(c_prev + j0, n) + i * g;  // c_prev may be c (inference)
  ArrayMap(h + j0, n) = o * cell.tanh();
}

void forward_layer(const LayerForward& l, int64_t T, int64_t B, int64_t H) {
  const int64_t G = 4 * H, rows = T * B;
  MatrixMap a(l.gates, rows, G), x(l.x, rows, l.in), w_ih(l.w_ih, G, l.in), w_hh(l.w_hh, G, H);
  const bool streamed = B <= kMaxStreamedBatch && G * H * int64_t{sizeof(float)} > kMinStreamedWeightBytes;
  // a = x W_ih^T + b_ih + b_hh
  for_each_block(G, product_block(G, rows, kRowsPerBlock), [&](int64_t begin, int64_t end) {
    auto block = a.middleCols(begin, end - begin);
    product_into(block, x, w_ih.middleRows(begin, end - begin).transpose());  // Note [Products without Eigen's zeroing pass]
    if (l.b_ih) {
      block.rowwise() += (MatrixMap(l.b_ih, 1, G) + MatrixMap(l.b_hh, 1, G)).row(0).segment(begin, end - begin);
    }
  });
#if GLASSBOX_WITH_ONEDNN
  if (l.steps != nullptr) l.steps->load_weights(l.w_hh, l.workspace);
#endif
  for (int64_t t = 0; t < T; ++t) {
    float* a_t = l.gates + t * B * G;
    float* h_prev = t == 0 ? l.h0 : l.h + (t - 1) * B * H;
    float* c_t = l.cells ? l.cells + t * B * H : l.c_last;
    const float* c_prev = t == 0 ? l.c0 : (l.cells ? c_t - B * H : l.c_last);
    float* h_t = l.h + t * B * H;
    auto gates = [&](int64_t j0, int64_t j1) {  // units [j0, j1) of every sequence, from a_t
      for (int64_t b = 0; b < B; ++b) gate_step(a_t + b * G, c_prev + b * H, c_t + b * H, h_t + b * H, H, j0, j1 - j0);
    };
#if GLASSBOX_WITH_ONEDNN
    if (l.steps != nullptr) {  // Note [The recurrent step on oneDNN's matmul] (layers/lstm/lstm_steps_onednn.h)
      l.steps->step(h_prev, a_t);
      for_each_block(H, units_per_block(H), gates);
      continue;
    }
#endif
    const MatrixMap hp(h_prev, B, H);
    for_each_block(H, units_per_block(H), [&](int64_t j0, int64_t j1) {
      const int64_t n = j1 - j0;
      for (int64_t k = 0; k < 4; ++k) {  // gate k's columns of these units: += h_{t-1} W_hh[kH + j, :]^T
        if (streamed) {  // Note [The recurrent step streamed]
          streamed_forward(B, h_prev, H, l.w_hh, k * H + j0, k * H + j1, a_t, G, GradMode::kAdd);
        } else {
          columns(a_t + k * H + j0, B, n, G).noalias() += hp * w_hh.middleRows(k * H + j0, n).transpose();
        }
      }
      gates(j0, j1);
    });
  }
  std::copy_n(l.h + (T - 1) * B * H, B * H, l.h_last);
  if (l.cells) std::copy_n(l.cells + (T - 1) * B * H, B * H, l.c_last);
}

// One layer's tensors in a backward: forward's saved state and the gradients.
struct LayerBackward {
  float* h0;       // (B,H)
  float* c0;
  float* gates;    // (T,B,4H): i, f, g, o
  float* cells;    // (T,B,H)
  float* dh;       // (T,B,H): dL/dh_t from above (dy, or the next layer's input gradient)
  float* dgates;   // (T,B,4H): dL/da_t, written
  float* w_hh;     // (4H, H)
  float* dh_step;  // (B,H) scratch: dL/dh_t in total
  float* dc;       // (B,H) scratch: dL/dc_t carried from step t + 1
};

// Units [j0, j0 + n) of one sequence at one step: dL/da from dL/dh_t and the
// dL/dc_t carried from t + 1, which becomes the dL/dc_{t-1} that step t - 1 takes.
void gate_grad_step(const float* a, const float* c, const float* c_prev, const float* dh_total, float* dc,
                    float* da, int64_t H, int64_t j0, int64_t n) {
  using ConstArray = Eigen::Map<const Eigen::ArrayXf>;
  ConstArray i(a + j0, n), f(a + H + j0, n), g(a + 2 * H + j0, n), o(a + 3 * H + j0, n);
  ConstArray cell(c + j0, n), cp(c_prev + j0, n), dh(dh_total + j0, n);
  ArrayMap dcell(dc + j0, n);
  ArrayMap(da + 3 * H + j0, n) = dh * cell.tanh() * o * (1.0f - o);
  dcell = dh * o * (1.0f - cell.tanh().square()) + dcell;  // all of dL/dc_t
  ArrayMap(da + j0, n) = dcell * g * i * (1.0f - i);
  ArrayMap(da + H + j0, n) = dcell * cp * f * (1.0f - f);
  ArrayMap(da + 2 * H + j0, n) = dcell * i * (1.0f - g.square());
  dcell *= f;
}

void backward_recurrence(const LayerBackward& l, int64_t T, int64_t B, int64_t H) {
  const int64_t G = 4 * H;
  const MatrixMap w_hh(l.w_hh, G, H);
  for (int64_t t = T - 1; t >= 0; --t) {
    const float* c_prev = t == 0 ? l.c0 : l.cells + (t - 1) * B * H;
    for_each_block(H, units_per_block(H), [&](int64_t j0, int64_t j1) {
      const int64_t n = j1 - j0;
      auto dh = columns(l.dh_step + j0, B, n, H);
      dh = columns(l.dh + t * B * H + j0, B, n, H);
      if (t + 1 < T) {  // h_t also fed step t + 1: + da_{t+1} W_hh[:, j]
        dh.noalias() += MatrixMap(l.dgates + (t + 1) * B * G, B, G) * w_hh.middleCols(j0, n);
      } else {
        columns(l.dc + j0, B, n, H).setZero();  // nothing flows back from the final state
      }
      for (int64_t b = 0; b < B; ++b) {
        gate_grad_step(l.gates + (t * B + b) * G, l.cells + (t * B + b) * H, c_prev + b * H, l.dh_step + b * H,
                       l.dc + b * H, l.dgates + (t * B + b) * G, H, j0, n);
      }
    });
  }
}

}  // namespace

void Lstm::prepare_cpu(Context& ctx, const PrepareOptions& options) {
  allocate_state(ctx);
  packed_offsets_.clear();  // back to back (Layer::packed_offsets)
  const int64_t T = input_shapes()[0][0], B = input_shapes()[0][1], H = options_.hidden;
  const int L = options_.layers;
  auto allocate = [&](Shape shape) {
    return ctx.allocate(std::move(shape), DType::kFloat32, MemoryCategory::kLayerState);
  };
  for (auto* list : {&gates_, &cells_, &hidden_, &masks_, &dropped_, &dgates_}) list->clear();
  dhidden_ = dh_step_ = dc_step_ = Tensor();
  last_forward_dropped_ = false;
  backend_.reset();
  set_workspace_bytes(0);
  // Note [LSTM inference on the training forward's steps]: an inference plan
  // runs the training forward's code, keeping one layer's gates as scratch
  // and no cells. Its recurrent step runs on oneDNN's matmul (Note [The
  // recurrent step on oneDNN's matmul]), which beats oneDNN's LSTM primitive
  // on LSTMLarge and matches it on LSTM and LSTMSmall, so no plan uses the
  // primitive (bench/probes/onednn_lstm.cpp).
  if (options.phase == Phase::kInference) {  // scratch only: layer outputs in turn, and one gate buffer
    for (int l = 0; l < std::min(L - 1, 2); ++l) hidden_.push_back(allocate(Shape{T, B, H}));
    gates_.push_back(allocate(Shape{T, B, 4 * H}));
  } else {
    for (int l = 0; l < L; ++l) {
      gates_.push_back(allocate(Shape{T, B, 4 * H}));
      cells_.push_back(allocate(Shape{T, B, H}));
      dgates_.push_back(allocate(Shape{T, B, 4 * H}));
      if (l == L - 1) continue;
      hidden_.push_back(allocate(Shape{T, B, H}));
      if (options_.dropout == 0.0f) continue;
      masks_.push_back(allocate(Shape{T, B, H}));
      dropped_.push_back(allocate(Shape{T, B, H}));
    }
    if (L > 1) dhidden_ = allocate(Shape{T, B, H});
    dh_step_ = allocate(Shape{B, H});
    dc_step_ = allocate(Shape{B, H});
  }
#if GLASSBOX_WITH_ONEDNN  // Note [The recurrent step on oneDNN's matmul] (layers/lstm/lstm_steps_onednn.h)
  auto steps = std::make_unique<OneDnnLstmSteps>(name(), B, H);
  set_workspace_bytes(steps->workspace_bytes());
  backend_ = std::move(steps);
#endif
}

// A plan's recurrent products on oneDNN and the workspace they use;
// null where built without oneDNN.
std::pair<OneDnnLstmSteps*, void*> Lstm::onednn_steps(Context& ctx) const {
#if GLASSBOX_WITH_ONEDNN
  return {static_cast<OneDnnLstmSteps*>(backend_.get()), checked_workspace(ctx)};
#else
  (void)ctx;
  return {nullptr, nullptr};
#endif
}

void Lstm::forward_cpu(Context& ctx, const ForwardArgs& args) {
  begin_forward(ctx);
  const int64_t T = input_shapes()[0][0], B = input_shapes()[0][1], H = options_.hidden;
  const int L = options_.layers, per_layer = options_.bias ? 4 : 2;
  const bool keep = !cells_.empty();  // prepared for training: keep what backward reads, whatever the phase
  last_forward_dropped_ = args.phase == Phase::kTraining && options_.dropout > 0.0f;
  float* input = args.inputs[0].data<float>();
  const auto [steps, workspace] = onednn_steps(ctx);
  for (int l = 0; l < L; ++l) {
    const Tensor* p = &args.params[static_cast<size_t>(l * per_layer)];
    const bool top = l == L - 1;
    const int64_t state = l * B * H;
    const LayerForward layer{
        .x = input, .in = input_size(l), .w_ih = p[0].data<float>(), .w_hh = p[1].data<float>(),
        .b_ih = options_.bias ? p[2].data<float>() : nullptr, .b_hh = options_.bias ? p[3].data<float>() : nullptr,
        .h0 = h0_.data<float>() + state, .c0 = c0_.data<float>() + state,
        .gates = (keep ? gates_[static_cast<size_t>(l)] : gates_[0]).data<float>(),
        .cells = keep ? cells_[static_cast<size_t>(l)].data<float>() : nullptr,
        .h = top ? args.output.data<float>() : hidden_[static_cast<size_t>(keep ? l : l % 2)].data<float>(),
        .h_last = hT_.data<float>() + state, .c_last = cT_.data<float>() + state, .steps = steps,
        .workspace = workspace};
    forward_layer(layer, T, B, H);
    input = layer.h;
    if (top || !last_forward_dropped_) continue;
    // Inverted dropout on this layer's output, the next layer's input: the
    // mask drawn as layers/dropout.cpp draws it (Note [Dropout mask bits]),
    // each element by its place in the global batch: replica r of R holds
    // sequences [r x B, (r + 1) x B) of each step's R x B, so R data-parallel
    // replicas draw the masks of one process at R x B.
    const uint64_t key = ctx.rng()();
    const auto threshold = static_cast<uint64_t>(std::llround(static_cast<double>(options_.dropout) * 4294967296.0));
    const float scale = 1.0f / (1.0f - options_.dropout);
    float* m = masks_[static_cast<size_t>(l)].data<float>();
    float* out = dropped_[static_cast<size_t>(l)].data<float>();
    const auto step = static_cast<uint64_t>(B * H);  // a step's elements in this replica
    const auto replicas = static_cast<uint64_t>(ctx.replica().count);
    const uint64_t before = static_cast<uint64_t>(ctx.replica().index) * step;  // in each step, the replicas before
    parallel_for(T * B * H, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        const auto t = static_cast<uint64_t>(j) / step, at = static_cast<uint64_t>(j) % step;
        const uint64_t global = t * replicas * step + before + at;
        const uint64_t bits = mix64(key + (global + 1) * kGolden);
        m[j] = (bits & 0xFFFFFFFFull) >= threshold ? scale : 0.0f;
        out[j] = input[j] * m[j];
      }
    });
    input = out;
  }
}

void Lstm::backward_cpu(Context& ctx, const BackwardArgs& args) {
  const int64_t T = input_shapes()[0][0], B = input_shapes()[0][1], H = options_.hidden, G = 4 * H;
  const int L = options_.layers, per_layer = options_.bias ? 4 : 2;
  auto layer_input = [&](int l) -> float* {
    if (l == 0) return args.inputs[0].data<float>();
    return (last_forward_dropped_ ? dropped_ : hidden_)[static_cast<size_t>(l - 1)].data<float>();
  };
  auto layer_output = [&](int l) {
    return l == L - 1 ? args.output.data<float>() : hidden_[static_cast<size_t>(l)].data<float>();
  };
  auto da_of = [&](int l) { return MatrixMap(dgates_[static_cast<size_t>(l)].data<float>(), T * B, G); };

  // The data half: from the top layer down, dL/da of every step, and each
  // layer's input gradient, which is dL/dh of the layer below (through the mask).
  float* dh = args.output_grad.data<float>();
  for (int l = L - 1; l >= 0; --l) {
    const Tensor* p = &args.params[static_cast<size_t>(l * per_layer)];
    const int64_t state = l * B * H;
    backward_recurrence({.h0 = h0_.data<float>() + state, .c0 = c0_.data<float>() + state,
                         .gates = gates_[static_cast<size_t>(l)].data<float>(),
                         .cells = cells_[static_cast<size_t>(l)].data<float>(), .dh = dh,
                         .dgates = dgates_[static_cast<size_t>(l)].data<float>(), .w_hh = p[1].data<float>(),
                         .dh_step = dh_step_.data<float>(), .dc = dc_step_.data<float>()},
                        T, B, H);
    const int64_t in = input_size(l);
    const MatrixMap da = da_of(l), w_ih(p[0].data<float>(), G, in);
    if (l > 0) {  // dL/dh of layer l - 1: da W_ih, then through the dropout mask
      MatrixMap dx(dhidden_.data<float>(), T * B, in);
      for_each_block(in, product_block(in, T * B, kRowsPerBlock), [&](int64_t begin, int64_t end) {
        product_into(dx.middleCols(begin, end - begin), da, w_ih.middleCols(begin, end - begin));
      });
      if (last_forward_dropped_) {
        float* mask = masks_[static_cast<size_t>(l - 1)].data<float>();
        parallel_for(T * B * H, kElementwiseGrain, [&](int64_t begin, int64_t end) {
          as_array(dhidden_.data<float>() + begin, end - begin) *= as_array(mask + begin, end - begin);
        });
      }
      dh = dhidden_.data<float>();
    } else if (args.input_grads[0].defined()) {
      MatrixMap dx(args.input_grads[0].data<float>(), T * B, in);
      for_each_block(in, product_block(in, T * B, kRowsPerBlock), [&](int64_t begin, int64_t end) {
        product_into(dx.middleCols(begin, end - begin), da, w_ih.middleCols(begin, end - begin),
                     args.input_grad_modes[0] == GradMode::kAdd);
      });
    }
  }

  // The weight half: dW_ih += da^T x, dW_hh += da_t^T h_{t-1} (h_{-1} = h0), db += sum da;
  // each written by its first product where param_grad_mode says so.
  ctx.switch_pass(Pass::kBackwardWeights);
  const bool add = args.param_grad_mode == GradMode::kAdd;
  for (int l = 0; l < L; ++l) {
    const Tensor* dp = &args.param_grads[static_cast<size_t>(l * per_layer)];
    const int64_t in = input_size(l);
    const MatrixMap da = da_of(l), x(layer_input(l), T * B, in), h(layer_output(l), T * B, H);
    const MatrixMap h0(h0_.data<float>() + l * B * H, B, H);
    MatrixMap dw_ih(dp[0].data<float>(), G, in), dw_hh(dp[1].data<float>(), G, H);
    for_each_block(G, product_block(G, T * B, kRowsPerBlock), [&](int64_t begin, int64_t end) {
      const int64_t n = end - begin;
      const auto da_rows = da.middleCols(begin, n);
      product_into(dw_ih.middleRows(begin, n), da_rows.transpose(), x, add);
      product_into(dw_hh.middleRows(begin, n), da_rows.topRows(B).transpose(), h0, add);
      if (T > 1) {
        dw_hh.middleRows(begin, n).noalias() += da_rows.bottomRows((T - 1) * B).transpose() * h.topRows((T - 1) * B);
      }
    });
    if (!options_.bias) continue;
    write_or_add(args.param_grad_mode, as_matrix(dp[2], 1, G).row(0), da.colwise().sum());
    write_or_add(args.param_grad_mode, as_matrix(dp[3], 1, G).row(0), da.colwise().sum());
  }
}

}  // namespace glassbox
