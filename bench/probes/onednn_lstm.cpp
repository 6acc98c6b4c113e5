// bench/probes/onednn_lstm.cpp: oneDNN's LSTM primitive (Debian's libdnnl-dev)
// on one layer of the LSTM benchmark's shape (35 steps, 650 units, batch as
// the first argument), forward inference, the weights reordered from
// PyTorch's layout (ldgoi) inside each timed call, as Glassbox's inference
// plans once did. Not part of the build: it measured whether Glassbox's LSTM
// inference should run on oneDNN's primitive; it now runs the training
// forward's steps instead (Note [LSTM inference on the training forward's
// steps] in layers/lstm/lstm_cpu.cpp). `glassbox time
// LSTM` gives Glassbox's own forward per layer.
//
//   g++ -O3 -march=native -fopenmp bench/probes/onednn_lstm.cpp -o /tmp/onednn_lstm -ldnnl
//   OMP_NUM_THREADS=2 /tmp/onednn_lstm 20
//
// Prints oneDNN's implementation and the best of 5 runs of 10 calls.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "oneapi/dnnl/dnnl.hpp"
using namespace dnnl;
using Tag = memory::format_tag;
int main(int argc, char** argv) {
  const memory::dim T = 35, B = argc > 1 ? atoi(argv[1]) : 20, I = argc > 2 ? atoi(argv[2]) : 650, H = I, G = 4;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  auto md = [](memory::dims d, Tag t) { return memory::desc(d, memory::data_type::f32, t); };
  auto src = md({T, B, I}, Tag::tnc);
  auto iter = md({1, 1, B, H}, Tag::ldnc);
  auto wl_user = md({1, 1, I, G, H}, Tag::ldgoi), wi_user = md({1, 1, H, G, H}, Tag::ldgoi);
  auto wl_any = md({1, 1, I, G, H}, Tag::any), wi_any = md({1, 1, H, G, H}, Tag::any);
  auto bias = md({1, 1, G, H}, Tag::ldgo);
  auto dst = md({T, B, H}, Tag::tnc);
  lstm_forward::desc d(prop_kind::forward_inference, rnn_direction::unidirectional_left2right, src, iter, iter,
                       wl_any, wi_any, bias, dst, iter, iter);
  lstm_forward::primitive_desc pd(d, eng);
  std::vector<float> x(T * B * I, 0.1f), h0(B * H, 0.f), c0(B * H, 0.f), wl(I * G * H, 0.01f), wi(H * G * H, 0.01f),
      b(G * H, 0.f), y(T * B * H), hT(B * H), cT(B * H);
  memory mx(src, eng, x.data()), mh0(iter, eng, h0.data()), mc0(iter, eng, c0.data()), mwl_u(wl_user, eng, wl.data()),
      mwi_u(wi_user, eng, wi.data()), mb(bias, eng, b.data()), my(dst, eng, y.data()), mhT(iter, eng, hT.data()),
      mcT(iter, eng, cT.data());
  memory mwl(pd.weights_layer_desc(), eng), mwi(pd.weights_iter_desc(), eng);
  reorder r1(mwl_u, mwl), r2(mwi_u, mwi);
  lstm_forward prim(pd);
  printf("impl %s\n", pd.impl_info_str());
  auto call = [&] {
    r1.execute(s, mwl_u, mwl);
    r2.execute(s, mwi_u, mwi);
    prim.execute(s, {{DNNL_ARG_SRC_LAYER, mx}, {DNNL_ARG_SRC_ITER, mh0}, {DNNL_ARG_SRC_ITER_C, mc0},
                     {DNNL_ARG_WEIGHTS_LAYER, mwl}, {DNNL_ARG_WEIGHTS_ITER, mwi}, {DNNL_ARG_BIAS, mb},
                     {DNNL_ARG_DST_LAYER, my}, {DNNL_ARG_DST_ITER, mhT}, {DNNL_ARG_DST_ITER_C, mcT}});
    s.wait();
  };
  for (int i = 0; i < 3; ++i) call();
  double best = 1e9;
  for (int run = 0; run < 5; ++run) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) call();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 10);
  }
  printf("B=%ld H=%ld: %.2f ms per layer, %.1f GFLOP/s\n", (long)B, (long)H, best, 2.0 * 2 * T * B * I * G * H / best / 1e6);
}
