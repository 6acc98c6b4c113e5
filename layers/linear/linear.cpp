// layers/linear/linear.cpp: shapes and the CPU path (blocked Eigen products).
#include "layers/linear/linear.h"

#include <omp.h>

#include <algorithm>
#include <string>

#include "layers/linear/streamed_product.h"
#include "layers/relu.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"
#include "tensor/product.h"

#if GLASSBOX_WITH_ONEDNN
#include "layers/linear/linear_onednn.h"
#endif

namespace glassbox {

Linear::Linear(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  if (options_.out_features <= 0) fail_option(cat("out_features must be positive, got ", options_.out_features));
}

int64_t Linear::in_features() const {
  const Shape& x = input_shapes().at(0);
  return x[x.rank() - 1];
}
int64_t Linear::rows() const { return input_shapes().at(0).numel() / in_features(); }

std::string Linear::describe() const {
  return cat(in_features(), " -> ", options_.out_features, options_.bias ? "" : ", no bias");
}

// Note [Linear over leading dims]: only with over_last_dim does a rank above
// 2 pass; by default (N, C, H, W) stays an error that says to flatten, since
// read as (N*C*H) rows of W features it would train, just not as the network
// its author wrote.
Shape Linear::infer(std::span<const Shape> inputs) const {
  const Shape& x = inputs[0];
  if (options_.over_last_dim) {
    if (x.rank() < 2) fail(cat("expects (..., features) input with a batch dimension, got ", x.str()));
    std::vector<int64_t> dims = x.dims();
    dims.back() = options_.out_features;
    return Shape(std::move(dims));
  }
  if (x.rank() != 2) {
    fail(cat("expects (N, features) input, got ", x.str(), x.rank() > 2 ? "; flatten it first" : ""));
  }
  return Shape{x[0], options_.out_features};
}

std::vector<ParamSpec> Linear::param_specs() const {
  const int64_t in = in_features();
  std::vector<ParamSpec> specs = {{"weight", Shape{options_.out_features, in}, Init::kFanInUniform, in}};
  if (options_.bias) specs.push_back({"bias", Shape{options_.out_features}, Init::kFanInUniform, in});
  return specs;
}

int64_t Linear::macs() const {
  const Shape& x = input_shapes().at(0);
  return checked_multiply(x.numel(), options_.out_features, "multiply-accumulates");
}

// Note [Blocked linear products]: at the small batches of CPU training a
// linear layer's cost is streaming its whole weight matrix once per pass, and
// Eigen's threaded GEMM reads it at a fraction of the machine's bandwidth. So
// the weights are split into row (or column) blocks, one per work item, each
// a single-threaded Eigen product; small blocks (kRowsPerBlock weight rows,
// kColumnsPerBlock columns) stream best. Every block of the output has one
// writer. From kComputeBoundRows rows on, a block per thread instead (Note
// [Blocks of a product over the threads] in tensor/parallel_for.h).
constexpr int64_t kRowsPerBlock = 64;
constexpr int64_t kColumnsPerBlock = 384;

// Note [Linear forward at small batches]: with a handful of rows, the forward
// is a product of the weights with a few vectors, and streaming the weights
// once is all its cost. OpenBLAS's GEMM, under Eigen's product, first packs
// each block of weight rows into a buffer and then reads the copy, at under
// half the machine's copy bandwidth. Up to 8 rows, streamed_forward
// (layers/linear/streamed_product.h) reads each pair of weight rows once, straight
// from the weights, against every input row at once (sums in registers).
// More rows than 8 no longer fit their sums in the registers, so up to
// kMaxStreamedBatch rows go in groups of 8 against a few weight rows at a
// time, which the later groups read from L2. At 32 rows the GEMM is as fast
// and beyond it faster, so past kMaxStreamedBatch rows it is a GEMM.
//
// The backward-data, dx = dy w, streams the weights once too, up to
// kMaxStreamedBatch rows (streamed_backward_data: four weight rows at a time
// into sums that stay in cache; the width of its blocks: Note [Streamed
// backward-data by wide blocks] below), where OpenBLAS's packed GEMM reads
// the weights at a fraction of the bandwidth.

// Note [Linear forward on oneDNN's matmul]: past kMaxStreamedBatch rows the
// forward is a GEMM, and OpenBLAS's packs every block of the weights before
// reading the copy, which a product of few rows cannot repay. oneDNN's matmul
// primitive (brg:avx512_core in Debian's 2.6) reads the row-major weights as
// they are and is faster up to kMaxOneDnnRows rows. Beyond that (the LSTMs'
// decoders, 650 or 1500 -> 10000 features over 1400 rows and more) OpenBLAS
// is even or ahead, and with few features out (under kMinOneDnnOutFeatures)
// oneDNN takes longer, so there the forward stays on Eigen's products. The
// backward stays there too: oneDNN's dx and dW are slower on about half the
// same shapes (bench/probes/linear_onednn.cpp).
#if GLASSBOX_WITH_ONEDNN
constexpr int64_t kMaxOneDnnRows = 1024;
constexpr int64_t kMinOneDnnOutFeatures = 16;
#endif

// Note [Weights whose rows alias in the cache]: dx = dy w reads the weights
// (out x in, row-major) as the product's right operand, their rows `in` floats
// apart. Where that is a multiple of 4 KiB (in a multiple of 1024: FCN-5's
// 4096 and 2048, AlexNet's 9216 and 4096) and the product has under 128 rows,
// oneDNN's sgemm runs at about half speed. The parameters stay contiguous
// (the optimizer, checkpoints and the GPU read them so), so such a dx copies
// the weights by tiles of kTileRows x kTileColumns into a per-thread buffer
// with padded rows (260 KiB, in L2) and runs a product per tile, about 1.5x
// as fast. From 128 rows the stride no longer costs anything and the copies
// do, and without the stride the tiles are only a cost
// (bench/probes/linear_dx_tiles.cpp).
constexpr int64_t kTileRows = 64, kTileColumns = 1024, kTilePad = 16;
constexpr int64_t kMaxTiledRows = 127;
constexpr int64_t kAliasingFeatures = 1024;  // floats in 4 KiB
constexpr int64_t kTileBufferFloats = kTileRows * (kTileColumns + kTilePad);

// A thread's even share of `in` columns, in multiples of 16 floats.
int64_t columns_per_thread(int64_t in, int64_t threads) {
  return std::max<int64_t>(16, ((in + threads - 1) / threads + 15) / 16 * 16);
}

// Only oneDNN's sgemm slows down on such strides: other builds keep the
// product in place, as do layers with fewer outputs than a tile's rows, where
// the copy costs more than it saves.
bool backward_data_by_tiles(int64_t rows, int64_t in, int64_t out) {
  return GLASSBOX_GEMM_ONEDNN && rows > kMaxStreamedBatch && rows <= kMaxTiledRows && in % kAliasingFeatures == 0 &&
         out >= kTileRows;
}

// dx (rows x in) = dy (rows x out) w (out x in), or += with `add`: per block
// of up to kTileColumns of dx, the weights' tiles one after another, each
// copied into this thread's buffer and multiplied in, summed into dx after the
// first.
void backward_data_tiled(const MatrixMap& dy, const MatrixMap& w, MatrixMap& dx, bool add, int threads,
                         float* buffers) {
  const int64_t out = w.rows(), in = w.cols();
  // Narrower than kTileColumns where that would leave a thread without a block
  // (1024 features on 2 threads: 512 each); the rows stay kTilePad apart from 4 KiB.
  const int64_t columns = std::min(kTileColumns, columns_per_thread(in, threads));
  const int64_t ld = columns + kTilePad;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t begin = 0; begin < in; begin += columns) {
    float* buffer = buffers + omp_get_thread_num() * kTileBufferFloats;
    const int64_t width = std::min(in, begin + columns) - begin;
    for (int64_t k0 = 0; k0 < out; k0 += kTileRows) {
      const int64_t depth = std::min(out, k0 + kTileRows) - k0;
      StridedMatrixMap tile(buffer, depth, width, Eigen::OuterStride<>(ld));
      tile = w.block(k0, begin, depth, width);
      product_into(dx.middleCols(begin, width), dy.middleCols(k0, depth), tile, add || k0 > 0);
    }
  }
}

