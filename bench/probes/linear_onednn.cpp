// bench/probes/linear_onednn.cpp: a linear layer's three products on all the
// threads, OpenBLAS's cblas_sgemm (what Eigen's products call) against
// oneDNN's matmul primitive (Debian's libdnnl 2.6) on Glassbox's row-major
// tensors as they are, no reorders: y = x w^T (forward), dx = dy w
// (backward-data), dW += dy^T x (backward-weights, a sum post-op in oneDNN).
// Shapes: FCN-5's, AlexNet's fc6 and fc7, square ones up the rows, and the
// LSTMs' decoders. It chose Note [Linear forward on oneDNN's matmul]
// (layers/linear/linear.cpp). Not part of the build:
//
//   g++ -O2 -fopenmp -I/usr/include/x86_64-linux-gnu/openblas-openmp bench/probes/linear_onednn.cpp \
//       -o /tmp/linear_onednn -L/usr/lib/x86_64-linux-gnu/openblas-openmp \
//       -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -ldnnl
//   OMP_NUM_THREADS=2 /tmp/linear_onednn
//
// Each figure is the median of 9 products after 2 untimed ones, in GFLOP/s;
// every shape twice, the libraries alternated.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct Layer {
  int rows, in, out;
};
constexpr Layer kLayers[] = {{32, 784, 4096},   {32, 4096, 2048},   {64, 4096, 2048},    {256, 784, 4096},
                             {256, 4096, 2048}, {256, 2048, 1024},  {64, 9216, 4096},    {64, 4096, 4096},
                             {128, 2048, 2048}, {512, 2048, 2048},  {1024, 2048, 2048},  {2048, 2048, 2048},
                             {700, 650, 10000}, {1400, 650, 10000}, {2800, 1500, 10000}, {32, 1024, 10}};

double median_seconds(const std::function<void()>& product) {
  product();
  product();
  std::vector<double> seconds;
  for (int i = 0; i < 9; ++i) {
    const auto start = std::chrono::steady_clock::now();
    product();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[4];
}

memory::desc matrix(memory::dim rows, memory::dim columns, Tag tag) {
  return memory::desc({rows, columns}, memory::data_type::f32, tag);
}

}  // namespace

int main() {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf("rows x in -> out: GFLOP/s OpenBLAS | oneDNN matmul\n");
  for (const Layer l : kLayers) {
    std::vector<float> x(size_t(l.rows) * l.in, 0.5f), w(size_t(l.out) * l.in, 0.25f), y(size_t(l.rows) * l.out, 0.1f);
    std::vector<float> dx(x.size()), dw(w.size());
    dnnl::primitive_attr add;  // dW +=
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    add.set_post_ops(sum);
    // Forward: x (rows, in) times w read as (in, out) ("ba"); backward-data: dy
    // (rows, out) times w (out, in); backward-weights: dy read as (out, rows) times x.
    const memory::desc x_md = matrix(l.rows, l.in, Tag::ab), y_md = matrix(l.rows, l.out, Tag::ab);
    const memory::desc wt_md = matrix(l.in, l.out, Tag::ba), w_md = matrix(l.out, l.in, Tag::ab);
    const memory::desc dyt_md = matrix(l.out, l.rows, Tag::ba);
    dnnl::matmul::primitive_desc forward_pd(dnnl::matmul::desc(x_md, wt_md, y_md), engine);
    dnnl::matmul::primitive_desc data_pd(dnnl::matmul::desc(y_md, w_md, x_md), engine);
    dnnl::matmul::primitive_desc weights_pd(dnnl::matmul::desc(dyt_md, x_md, w_md), add, engine);
    dnnl::matmul forward(forward_pd), data(data_pd), weights(weights_pd);
    memory x_m(x_md, engine, x.data()), wt_m(wt_md, engine, w.data()), y_m(y_md, engine, y.data());
    memory w_m(w_md, engine, w.data()), dx_m(x_md, engine, dx.data());
    memory dyt_m(dyt_md, engine, y.data()), dw_m(w_md, engine, dw.data());
    const double flop = 2.0 * l.rows * l.in * l.out;
    for (int round = 0; round < 2; ++round) {
      const double openblas[3] = {
          median_seconds([&] {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, l.rows, l.out, l.in, 1.0f, x.data(), l.in,
                        w.data(), l.in, 0.0f, y.data(), l.out);
          }),
          median_seconds([&] {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, l.rows, l.in, l.out, 1.0f, y.data(), l.out,
                        w.data(), l.in, 0.0f, dx.data(), l.in);
          }),
          median_seconds([&] {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, l.out, l.in, l.rows, 1.0f, y.data(), l.out,
                        x.data(), l.in, 1.0f, dw.data(), l.in);
          })};
      auto run = [&](dnnl::matmul& m, std::unordered_map<int, memory> args) {
        return median_seconds([&] {
          m.execute(stream, args);
          stream.wait();
        });
      };
      const double onednn[3] = {
          run(forward, {{DNNL_ARG_SRC, x_m}, {DNNL_ARG_WEIGHTS, wt_m}, {DNNL_ARG_DST, y_m}}),
          run(data, {{DNNL_ARG_SRC, y_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_DST, dx_m}}),
          run(weights, {{DNNL_ARG_SRC, dyt_m}, {DNNL_ARG_WEIGHTS, x_m}, {DNNL_ARG_DST, dw_m}})};
      std::printf("%5d x %5d -> %5d  forward %6.1f | %6.1f  dx %6.1f | %6.1f  dW %6.1f | %6.1f\n", l.rows, l.in,
                  l.out, flop / openblas[0] / 1e9, flop / onednn[0] / 1e9, flop / openblas[1] / 1e9,
                  flop / onednn[1] / 1e9, flop / openblas[2] / 1e9, flop / onednn[2] / 1e9);
    }
    std::printf("  oneDNN: forward %s, dx %s, dW %s\n", forward_pd.impl_info_str(), data_pd.impl_info_str(),
                weights_pd.impl_info_str());
  }
}
