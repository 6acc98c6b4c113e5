// layers/conv2d/conv2d_onednn.cpp: Conv2d's CPU passes on oneDNN's convolution
// primitives (layers/conv2d/conv2d_onednn.h says what and why).
#include "layers/conv2d/conv2d_onednn.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "layers/conv2d/conv2d_choices_onednn.h"
#include "layers/conv2d/conv2d_operand_onednn.h"
#include "layers/relu.h"
#include "layers/shared_onednn.h"
#include "tensor/error.h"

namespace glassbox {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::desc plain(const memory::dims& dims, Tag tag) { return {dims, memory::data_type::f32, tag}; }

// Note [One forward kernel for both phases]: asked for an inference forward
// (prop_kind forward_inference), Debian's oneDNN 2.6 picks its brgconv
// kernel, and for a training forward jit:avx512_core. The two compute the
// same convolution (a training forward keeps nothing for the backward), so
// each layer runs one of them in both phases, and a training graph builds
// the training kind's forward besides, only as the hint its backward
// primitives are made from.
//
// On the networks' first convolutions, whose input is the image's 3 channels
// (and LeNet's second, 6), brgconv takes 1.3 to 2 times as long as jit, so
// an ungrouped layer of fewer than kFewInputChannels input channels runs jit
// (grouped ones are untested). With more channels neither wins every layer,
// but brgconv wins each network's sum of convolution forwards, so every
// other layer runs brgconv.
constexpr int64_t kFewInputChannels = 16;

// Note [A few input channels in NHWC]: Note [One forward kernel for both
// phases]'s jit kernel reads the image's NCHW planes but writes oneDNN's
// blocked nChw16c, reordered then to the NHWC that the layers after it keep
// (Note [Channels-last values]). Handed the image reordered to
// NHWC (3 floats a pixel, a small copy) and asked for NHWC out, oneDNN 2.6
// runs brgconv and nothing after it; its backward-filter (jit either way)
// then reads NHWC dy as it is. That is faster for the forward on kernels up
// to 7x7 and for the backward-filter on 3x3 ones, but not on AlexNet's and
// Overfeat's 11x11 kernels, and in a graph, where the NCHW way's reorders run
// a slice of the batch at a time in cache (Note [Convolutions by slices of
// the batch]), the backward-filter gains only at 3x3. So the forward goes
// NHWC below kLargeKernel, and the filter pass only for kernels of at most
// kNhwcFilterKernel (bench/probes/onednn_first_conv.cpp).
constexpr int64_t kLargeKernel = 11;
constexpr int64_t kNhwcFilterKernel = 3;

// Note [oneDNN's scratchpad]: by default a oneDNN primitive allocates its own
// temporary memory when it runs (or keeps a global buffer), out of sight of
// Glassbox's accounting. In "user" mode it asks for it instead: each pass's
// scratchpad is the first slice of the workspace, sized at prepare as the
// largest that the pass's convolution and reorders ask for (they run one
// after another, so they share it).

// A primitive, its arguments (made once) and the slice of workspace its pass uses.
struct PassPlan {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  std::string implementation;
  size_t bytes = 0;  // the scratchpad (at the workspace's start) and the copied operands
  memory scratchpad_memory;
};

}  // namespace