// Note [Streamed backward-data by wide blocks]: streamed_backward_data reads
// each weight row's segment of a column block once per four weight rows and
// sums into dx's segments, which stay in cache from row to row. Each block
// runs on one thread. Blocks of 384 columns (sums in L1) would leave each
// weight row in 1.5 KiB pieces, too short for the prefetchers, and stream the
// weights at about half the forward's rate. So up to kMaxRowsForThreadShare
// rows a block is a thread's share of the columns (one long piece of each
// weight row); with more rows the sums of so wide a block fall out of cache,
// and blocks of kStreamedColumns are faster (bench/probes/streamed_dx_blocks.cpp).
constexpr int64_t kMaxRowsForThreadShare = 2;
constexpr int64_t kStreamedColumns = 1024;

int64_t streamed_columns_per_block(int64_t rows, int64_t in) {
  if (rows > kMaxRowsForThreadShare) return kStreamedColumns;
  return columns_per_thread(in, std::max(1, omp_get_max_threads()));
}

// The same product in place: streamed up to kMaxStreamedBatch rows (Note
// [Linear forward at small batches]), else a product per block of dx's columns.
void backward_data_blocks(const MatrixMap& dy, const MatrixMap& w, MatrixMap& dx, GradMode mode) {
  const int64_t n = dy.rows(), out = w.rows(), in = w.cols();
  const bool streamed = n <= kMaxStreamedBatch;
  const int64_t block = streamed ? streamed_columns_per_block(n, in) : product_block(in, n, kColumnsPerBlock);
  for_each_block(in, block, [&](int64_t begin, int64_t end) {  // blocks of input features
    if (streamed) {
      streamed_backward_data(n, dy.data(), out, w.data(), in, begin, end, mode, dx.data());
      return;
    }
    product_into(dx.middleCols(begin, end - begin), dy, w.middleCols(begin, end - begin), mode == GradMode::kAdd);
  });
}

