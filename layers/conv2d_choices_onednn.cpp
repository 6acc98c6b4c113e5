// layers/conv2d_choices_onednn.cpp: how many images a oneDNN convolution
// runs per call, and whether it runs Winograd (layers/conv2d_choices_onednn.h).
#include "layers/conv2d_choices_onednn.h"

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
// them, so PyTorch's CPU path has none. The rates `glassbox time` prints count
// the direct convolution's FLOPs, so on these layers they can read above the
// roofline. They round differently from a direct sum, but within the bound
// the direct kernels are tested to (tests/test_conv2d_winograd.cpp: at most
// 4e-6 of 1 + max |y|, against 1e-5 allowed).
//
// They want oneDNN's blocked layout (asked for NHWC, oneDNN has no Winograd
// kernel), so each pass reorders NHWC values in and out. They run the whole
// batch in one call, not in slices (Note [Convolutions by slices of the
// batch]): the weights are transformed once per call, and in a first trial
// (every 3x3 stride-1 layer of 16 channels and more on Winograd, sliced or
// whole; two alternated rounds of `glassbox time`, 2-core Xeon with AVX-512)
// the whole batch beat slices: ResNet-34 at 32, a 56x56 64-channel layer's
// three passes 26.5-32.9 ms sliced, 23.4-25.6 whole; VGG16's step at 2 711
// against 675 ms. Asked for an inference forward, oneDNN picked a Winograd
// schedule that was far slower in a graph (ResNet-34's 512-channel 7x7
// layers at 32: 153-158 ms against 25-32), so every Winograd forward is a
// training one.
//
// That trial also drew the line. Winograd lost where a call has few output
// tiles to spread the weights' transform over: ResNet-34 at 4, 512 channels
// at 7x7 (16 tiles of 4x4), 4.7-6.2 -> 7.4-10.8 ms a pass; VGG16 at 2, 14x14
// (32 tiles), backward 8.4-10 -> 10.2-12; ResNet-34's 14x14 layers at 4 (64
// tiles) gained, 4.6-5.7 -> 3.2-4.0. And it lost on narrow layers, whose data
// transforms weigh more against their products: ResNet-56's 16-channel
// layers at 64, forward 1.5-1.9 -> 1.9-2.3 ms, GoogLeNet's 32-channel branches
// at 16 (one forward 1.04 -> 1.71); ResNet-56's 32-channel ones were even.
// With that line (64 channels and 64 tiles), `python3 bench/ab_layers.py NET
// BATCH --rounds 2 --a=--no-winograd` (medians of two alternated rounds,
// direct -> Winograd, same machine) gave, for the convolutions' forward /
// backward-data / backward-weights summed and the whole step, in ms:
// ResNet-34 at 32 1166 / 1240 / 1425 -> 792 / 738 / 861, step 4191 -> 2764;
// at 4 161 / 168 / 200 -> 126 / 112 / 136, step 569 -> 411; VGG16 at 2 355 /
// 375 / 404 -> 165 / 167 / 186, step 1274 -> 633; ResNet-18 at 8 step 542 ->
// 403; GoogLeNet at 16 1629 -> 1303; ResNet-56 at 64 337 -> 308; ResNet-50
// at 8, whose 3x3 layers are a small share, 2889 -> 2711.
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
// sum, not its terms. Measured on a 2-core Xeon (2 MiB L2 a core), ResNet-56
// at batch 256: a training step 1064-1121 ms whole, 1022-1026 in slices of 2
// MiB (1 MiB: 1062, 4 MiB: 1043, 512 KiB: 1121; `glassbox time ResNet56
// --batch 256`), inference 837-846 -> 884-891 images/s, the workspace 32.0 ->
// 2.2 MB. At the networks' default batches, alternated bench_nets runs moved
// within their noise (docs/performance/cpu-stop23-convolutions-by-slices.md).
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
  if (std::min(x[1], y[1]) < kWinogradMinChannels) return false;
  const int64_t tiles = x[0] * ((y[2] + 3) / 4) * ((y[3] + 3) / 4);  // the batch's 4x4 output tiles
  return tiles >= kWinogradMinTiles;
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