struct OneDnnConv::Impl {
  dnnl::stream stream{onednn_cpu_engine()};
  bool training = true, bias = false;
  bool relu = false;  // Plan::relu
  bool x_channels_last = false, y_channels_last = false;  // as stored outside (Plan)
  // Note [A few input channels in NHWC]: NCHW x reordered for these passes.
  bool forward_x_nhwc = false, filter_x_nhwc = false;
  // Note [Convolutions by slices of the batch]: the primitives are built for
  // `slice` images and each pass runs them batch / slice times.
  int64_t slices = 1, slice = 1;
  int64_t x_slice_floats = 0, y_slice_floats = 0;
  bool winograd = false;           // Note [Winograd on the CPU]
  // Note [Winograd F(4x4, 3x3) on NHWC values]: Conv2d runs these passes
  // in place of oneDNN's direct kernels, where oneDNN has no Winograd.
  bool forward_on_winograd = false, data_on_winograd = false, filter_on_winograd = false;
  bool backward = true;            // the backward passes are built here
  std::string backward_elsewhere;  // else the path that runs them
  PassPlan forward, backward_data, backward_filter;
  // Note [Weight gradients on NHWC values by GEMM]: Conv2d runs the
  // backward-filter in place of oneDNN's kernel named here.
  bool filter_on_gemm = false;
  std::string filter_kernel_replaced;
  // Forward: x, w, y (and the bias, read where it is).
  OneDnnOperand fwd_x, fwd_w, fwd_y;
  memory bias_memory;
  // Backward-data: dy, w -> dx. Backward-filter: x, dy -> dW.
  OneDnnOperand data_dy, data_w, data_dx, filter_x, filter_dy, filter_dw;

};

namespace {

// Workspace slices for one pass: scratchpad first, then the copied operands.
// plan_operands plans each operand and returns them with their argument ids.
template <typename Make>
void plan_pass(PassPlan& pass, const dnnl::primitive_desc_base& pd, Make&& plan_operands) {
  size_t scratchpad = pd.scratchpad_desc().get_size();
  size_t next = 0;  // operands' offsets, shifted past the scratchpad below
  const std::vector<std::pair<int, OneDnnOperand*>> planned = plan_operands(&next, &scratchpad);
  const size_t scratchpad_bytes = onednn_aligned(scratchpad);
  pass.bytes = scratchpad_bytes + next;
  pass.implementation = pd.impl_info_str();
  // Bytes, as large as the largest of the pass's asks (the convolution's own
  // scratchpad_desc may be smaller than a reorder's).
  const memory::desc bytes({static_cast<memory::dim>(std::max<size_t>(scratchpad_bytes, kOneDnnAlignment))},
                           memory::data_type::u8, Tag::x);
  pass.scratchpad_memory = onednn_unbound(bytes);
  pass.args = {{DNNL_ARG_SCRATCHPAD, pass.scratchpad_memory}};
  for (const auto& [arg, o] : planned) {
    if (o->copied) o->offset += scratchpad_bytes;
    o->finish(pass.scratchpad_memory);
    pass.args.emplace(arg, o->inside);
  }
}

}  // namespace

// Note [The backward's layouts on NHWC values]: left to choose ("any"),
// oneDNN 2.6's backward passes take nChw16c, so with NHWC values (Note
// [Channels-last values]) each reorders dy, x and dx between the
// two, and on VGG16 that costs as much as the forward saves by staying NHWC.
// Asked to work in NHWC, the same jit kernels are faster on large planes and
// far slower on small ones with many channels (VGG16's 28 x 28 layers of 512
// channels). So the backward works in NHWC from kNhwcBackwardPixels input
// pixels. Narrow layers gain too: ResNet-56's 16 to 64 channels on 32 x 32 to
// 8 x 8 planes, all NHWC since batch norm and the residual adds keep it, run
// both backward passes faster in NHWC than in nChw16c with its reorders. So
// layers of at most kNhwcBackwardChannels in and out work in NHWC whatever
// their planes (between 64 and VGG's 512 channels is untested).
constexpr int64_t kNhwcBackwardPixels = 112 * 112;
constexpr int64_t kNhwcBackwardChannels = 64;

