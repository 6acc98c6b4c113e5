// bench/probes/onednn_conv.cpp: oneDNN's convolutions (Debian's libdnnl-dev)
// on the layers where Glassbox's im2col + GEMM path trails PyTorch (issue 11):
// ResNet-56's thin 3x3 layers, a few of ResNet-50's and VGG16's. Not part of
// the build: it measured whether handing convolutions to oneDNN is worth doing.
// bench/probes/torch_conv.py times PyTorch on the same layers; glassbox time
// gives Glassbox's own per-layer figures.
//
//   apt-get install libdnnl-dev
//   g++ -O3 -march=native -fopenmp bench/probes/onednn_conv.cpp -o /tmp/onednn_conv -ldnnl
//   OMP_NUM_THREADS=2 /tmp/onednn_conv
//
// Three memory layouts per layer, each timed as forward, backward-data and
// backward-weights (ms per call, best of 5 runs of >= 0.3 s):
//   nchw    the tensors as Glassbox holds them, given to oneDNN as they are
//   nhwc    channels-last tensors (what PyTorch's channels_last hands oneDNN)
// In all three the weights are in oneDNN's blocked layout, reordered from
// OIHW inside the timed call (as a layer whose weights change every step).
//   blocked oneDNN's own choice (format "any"), with the reorders from and to
//           NCHW counted in the time, as a layer holding NCHW tensors would pay
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct ConvShape {
  const char* name;
  memory::dim n, c, h, w, k, r, stride, pad;
  memory::dim out() const { return (h + 2 * pad - r) / stride + 1; }
  double gflop() const { return 2.0 * n * k * out() * out() * c * r * r / 1e9; }
};

double best_ms(const std::function<void()>& call) {
  call();
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    int calls = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < 0.3) {
      call();
      ++calls;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    best = std::min(best, elapsed * 1e3 / calls);
  }
  return best;
}

struct Timing { double fwd, bwd_data, bwd_weights; };

Timing time_layout(const ConvShape& s, dnnl::engine& eng, dnnl::stream& strm, Tag act, Tag wei, bool reorder,
                   std::string* impl) {
  const memory::dim p = s.out();
  const memory::dims src_d{s.n, s.c, s.h, s.w}, wei_d{s.k, s.c, s.r, s.r}, dst_d{s.n, s.k, p, p};
  const memory::dims strides{s.stride, s.stride}, pads{s.pad, s.pad};
  auto md = [](const memory::dims& d, Tag t) { return memory::desc(d, memory::data_type::f32, t); };
  // Weights in oneDNN's own layout always: its jit kernels want blocked
  // weights, and a plain OHWI request falls back to its reference code.
  const Tag want_act = reorder ? Tag::any : act, want_wei = Tag::any;
  // User-side memories, in NCHW / OIHW (or the layout under test).
  memory user_src(md(src_d, act), eng), user_wei(md(wei_d, wei), eng), user_dst(md(dst_d, act), eng);
  memory user_dsrc(md(src_d, act), eng), user_dwei(md(wei_d, wei), eng), user_ddst(md(dst_d, act), eng);
  for (memory* m : {&user_src, &user_wei, &user_ddst}) {
    float* f = static_cast<float*>(m->get_data_handle());
    for (size_t i = 0; i < m->get_desc().get_size() / sizeof(float); ++i) f[i] = 0.001f * float(i % 997);
  }

  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                     md(src_d, want_act), md(wei_d, want_wei), md(dst_d, want_act), strides,
                                     pads, pads);
  dnnl::convolution_forward::primitive_desc fpd(fd, eng);
  dnnl::convolution_backward_data::desc dd(dnnl::algorithm::convolution_direct, md(src_d, want_act),
                                           md(wei_d, want_wei), md(dst_d, want_act), strides, pads, pads);
  dnnl::convolution_backward_data::primitive_desc dpd(dd, eng, fpd);
  dnnl::convolution_backward_weights::desc wd(dnnl::algorithm::convolution_direct, md(src_d, want_act),
                                              md(wei_d, want_wei), md(dst_d, want_act), strides, pads, pads);
  dnnl::convolution_backward_weights::primitive_desc wpd(wd, eng, fpd);
  *impl = std::string(fpd.impl_info_str()) + " / " + dpd.impl_info_str() + " / " + wpd.impl_info_str();

  // Internal memories, and the reorders that reach them (identity when the layout matches).
  auto inner = [&](const memory::desc& want, memory& user) { return want == user.get_desc() ? user : memory(want, eng); };
  memory src = inner(fpd.src_desc(), user_src), wei_m = inner(fpd.weights_desc(), user_wei);
  memory dst = inner(fpd.dst_desc(), user_dst), ddst = inner(dpd.diff_dst_desc(), user_ddst);
  memory dsrc = inner(dpd.diff_src_desc(), user_dsrc), dwei = inner(wpd.diff_weights_desc(), user_dwei);
  memory wsrc = inner(wpd.src_desc(), user_src), wddst = inner(wpd.diff_dst_desc(), user_ddst);
  auto move = [&](memory& from, memory& to) {
    if (from.get_data_handle() != to.get_data_handle()) dnnl::reorder(from, to).execute(strm, from, to);
  };
  dnnl::convolution_forward fwd(fpd);
  dnnl::convolution_backward_data bwd_data(dpd);
  dnnl::convolution_backward_weights bwd_weights(wpd);

  Timing t{};
  t.fwd = best_ms([&] {
    move(user_src, src);
    move(user_wei, wei_m);
    fwd.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DST, dst}});
    move(dst, user_dst);
    strm.wait();
  });
  t.bwd_data = best_ms([&] {
    move(user_ddst, ddst);
    move(user_wei, wei_m);
    bwd_data.execute(strm, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DIFF_SRC, dsrc}});
    move(dsrc, user_dsrc);
    strm.wait();
  });
  t.bwd_weights = best_ms([&] {
    move(user_src, wsrc);
    move(user_ddst, wddst);
    bwd_weights.execute(strm, {{DNNL_ARG_SRC, wsrc}, {DNNL_ARG_DIFF_DST, wddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei}});
    move(dwei, user_dwei);
    strm.wait();
  });
  return t;
}

}  // namespace

