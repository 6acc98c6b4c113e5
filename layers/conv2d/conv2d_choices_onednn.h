// layers/conv2d/conv2d_choices_onednn.h: two choices a oneDNN convolution
// (layers/conv2d/conv2d_onednn.cpp) makes from its layer's shapes before it builds
// anything: how many images each call of its primitives covers (Note
// [Convolutions by slices of the batch]) and whether it runs oneDNN's
// Winograd kernels (Note [Winograd on the CPU]). Built only with oneDNN.
#pragma once

#include <cstdint>
#include <string_view>

#include "layers/conv2d/conv2d.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace glassbox {

// Images per call of the layer's primitives: a divisor of the batch, or the
// whole batch where the layouts are Glassbox's own (no copies to keep in
// cache) or the weights are too large to read once per slice.
int64_t images_per_slice(const Shape& x, const Shape& y, int64_t weights, bool plain_layouts);

// A 3x3 stride-1 layer, padded by less than its kernel, wide enough and with
// enough output tiles that Winograd measured faster than oneDNN's direct kernels.
bool winograd_pays(const Conv2d::Options& options, const Shape& x, const Shape& y);

// Whether a layer's backward-filter runs by GEMM on its NHWC values (Note
// [Weight gradients on NHWC values by GEMM], filter_gradient_nhwc.cpp)
// instead of on `onednn_kernel`, the kernel oneDNN chose for it: where that is
// oneDNN's AVX2 jit kernel, x and y are both stored NHWC, in one group, with
// at least 64 channels in and out.
bool nhwc_gemm_for_filter(std::string_view onednn_kernel, const Conv2d::Options& options, int64_t in_channels,
                          bool x_nhwc, bool y_nhwc);

// One convolution as oneDNN describes it, x, w and y in its own layouts ("any").
struct OneDnnConvShapes {
  dnnl::memory::desc x, w, bias, y;
  dnnl::memory::dims strides, dilates, pads;
};

// Whether this oneDNN has Winograd kernels for these shapes on this CPU, for
// the forward and, when `backward`, both backward passes (oneDNN 2.6 has them
// for AVX-512 only, and only for channel counts its blocks divide).
bool onednn_has_winograd(const OneDnnConvShapes& shapes, bool backward);

}  // namespace glassbox