void Linear::prepare_cpu(Context&, const PrepareOptions& options) {
  const int64_t n = rows();
  set_workspace_bytes(0);
  tiled_backward_threads_ = 0;
  if (n <= kMaxStreamedBatch) {
    backend_ = std::make_unique<NamedCpuPath>("Glassbox streamed weights (forward, dx); dW: Eigen");
    return;
  }
  size_t backward_bytes = 0;
  std::string backward = "Eigen";
  if (options.phase == Phase::kTraining && backward_data_by_tiles(n, in_features(), options_.out_features)) {
    tiled_backward_threads_ = std::max(1, omp_get_max_threads());
    backward_bytes = sizeof(float) * kTileBufferFloats * tiled_backward_threads_;
    backward = "Eigen (dx by padded tiles of the weights)";  // Note [Weights whose rows alias in the cache]
  }
  set_workspace_bytes(backward_bytes);
#if GLASSBOX_WITH_ONEDNN
  const int64_t out = options_.out_features;
  if (n <= kMaxOneDnnRows && out >= kMinOneDnnOutFeatures) {
    auto onednn = std::make_unique<OneDnnLinearForward>(name(), n, in_features(), out, options_.bias, backward);
    if (!onednn->uses_reference_code()) {  // Note [oneDNN's reference code] in conv2d.cpp
      set_workspace_bytes(std::max(backward_bytes, onednn->workspace_bytes()));
      backend_ = std::move(onednn);
      return;
    }
  }
#endif
  backend_ = std::make_unique<NamedCpuPath>(backward);
}

void Linear::forward_cpu([[maybe_unused]] Context& ctx, const ForwardArgs& args) {
  const int64_t n = rows(), in = in_features(), out = options_.out_features;
#if GLASSBOX_WITH_ONEDNN
  if (auto* onednn = dynamic_cast<OneDnnLinearForward*>(backend_.get())) {
    onednn->forward(args.inputs[0].data<float>(), args.params[0].data<float>(),
                    options_.bias ? args.params[1].data<float>() : nullptr, args.output.data<float>(),
                    checked_workspace(ctx));
    if (fused_relu()) relu_in_place_cpu(args.output.data<float>(), args.output.numel());  // Note [No ReLU post-op]
    return;
  }
#endif
  auto x = as_matrix(args.inputs[0], n, in);
  auto w = as_matrix(args.params[0], out, in);
  auto y = as_matrix(args.output, n, out);
  const bool streamed = n <= kMaxStreamedBatch;  // Note [Linear forward at small batches]
  const int64_t block = streamed ? kRowsPerBlock : product_block(out, n, kRowsPerBlock);
  for_each_block(out, block, [&](int64_t begin, int64_t end) {  // blocks of output features
    auto y_block = y.middleCols(begin, end - begin);
    if (streamed) {
      streamed_forward(n, x.data(), in, w.data(), begin, end, y.data(), out, GradMode::kWrite);
    } else {
      product_into(y_block, x, w.middleRows(begin, end - begin).transpose());  // Note [Products without Eigen's zeroing pass]
    }
    if (options_.bias) y_block.rowwise() += as_matrix(args.params[1], 1, out).row(0).segment(begin, end - begin);
    if (fused_relu()) {  // as ReLU's forward, on the block while it is in cache
      for (int64_t r = 0; r < n; ++r) {
        auto row = as_array(y.data() + r * out + begin, end - begin);
        row = row.max(0.0f);
      }
    }
  });
}

void Linear::backward_cpu(Context& ctx, const BackwardArgs& args) {
  const int64_t n = rows(), in = in_features(), out = options_.out_features;
  auto x = as_matrix(args.inputs[0], n, in);
  auto w = as_matrix(args.params[0], out, in);
  auto dy = as_matrix(args.output_grad, n, out);
  if (args.input_grads[0].defined()) {
    auto dx = as_matrix(args.input_grads[0], n, in);
    const GradMode mode = args.input_grad_modes[0];
    if (tiled_backward_threads_ > 0) {  // Note [Weights whose rows alias in the cache]
      backward_data_tiled(dy, w, dx, mode == GradMode::kAdd, tiled_backward_threads_,
                          static_cast<float*>(checked_workspace(ctx)));
    } else {
      backward_data_blocks(dy, w, dx, mode);
    }
  }
  ctx.switch_pass(Pass::kBackwardWeights);
  auto dw = as_matrix(args.param_grads[0], out, in);
  const bool add = args.param_grad_mode == GradMode::kAdd;  // else written: dW is not read
  for_each_block(out, product_block(out, n, kRowsPerBlock), [&](int64_t begin, int64_t end) {  // blocks of dw rows
    product_into(dw.middleRows(begin, end - begin), dy.middleCols(begin, end - begin).transpose(), x, add);
  });
  if (options_.bias) {
    write_or_add(args.param_grad_mode, as_matrix(args.param_grads[1], 1, out).row(0), dy.colwise().sum());
  }
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Linear)
}  // namespace glassbox
#endif
