// layers/lstm_onednn.cpp: the LSTM's CPU inference forward on oneDNN's LSTM
// primitive (Note [LSTM inference on oneDNN] in layers/lstm_onednn.h).
#include "layers/lstm_onednn.h"

#include <algorithm>
#include <vector>

#include "layers/shared_onednn.h"
#include "tensor/error.h"

namespace glassbox {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::desc floats(const memory::dims& dims, Tag tag) { return {dims, memory::data_type::f32, tag}; }

// One input size's primitive (layer 0's, or the layers' above when I != H),
// its memories (pointed at each call's tensors) and the weight reorders.
// Workspace: [scratchpad | weights_layer | weights_iter | bias], each aligned.
struct LayerPlan {
  dnnl::lstm_forward primitive;
  dnnl::reorder to_weights_layer, to_weights_iter;
  memory x, h0, c0, y, hT, cT, user_w_ih, user_w_hh, weights_layer, weights_iter, bias, scratchpad;
  size_t weights_layer_at = 0, weights_iter_at = 0, bias_at = 0, bytes = 0;
  std::string implementation;
};

LayerPlan plan_layer(const OneDnnLstm::Sizes& s, int64_t input) {
  const memory::dim T = s.steps, B = s.batch, I = input, H = s.hidden;
  const memory::desc x = floats({T, B, I}, Tag::tnc), y = floats({T, B, H}, Tag::tnc);
  const memory::desc state = floats({1, 1, B, H}, Tag::ldnc);
  // PyTorch's weight_ih (4H, I), row g*H + o, column i: oneDNN's ldgoi.
  const memory::desc user_w_ih = floats({1, 1, I, 4, H}, Tag::ldgoi), user_w_hh = floats({1, 1, H, 4, H}, Tag::ldgoi);
  const memory::desc bias = floats({1, 1, 4, H}, Tag::ldgo);  // gates i, f, g, o: PyTorch's order too
  const dnnl::lstm_forward::desc desc(dnnl::prop_kind::forward_inference,
                                      dnnl::rnn_direction::unidirectional_left2right, x, state, state,
                                      floats({1, 1, I, 4, H}, Tag::any), floats({1, 1, H, 4, H}, Tag::any), bias,
                                      y, state, state);
  const dnnl::lstm_forward::primitive_desc pd(desc, onednn_user_scratchpad(), onednn_cpu_engine());
  LayerPlan p;
  p.primitive = dnnl::lstm_forward(pd);
  p.implementation = pd.impl_info_str();
  p.x = onednn_unbound(x), p.y = onednn_unbound(y), p.h0 = onednn_unbound(state), p.c0 = onednn_unbound(state), p.hT = onednn_unbound(state), p.cT = onednn_unbound(state);
  p.user_w_ih = onednn_unbound(user_w_ih), p.user_w_hh = onednn_unbound(user_w_hh);
  p.weights_layer = onednn_unbound(pd.weights_layer_desc()), p.weights_iter = onednn_unbound(pd.weights_iter_desc()), p.bias = onednn_unbound(bias);
  const dnnl::reorder::primitive_desc to_layer(onednn_cpu_engine(), user_w_ih, onednn_cpu_engine(),
                                               pd.weights_layer_desc(), onednn_user_scratchpad());
  const dnnl::reorder::primitive_desc to_iter(onednn_cpu_engine(), user_w_hh, onednn_cpu_engine(),
                                              pd.weights_iter_desc(), onednn_user_scratchpad());
  p.to_weights_layer = dnnl::reorder(to_layer), p.to_weights_iter = dnnl::reorder(to_iter);
  const size_t scratchpad = onednn_aligned(std::max({pd.scratchpad_desc().get_size(), to_layer.scratchpad_desc().get_size(),
                                              to_iter.scratchpad_desc().get_size(), kOneDnnAlignment}));
  p.scratchpad = onednn_unbound(memory::desc({static_cast<memory::dim>(scratchpad)}, memory::data_type::u8, Tag::x));
  p.weights_layer_at = scratchpad;
  p.weights_iter_at = p.weights_layer_at + onednn_aligned(pd.weights_layer_desc().get_size());
  p.bias_at = p.weights_iter_at + onednn_aligned(pd.weights_iter_desc().get_size());
  p.bytes = p.bias_at + onednn_aligned(bias.get_size());
  return p;
}

}  // namespace