int main() {
  const std::vector<ConvShape> shapes = {
      {"resnet56 16x32x32 3x3 b64", 64, 16, 32, 32, 16, 3, 1, 1},
      {"resnet56 32x16x16 3x3 b64", 64, 32, 16, 16, 32, 3, 1, 1},
      {"resnet56 64x8x8 3x3 b64", 64, 64, 8, 8, 64, 3, 1, 1},
      {"resnet56 16->32 s2 b64", 64, 16, 32, 32, 32, 3, 2, 1},
      {"resnet50 conv1 7x7 s2 b8", 8, 3, 224, 224, 64, 7, 2, 3},
      {"resnet50 layer1 3x3 64 b8", 8, 64, 56, 56, 64, 3, 1, 1},
      {"resnet50 layer1 1x1 64->256 b8", 8, 64, 56, 56, 256, 1, 1, 0},
      {"resnet50 layer3 3x3 256 b8", 8, 256, 14, 14, 256, 3, 1, 1},
      {"resnet50 layer3 1x1 1024->256 b8", 8, 1024, 14, 14, 256, 1, 1, 0},
      {"resnet50 layer4 3x3 512 b8", 8, 512, 7, 7, 512, 3, 1, 1},
      {"vgg16 conv1_2 64 224 b2", 2, 64, 224, 224, 64, 3, 1, 1},
      {"vgg16 conv3_2 256 56 b2", 2, 256, 56, 56, 256, 3, 1, 1},
      {"vgg16 conv5_2 512 14 b2", 2, 512, 14, 14, 512, 3, 1, 1},
  };
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::printf("%-34s %-8s %9s %9s %9s %8s  %s\n", "layer", "layout", "fwd ms", "bwd_d ms", "bwd_w ms", "fwd GF/s",
              "implementations (fwd / bwd_d / bwd_w)");
  struct Layout { const char* name; Tag act, wei; bool reorder; };
  for (const ConvShape& s : shapes) {
    for (const Layout& l : {Layout{"nchw", Tag::nchw, Tag::oihw, false}, Layout{"nhwc", Tag::nhwc, Tag::ohwi, false},
                            Layout{"blocked", Tag::nchw, Tag::oihw, true}}) {
      std::string impl;
      const Timing t = time_layout(s, eng, strm, l.act, l.wei, l.reorder, &impl);
      std::printf("%-34s %-8s %9.3f %9.3f %9.3f %8.1f  %s\n", s.name, l.name, t.fwd, t.bwd_data, t.bwd_weights,
                  s.gflop() / t.fwd * 1e3, impl.c_str());
      std::fflush(stdout);
    }
  }
}