OneDnnConv::OneDnnConv(const std::string& layer, const Conv2d::Options& o, const Shape& x, const Shape& y,
                       const Plan& plan)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.training = plan.phase == Phase::kTraining;
  m.backward = m.training && plan.backward_elsewhere.empty();
  m.backward_elsewhere = plan.backward_elsewhere;
  m.bias = o.bias;
  m.x_channels_last = plan.x_channels_last, m.y_channels_last = plan.y_channels_last;
  const int64_t weights = y[1] * (x[1] / o.groups) * o.kernel.h * o.kernel.w;
  const bool grouped = o.groups > 1;
  const memory::dims w_dims = grouped ? memory::dims{o.groups, y[1] / o.groups, x[1] / o.groups, o.kernel.h, o.kernel.w}
                                      : memory::dims{y[1], x[1], o.kernel.h, o.kernel.w};
  const Tag w_tag = grouped ? Tag::goihw : Tag::oihw;
  const memory::dims strides{o.stride.h, o.stride.w}, pads{o.pad.h, o.pad.w};
  const memory::dims dilates{o.dilation.h - 1, o.dilation.w - 1};  // oneDNN counts the gaps: 0 is dense
  // The layouts the primitives work in: their choice ("any"), or Glassbox's own.
  auto inside = [&](const memory::dims& dims, const memory::desc& own) {
    return plan.plain_layouts ? own : memory::desc(dims, memory::data_type::f32, Tag::any);
  };
  const memory::desc w_md = plain(w_dims, w_tag), any_w = inside(w_dims, w_md);
  const memory::desc bias_md = o.bias ? plain({y[1]}, Tag::x) : memory::desc();
  // Note [Winograd on the CPU]: in oneDNN's layouts, the whole batch in one call.
  auto whole = [](const Shape& s) { return memory::desc({s[0], s[1], s[2], s[3]}, memory::data_type::f32, Tag::any); };
  const bool winograd_wanted = plan.winograd && !plan.plain_layouts && winograd_pays(o, x, y);
  m.winograd = winograd_wanted && onednn_has_winograd({.x = whole(x), .w = any_w, .bias = bias_md, .y = whole(y),
                                                       .strides = strides, .dilates = dilates, .pads = pads},
                                                      m.backward);
  m.forward_on_winograd = winograd_wanted && !m.winograd && plan.x_channels_last && plan.y_channels_last;
  m.slice = m.winograd ? x[0] : images_per_slice(x, y, weights, plan.plain_layouts);
  m.slices = x[0] / m.slice;
  m.x_slice_floats = m.slice * x.numel_from(0);
  m.y_slice_floats = m.slice * y.numel_from(0);
  const memory::dims x_dims{m.slice, x[1], x[2], x[3]}, y_dims{m.slice, y[1], y[2], y[3]};
  const memory::desc x_md = plain(x_dims, plan.x_channels_last ? Tag::nhwc : Tag::nchw);
  const memory::desc y_md = plain(y_dims, plan.y_channels_last ? Tag::nhwc : Tag::nchw);
  const memory::desc any_x = inside(x_dims, x_md), any_y = inside(y_dims, y_md);
  const auto algorithm = m.winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;

  try {
    // Note [One forward kernel for both phases]
    const bool few_channels = o.groups == 1 && x[1] < kFewInputChannels;
    m.relu = plan.relu;  // Note [No ReLU post-op]
    auto forward_pd = [&](dnnl::prop_kind kind, const memory::desc& x_inside, const memory::desc& y_inside) {
      dnnl::convolution_forward::desc fd(kind, algorithm, x_inside, any_w, bias_md, y_inside, strides, dilates, pads,
                                         pads);
      return dnnl::convolution_forward::primitive_desc(fd, onednn_user_scratchpad(), onednn_cpu_engine());
    };
    // Note [Winograd on the CPU]: its forward is always the training kind.
    const bool training_kind = few_channels || m.winograd;
    dnnl::convolution_forward::primitive_desc fpd = forward_pd(
        training_kind ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, any_x, any_y);
    // Note [A few input channels in NHWC]
    const bool few_channels_nhwc = few_channels && plan.y_channels_last && !plan.plain_layouts;
    const memory::desc x_nhwc = plain(x_dims, Tag::nhwc);
    if (few_channels_nhwc && std::max(o.kernel.h, o.kernel.w) < kLargeKernel) {
      dnnl::convolution_forward::primitive_desc nhwc = forward_pd(dnnl::prop_kind::forward_training, x_nhwc, y_md);
      if (!std::string(nhwc.impl_info_str()).starts_with("ref")) fpd = nhwc, m.forward_x_nhwc = true;
    }
    plan_pass(m.forward, fpd, [&](size_t* next, size_t* scratchpad) {
      m.fwd_x.plan(x_md, fpd.src_desc(), OneDnnOperand::Role::kRead, next, scratchpad);
      m.fwd_w.plan(w_md, fpd.weights_desc(), OneDnnOperand::Role::kRead, next, scratchpad);
      m.fwd_y.plan(y_md, fpd.dst_desc(), OneDnnOperand::Role::kWritten, next, scratchpad);
      return std::vector<std::pair<int, OneDnnOperand*>>{
          {DNNL_ARG_SRC, &m.fwd_x}, {DNNL_ARG_WEIGHTS, &m.fwd_w}, {DNNL_ARG_DST, &m.fwd_y}};
    });
    m.forward.primitive = dnnl::convolution_forward(fpd);
    if (o.bias) {
      m.bias_memory = onednn_unbound(bias_md);
      m.forward.args.emplace(DNNL_ARG_BIAS, m.bias_memory);  // read where it is
    }
    if (!m.backward) return;
    const dnnl::convolution_forward::primitive_desc hint = forward_pd(dnnl::prop_kind::forward_training, any_x, any_y);

    // Note [The backward's layouts on NHWC values]
    const bool narrow = std::max(x[1], y[1]) <= kNhwcBackwardChannels;
    const bool nhwc_backward = !m.winograd && plan.x_channels_last && plan.y_channels_last && (x[2] * x[3] >= kNhwcBackwardPixels || narrow);
    const memory::desc back_x = nhwc_backward ? x_md : any_x, back_y = nhwc_backward ? y_md : any_y;
    dnnl::convolution_backward_data::desc dd(algorithm, back_x, any_w, back_y, strides, dilates, pads, pads);
    dnnl::convolution_backward_data::primitive_desc dpd(dd, onednn_user_scratchpad(), onednn_cpu_engine(), hint);
    plan_pass(m.backward_data, dpd, [&](size_t* next, size_t* scratchpad) {
      m.data_dy.plan(y_md, dpd.diff_dst_desc(), OneDnnOperand::Role::kRead, next, scratchpad);
      m.data_w.plan(w_md, dpd.weights_desc(), OneDnnOperand::Role::kRead, next, scratchpad);
      // dx may be added to (GradMode::kAdd), so it always has a slice to land in.
      m.data_dx.plan(x_md, dpd.diff_src_desc(), OneDnnOperand::Role::kAddedTo, next, scratchpad);
      return std::vector<std::pair<int, OneDnnOperand*>>{
          {DNNL_ARG_DIFF_DST, &m.data_dy}, {DNNL_ARG_WEIGHTS, &m.data_w}, {DNNL_ARG_DIFF_SRC, &m.data_dx}};
    });
    m.backward_data.primitive = dnnl::convolution_backward_data(dpd);
    // Its backward-data is a forward padded by 2 - pad (winograd_nhwc.h).
    m.data_on_winograd = m.forward_on_winograd && o.pad.h <= 2 && o.pad.w <= 2;

    // The bias gradient stays with Conv2d (one sum per channel): no diff_bias here.
    // Note [A few input channels in NHWC]: backward-filter reads x as NHWC too.
    m.filter_x_nhwc = few_channels_nhwc && std::max(o.kernel.h, o.kernel.w) <= kNhwcFilterKernel;
    const memory::desc filter_x = m.filter_x_nhwc ? x_nhwc : back_x, filter_y = m.filter_x_nhwc ? y_md : back_y;
    dnnl::convolution_backward_weights::desc wd(algorithm, filter_x, any_w, filter_y, strides, dilates, pads, pads);
    dnnl::convolution_backward_weights::primitive_desc wpd(
        wd, onednn_user_scratchpad(), onednn_cpu_engine(),
        m.filter_x_nhwc ? forward_pd(dnnl::prop_kind::forward_training, x_nhwc, y_md) : hint);
    if (m.forward_on_winograd) {  // Note [Winograd F(4x4, 3x3) on NHWC values]
      m.filter_on_winograd = true;
      m.filter_kernel_replaced = wpd.impl_info_str();
      return;
    }
    if (nhwc_gemm_for_filter(wpd.impl_info_str(), o, x[1], plan.x_channels_last, plan.y_channels_last)) {
      m.filter_on_gemm = true;
      m.filter_kernel_replaced = wpd.impl_info_str();
      return;
    }
    plan_pass(m.backward_filter, wpd, [&](size_t* next, size_t* scratchpad) {
      m.filter_x.plan(x_md, wpd.src_desc(), OneDnnOperand::Role::kRead, next, scratchpad);
      m.filter_dy.plan(y_md, wpd.diff_dst_desc(), OneDnnOperand::Role::kRead, next, scratchpad);
      m.filter_dw.plan(w_md, wpd.diff_weights_desc(), OneDnnOperand::Role::kAddedTo, next, scratchpad);
      return std::vector<std::pair<int, OneDnnOperand*>>{
          {DNNL_ARG_SRC, &m.filter_x}, {DNNL_ARG_DIFF_DST, &m.filter_dy}, {DNNL_ARG_DIFF_WEIGHTS, &m.filter_dw}};
    });
    m.backward_filter.primitive = dnnl::convolution_backward_weights(wpd);
  } catch (const dnnl::error& e) {
    throw ConfigError(cat(layer, " (Conv2d): oneDNN cannot build its convolution for input ", x.str(), " -> ", y.str(), ": ",
                          e.what(), " (status ", static_cast<int>(e.status), "); pin the layer to Glassbox's "
                          "own path (Conv2d::pin_cpu_path) or build with -DGLASSBOX_CPU_CONV=im2col"));
  }
}