struct OneDnnLstm::Impl {
  Sizes sizes;
  std::vector<LayerPlan> plans;  // [0]: layer 0; [1]: the layers above, when their input size differs
  dnnl::stream stream{onednn_cpu_engine()};
};

OneDnnLstm::OneDnnLstm(const std::string& layer, const Sizes& s) : impl_(std::make_unique<Impl>()) {
  impl_->sizes = s;
  try {
    impl_->plans.push_back(plan_layer(s, s.input));
    if (s.layers > 1 && s.input != s.hidden) impl_->plans.push_back(plan_layer(s, s.hidden));
  } catch (const dnnl::error& e) {
    throw ConfigError(cat(layer, " (LSTM): oneDNN cannot build its LSTM for ", s.steps, " steps of ", s.batch,
                          " sequences, ", s.input, " -> ", s.hidden, ": ", e.what(), " (status ",
                          static_cast<int>(e.status), ")"));
  }
}

OneDnnLstm::~OneDnnLstm() = default;

std::string OneDnnLstm::algorithms() const {
  return cat("oneDNN LSTM ", impl_->plans[0].implementation, " (inference); training: Glassbox");
}

size_t OneDnnLstm::workspace_bytes() const {
  size_t bytes = 0;
  for (const LayerPlan& p : impl_->plans) bytes = std::max(bytes, p.bytes);
  return bytes;
}

void OneDnnLstm::forward(int layer, const LayerTensors& t, void* workspace) {
  LayerPlan& p = impl_->plans[layer > 0 && impl_->plans.size() > 1 ? 1 : 0];
  const int64_t G = 4 * impl_->sizes.hidden;
  auto* base = static_cast<char*>(workspace);
  auto* bias = reinterpret_cast<float*>(base + p.bias_at);
  for (int64_t j = 0; j < G; ++j) bias[j] = t.b_ih != nullptr ? t.b_ih[j] + t.b_hh[j] : 0.0f;
  // oneDNN's handles are not const: it only reads these.
  auto in = [](const float* data) { return const_cast<float*>(data); };
  p.scratchpad.set_data_handle(base);
  p.weights_layer.set_data_handle(base + p.weights_layer_at);
  p.weights_iter.set_data_handle(base + p.weights_iter_at);
  p.bias.set_data_handle(bias);
  p.user_w_ih.set_data_handle(in(t.w_ih));
  p.user_w_hh.set_data_handle(in(t.w_hh));
  p.x.set_data_handle(in(t.x));
  p.h0.set_data_handle(in(t.h0));
  p.c0.set_data_handle(in(t.c0));
  p.y.set_data_handle(t.y);
  p.hT.set_data_handle(t.hT);
  p.cT.set_data_handle(t.cT);
  dnnl::stream& s = impl_->stream;
  p.to_weights_layer.execute(s, {{DNNL_ARG_FROM, p.user_w_ih}, {DNNL_ARG_TO, p.weights_layer},
                                 {DNNL_ARG_SCRATCHPAD, p.scratchpad}});
  p.to_weights_iter.execute(s, {{DNNL_ARG_FROM, p.user_w_hh}, {DNNL_ARG_TO, p.weights_iter},
                                {DNNL_ARG_SCRATCHPAD, p.scratchpad}});
  p.primitive.execute(s, {{DNNL_ARG_SRC_LAYER, p.x}, {DNNL_ARG_SRC_ITER, p.h0}, {DNNL_ARG_SRC_ITER_C, p.c0},
                          {DNNL_ARG_WEIGHTS_LAYER, p.weights_layer}, {DNNL_ARG_WEIGHTS_ITER, p.weights_iter},
                          {DNNL_ARG_BIAS, p.bias}, {DNNL_ARG_DST_LAYER, p.y}, {DNNL_ARG_DST_ITER, p.hT},
                          {DNNL_ARG_DST_ITER_C, p.cT}, {DNNL_ARG_SCRATCHPAD, p.scratchpad}});
  s.wait();
}

}  // namespace glassbox
