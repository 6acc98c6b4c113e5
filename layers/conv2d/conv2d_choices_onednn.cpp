// layers/conv2d/conv2d_choices_onednn.cpp: how many images a oneDNN convolution
// runs per call, and whether it runs Winograd (layers/conv2d/conv2d_choices_onednn.h).
#include "layers/conv2d/conv2d_choices_onednn.h"

#include <algorithm>

#include "layers/shared_onednn.h"

namespace glassbox {
namespace {

constexpr int64_t kSliceBytes = int64_t{2} << 20;  // Note [Convolutions by slices of the batch]

// Note [Winograd on the CPU]: for a 3x3 kernel at stride 1, Winograd's
// F(4x4, 3x3) makes each 4x4 tile of the output from a 6x6 tile of the input
// with 36 products per pair of input and output channels where the direct
// convolution takes 144: a quarter of the multiplications, paid for with
// transforms of the input and output tiles (a cost per tile and channel) and
// of the weights (a cost per call). Debian's oneDNN 2.6 has such kernels for
// AVX-512 (jit_wino_4x3:avx512_core, all three passes); oneDNN 3 dropped
// them, so PyTorch's CPU path has none. Where oneDNN has none (AVX2), the
// forward of a layer stored NHWC is Glassbox's own (Note [Winograd F(4x4,
// 3x3) on NHWC values], winograd_nhwc.cpp), under the same rule. The rates `glassbox time` prints count
// the direct convolution's FLOPs, so on these layers they can read above the
// roofline. They round differently from a direct sum (oneDNN's within the
// bound the direct kernels are tested to, tests/test_conv2d_winograd.cpp: at
// most 4e-6 of 1 + max |y|, against 1e-5 allowed; Glassbox's, see its Note).
//
// They want oneDNN's blocked layout (asked for NHWC, oneDNN has no Winograd
// kernel), so each pass reorders NHWC values in and out. They run the whole
// batch in one call, not in slices (Note [Convolutions by slices of the
// batch]): the weights are transformed once per call, and the whole batch is
// faster than slices. Asked for an inference forward, oneDNN picks a
// Winograd schedule that is several times slower in a graph, so every
// Winograd forward is a training one.
//
// Winograd loses where a call has few output tiles to spread the weights'
// transform over (ResNet-34's 7x7 layers at batch 4: 16 tiles of 4x4), and on
// narrow layers, whose data transforms weigh more against their products
// (ResNet-56's 16-channel and GoogLeNet's 32-channel layers). So a layer runs
// Winograd from kWinogradMinChannels channels and kWinogradMinTiles output
// tiles per call; there it takes a third off ResNet-34's and half off VGG16's
// training step (`python3 bench/ab_layers.py NET BATCH --a=--no-winograd`).
constexpr int64_t kWinogradMinChannels = 64;
constexpr int64_t kWinogradMinTiles = 64;

}  // namespace

// Note [Convolutions by slices of the batch]: each pass reorders its operands
// into oneDNN's layouts, runs the primitive and reorders back. On the whole
// batch at once every one of those copies is as large as the tensor, far past
// a core's cache: ResNet-56's first stage at batch 256 copies 16.8 MB tensors
// in and out around each convolution. On a slice of the batch small enough
// that the copies stay in cache, a pass reads its input and writes its output
// once from far away. The slice is the largest divisor of the batch whose
// input and output fit kSliceBytes (one set of primitives, no ragged last
// slice); a layer whose single image is larger runs image by image. But each
// slice reads all the weights again (and backward-filter adds its dW into dW:
// three passes over them), so a layer slices only while those extra passes,
// 3 (slices - 1) W, stay under the two round trips over the activations that
// slicing saves, 2 (X + Y): Overfeat's conv5 (37.7 MB of weights, 9.4 MB of
// activations at batch 8) does not. The weights are reordered once per pass,
// not per slice; backward-filter's dW += per slice changes the order of the
// sum, not its terms. kSliceBytes is the L2 of a core (2 MiB); halving or
// doubling it is slower, and slicing also shrinks the workspace (ResNet-56 at
// batch 256: 32 MB whole, 2.2 MB sliced).
int64_t images_per_slice(const Shape& x, const Shape& y, int64_t weights, bool plain_layouts) {
  const int64_t batch = x[0];
  if (plain_layouts) return batch;  // no copies to keep in cache
  const int64_t image_bytes = (x.numel_from(0) + y.numel_from(0)) * static_cast<int64_t>(sizeof(float));
  int64_t slice = 1;
  for (int64_t d = 1; d <= batch; ++d) {
    if (batch % d == 0 && d * image_bytes <= kSliceBytes) slice = d;
  }
  const int64_t slices = batch / slice;
  const int64_t weight_bytes = weights * static_cast<int64_t>(sizeof(float));
  if (3 * (slices - 1) * weight_bytes >= 2 * batch * image_bytes) return batch;
  return slice;
}

bool winograd_pays(const Conv2d::Options& o, const Shape& x, const Shape& y) {
  if (o.groups != 1 || o.kernel != Size2(3) || o.stride != Size2(1) || o.dilation != Size2(1)) return false;
  // Padded by 3 or more, a ring of outputs reads padding only: a direct sum
  // makes them exactly the bias, Winograd's transforms mix in their tiles'
  // neighbours (a rounding either side of it), and a ReLU after them then
  // passes a gradient through some of them, which PyTorch's would not.
  if (o.pad.h >= o.kernel.h || o.pad.w >= o.kernel.w) return false;
  if (std::min(x[1], y[1]) < kWinogradMinChannels) return false;
  const int64_t tiles = x[0] * ((y[2] + 3) / 4) * ((y[3] + 3) / 4);  // the batch's 4x4 output tiles
  return tiles >= kWinogradMinTiles;
}

// Note [Weight gradients on NHWC values by GEMM]: from this many channels in
// and out; below it the products are too narrow for the sgemm (ResNet-56 at
// batch 64 on a Zen 3, a pass: 16 channels 9.3 ms against oneDNN's 4.2, 64
// channels 3.0 against 3.8).
constexpr int64_t kNhwcFilterGemmMinChannels = 64;

bool nhwc_gemm_for_filter(std::string_view onednn_kernel, const Conv2d::Options& o, int64_t in_channels, bool x_nhwc,
                          bool y_nhwc) {
  return x_nhwc && y_nhwc && o.groups == 1 && onednn_kernel == "jit:avx2" &&
         std::min<int64_t>(in_channels, o.out_channels) >= kNhwcFilterGemmMinChannels;
}

bool onednn_has_winograd(const OneDnnConvShapes& s, bool backward) {
  const auto winograd = dnnl::algorithm::convolution_winograd;
  try {
    const dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, winograd, s.x, s.w, s.bias, s.y,
                                             s.strides, s.dilates, s.pads, s.pads);
    const dnnl::convolution_forward::primitive_desc forward(fd, onednn_user_scratchpad(), onednn_cpu_engine());
    if (!backward) return true;
    const dnnl::convolution_backward_data::desc dd(winograd, s.x, s.w, s.y, s.strides, s.dilates, s.pads, s.pads);
    const dnnl::convolution_backward_data::primitive_desc data(dd, onednn_user_scratchpad(), onednn_cpu_engine(),
                                                               forward);
    const dnnl::convolution_backward_weights::desc wd(winograd, s.x, s.w, s.y, s.strides, s.dilates, s.pads, s.pads);
    const dnnl::convolution_backward_weights::primitive_desc weights(wd, onednn_user_scratchpad(),
                                                                     onednn_cpu_engine(), forward);
    return true;
  } catch (const dnnl::error&) {  // no Winograd kernel for these shapes on this CPU
    return false;
  }
}

}  // namespace glassbox