OneDnnConv::~OneDnnConv() = default;

std::string OneDnnConv::algorithms() const {
  const Impl& m = *impl_;
  std::string text =
      m.forward_on_winograd
          ? cat("Glassbox NHWC Winograd F(4x4, 3x3) fwd (in place of oneDNN's ", m.forward.implementation, ")")
          : cat("oneDNN fwd ", m.forward.implementation);
  if (m.backward) {
    auto in_place_of = [](const char* glassbox, const std::string& onednn) {
      return cat("Glassbox NHWC ", glassbox, " (in place of ", onednn, ")");
    };
    const std::string& data = m.backward_data.implementation;
    text += cat(", bwd-data ", m.data_on_winograd ? in_place_of("Winograd F(4x4, 3x3)", data) : data, ", bwd-filter ",
                m.filter_on_winograd ? in_place_of("Winograd F(3x3, 4x4)", m.filter_kernel_replaced)
                : m.filter_on_gemm   ? in_place_of("GEMM", m.filter_kernel_replaced)
                                     : m.backward_filter.implementation);
  } else if (m.training) {
    text += cat("; backward: ", m.backward_elsewhere);
  }
  // Glassbox's Winograd runs every pass on the whole batch, and its ReLU after the output transform.
  if (m.relu) {
    text += m.forward_on_winograd ? "; ReLU applied to y after the transform"
                                  : "; ReLU applied to each slice of y as it is written";
  }
  if (m.slices > 1 && !m.forward_on_winograd) {
    text += cat("; in ", m.slices, " slices of ", m.slice, m.slice == 1 ? " image" : " images");
  }
  if (m.x_channels_last || m.y_channels_last) {
    text += m.x_channels_last && m.y_channels_last ? "; x and y NHWC" : m.x_channels_last ? "; x NHWC" : "; y NHWC";
  }
  if (m.forward_x_nhwc || m.filter_x_nhwc) {
    text += m.forward_x_nhwc && m.filter_x_nhwc ? "; x reordered to NHWC for fwd and bwd-filter"
            : m.forward_x_nhwc                  ? "; x reordered to NHWC for fwd"
                                                : "; x reordered to NHWC for bwd-filter";
  }
  return text;
}

