// bench/probes/onednn_first_conv.cpp: a network's first convolution (the
// image's 3 input channels) on oneDNN 2.6, two ways, for Note [A few input
// channels in NHWC] (layers/conv2d/conv2d_onednn.cpp). Not part of the build.
//
//   g++ -O2 -std=c++20 bench/probes/onednn_first_conv.cpp -o /tmp/first_conv -ldnnl
//   OMP_NUM_THREADS=2 /tmp/first_conv BATCH SIZE OUT_CHANNELS KERNEL STRIDE PAD
//   e.g. ResNet's stem at batch 4: /tmp/first_conv 4 224 64 7 2 3
//
// The image is held NCHW and the layer's output NHWC, as a Glassbox graph
// holds them. Each pass is timed with the reorders it needs (ms per call,
// best of 5 runs of 5 calls, the whole batch at once):
//   nchw  x as it is held, y (dy) in oneDNN's choice of layout ("any",
//         nChw16c), reordered from or to NHWC: the path before the Note
//   nhwc  x reordered to NHWC first, y (dy) NHWC as held
// The weights' reorders (from and to OIHW) are counted on both.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

double best_ms(const std::function<void()>& call) {
  for (int i = 0; i < 3; ++i) call();
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 5; ++i) call();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 5);
  }
  return best;
}

memory::desc desc(const memory::dims& dims, Tag tag) { return {dims, memory::data_type::f32, tag}; }

// Runs `from` -> `to` only where the two layouts differ.
void reorder_if_needed(dnnl::stream& s, memory& from, memory& to) {
  if (from.get_desc() != to.get_desc()) dnnl::reorder(from, to).execute(s, from, to);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s BATCH SIZE OUT_CHANNELS KERNEL STRIDE PAD\n", argv[0]);
    return 2;
  }
  const memory::dim n = std::atoi(argv[1]), h = std::atoi(argv[2]), k = std::atoi(argv[3]), r = std::atoi(argv[4]);
  const memory::dim stride = std::atoi(argv[5]), pad = std::atoi(argv[6]);
  const memory::dim out = (h + 2 * pad - r) / stride + 1;
  const memory::dims x_dims{n, 3, h, h}, w_dims{k, 3, r, r}, y_dims{n, k, out, out};
  const memory::dims strides{stride, stride}, dilates{0, 0}, pads{pad, pad};
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(engine);
  // As held: the image NCHW, y and dy NHWC, the weights and dW OIHW.
  memory x(desc(x_dims, Tag::nchw), engine), y(desc(y_dims, Tag::nhwc), engine), dy(desc(y_dims, Tag::nhwc), engine);
  memory w(desc(w_dims, Tag::oihw), engine), dw(desc(w_dims, Tag::oihw), engine);
  for (memory* m : {&x, &dy, &w}) {
    float* data = static_cast<float*>(m->get_data_handle());
    std::fill(data, data + m->get_desc().get_size() / sizeof(float), 0.5f);
  }
  const auto direct = dnnl::algorithm::convolution_direct;
  for (const bool nhwc : {false, true}) {
    const memory::desc x_in = desc(x_dims, nhwc ? Tag::nhwc : Tag::nchw);
    const memory::desc y_in = desc(y_dims, nhwc ? Tag::nhwc : Tag::any), w_any = desc(w_dims, Tag::any);
    const char* way = nhwc ? "nhwc" : "nchw";

    dnnl::convolution_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, direct, x_in, w_any, memory::desc(), y_in, strides, dilates, pads, pads},
        engine);
    memory fx(fwd.src_desc(), engine), fw(fwd.weights_desc(), engine), fy(fwd.dst_desc(), engine);
    dnnl::convolution_forward forward(fwd);
    const double forward_ms = best_ms([&] {
      reorder_if_needed(s, x, fx), reorder_if_needed(s, w, fw);
      forward.execute(s, {{DNNL_ARG_SRC, fx}, {DNNL_ARG_WEIGHTS, fw}, {DNNL_ARG_DST, fy}});
      reorder_if_needed(s, fy, y);
      s.wait();
    });
    std::printf("%s forward           %-24s %8.3f ms\n", way, fwd.impl_info_str(), forward_ms);

    dnnl::convolution_backward_weights::primitive_desc filter(
        {direct, x_in, w_any, y_in, strides, dilates, pads, pads}, engine, fwd);
    memory bx(filter.src_desc(), engine), bdy(filter.diff_dst_desc(), engine), bdw(filter.diff_weights_desc(), engine);
    dnnl::convolution_backward_weights backward(filter);
    const double filter_ms = best_ms([&] {
      reorder_if_needed(s, x, bx), reorder_if_needed(s, dy, bdy);
      backward.execute(s, {{DNNL_ARG_SRC, bx}, {DNNL_ARG_DIFF_DST, bdy}, {DNNL_ARG_DIFF_WEIGHTS, bdw}});
      reorder_if_needed(s, bdw, dw);
      s.wait();
    });
    std::printf("%s backward-filter   %-24s %8.3f ms\n", way, filter.impl_info_str(), filter_ms);
  }
  return 0;
}
