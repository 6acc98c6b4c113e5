// graph/layouts.h: which values a graph stores channels-last (NHWC).
//
// Note [Channels-last values]: Glassbox's values are NCHW, but
// oneDNN's convolutions (brgconv) work in NHWC, so on NCHW values each oneDNN
// convolution reorders its input into NHWC and its output back to NCHW, a
// tenth of VGG16's inference step at batch 2 (ONEDNN_VERBOSE). The copies are
// memory-bound, and a tiled transpose is no faster than oneDNN's reorder
// (bench/probes/nchw_nhwc_reorders.cpp), so the way to
// save them is not to make them. Where a value's producer and every consumer
// can work on NHWC, the graph stores it so, and its gradient too; PyTorch's
// channels_last keeps NHWC throughout for the same reason.
//
// A layer says what it can do once prepared in NCHW
// (Layer::can_read_channels_last, can_write_channels_last); a layer that works
// on either order and keeps it (Layer::keeps_layout: ReLU, Add, batch norm,
// SubsamplePad) takes whichever its inputs have, so the values it joins are
// decided together: a ResNet's residual trunk is one group. A value is
// channels-last where the whole group qualifies: 4-D float, not a graph input
// (the caller fills those NCHW), not the loss, written by layers that can
// write NHWC and read only by layers that can read it. Shapes stay
// (N, C, H, W), the logical dimensions: Node::channels_last says how the
// bytes are ordered, and whoever reads a value's bytes (a test, a debugger)
// must look.
//
// On a GPU the same plan serves cuDNN, whose tensor-core convolutions work on
// NHWC: on NCHW values cuDNN transposes around them itself, and PyTorch's
// channels_last exists to avoid that. There a convolution, pooling, batch
// norm, ReLU, Add, Concat and Flatten read NHWC; a convolution computing
// channels-last keeps its filter KRSC (Note [KRSC filters], layers/conv2d/conv2d.h),
// and a layer handed a value in the other layout converts it in its
// workspace (Note [Layout bridges], layers/layer_cuda.h): a network's first
// convolution reads the NCHW images so, unless they have one channel, which
// is the same bytes in either order (layouts_share_bytes). CompileOptions::layout says where the
// plan runs (plans_channels_last): by default on the CPU, and on a GPU in
// tf32, bf16 and fp16; fp32 on a GPU stays NCHW, where cuDNN's NHWC kernels
// are no faster (PyTorch's fp32 channels_last is slower there too).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace glassbox {

// Per node: whether its value (and gradient) is stored NHWC. `layers` in
// topological order, each prepared.
std::vector<bool> plan_channels_last(const std::vector<Node>& nodes, const std::vector<int>& layers, int loss);

// The NCHW order of a (N, C, H, W) value stored NHWC (tests, debugging).
std::vector<float> nchw_from_channels_last(const std::vector<float>& nhwc, const Shape& shape);
// And back: the NHWC order of NCHW values.
std::vector<float> channels_last_from_nchw(const std::vector<float>& nchw, const Shape& shape);

// What `node` (a layer) writes, and reads where that differs: "NHWC",
// "NCHW", "NCHW from NHWC" (a layer that converts, or reads one order and
// writes the other, where the two place the input's elements apart:
// layouts_share_bytes), "" for an output of rank other than 4: `glassbox
// time`'s and `kernels`' layout column.
std::string layout_path(const std::vector<Node>& nodes, const Node& node);
// Whether any value of a compiled graph is stored NHWC (the column is shown then).
bool any_channels_last(const std::vector<Node>& nodes);

// A float tensor's values in NCHW order whatever its layout (a KRSC filter
// read as KCRS): what checkpoints and comparisons read. And the reverse:
// `nchw` written into `t` in t's layout.
std::vector<float> values_in_nchw_order(Context& ctx, const Tensor& t);
void write_in_nchw_order(Context& ctx, const std::vector<float>& nchw, const Tensor& t);

}  // namespace glassbox