bool OneDnnConv::uses_reference_code() const {
  const Impl& m = *impl_;
  for (const PassPlan* pass : {&m.forward, &m.backward_data, &m.backward_filter}) {
    if (pass->implementation.starts_with("ref")) return true;
  }
  return false;
}

bool OneDnnConv::filter_on_nhwc_gemm() const { return impl_->filter_on_gemm; }

bool OneDnnConv::forward_on_nhwc_winograd() const { return impl_->forward_on_winograd; }

bool OneDnnConv::data_on_nhwc_winograd() const { return impl_->data_on_winograd; }

bool OneDnnConv::filter_on_nhwc_winograd() const { return impl_->filter_on_winograd; }

size_t OneDnnConv::workspace_bytes() const {
  const Impl& m = *impl_;
  // A pass Conv2d runs by Winograd does not use its oneDNN plan's slices.
  return std::max({m.forward_on_winograd ? 0 : m.forward.bytes, m.data_on_winograd ? 0 : m.backward_data.bytes,
                   m.backward_filter.bytes});
}

void OneDnnConv::forward(const float* x, const float* w, const float* b, float* y, void* workspace) {
  Impl& m = *impl_;
  char* ws = static_cast<char*>(workspace);
  m.fwd_w.bind(w, ws);
  if (m.bias) m.bias_memory.set_data_handle(const_cast<float*>(b));
  m.forward.scratchpad_memory.set_data_handle(ws);
  m.fwd_w.read(m.stream);
  for (int64_t s = 0; s < m.slices; ++s) {
    m.fwd_x.bind(x + s * m.x_slice_floats, ws), m.fwd_y.bind(y + s * m.y_slice_floats, ws);
    m.fwd_x.read(m.stream);
    m.forward.primitive.execute(m.stream, m.forward.args);
    m.fwd_y.write(m.stream, /*add=*/false);
    if (m.relu) {  // Note [No ReLU post-op]: the slice just written, while it is in cache
      m.stream.wait();
      relu_in_place_cpu(y + s * m.y_slice_floats, m.y_slice_floats);
    }
  }
  m.stream.wait();
}

void OneDnnConv::backward_data(const float* w, const float* dy, float* dx, GradMode mode, void* workspace) {
  Impl& m = *impl_;
  char* ws = static_cast<char*>(workspace);
  m.data_w.bind(w, ws);
  m.backward_data.scratchpad_memory.set_data_handle(ws);
  m.data_w.read(m.stream);
  for (int64_t s = 0; s < m.slices; ++s) {
    m.data_dy.bind(dy + s * m.y_slice_floats, ws);
    m.data_dx.bind(dx + s * m.x_slice_floats, ws, /*add=*/mode == GradMode::kAdd);
    m.data_dy.read(m.stream);
    m.backward_data.primitive.execute(m.stream, m.backward_data.args);
    m.data_dx.write(m.stream, /*add=*/mode == GradMode::kAdd);
  }
  m.stream.wait();
}

void OneDnnConv::backward_filter(const float* x, const float* dy, float* dw, GradMode mode, void* workspace) {
  Impl& m = *impl_;
  char* ws = static_cast<char*>(workspace);
  m.backward_filter.scratchpad_memory.set_data_handle(ws);
  for (int64_t s = 0; s < m.slices; ++s) {  // dW += each slice's sum; written by the first where mode says so
    const bool add = mode == GradMode::kAdd || s > 0;
    m.filter_dw.bind(dw, ws, add);  // written: in place where the layouts agree
    m.filter_x.bind(x + s * m.x_slice_floats, ws), m.filter_dy.bind(dy + s * m.y_slice_floats, ws);
    m.filter_x.read(m.stream);
    m.filter_dy.read(m.stream);
    m.backward_filter.primitive.execute(m.stream, m.backward_filter.args);
    m.filter_dw.write(m.stream, add);
  }
  m.stream.wait();
}

}  // namespace glassbox
