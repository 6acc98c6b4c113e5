// layers/lstm/lstm_steps_onednn.cpp: see layers/lstm/lstm_steps_onednn.h.
#include "layers/lstm/lstm_steps_onednn.h"

#include <algorithm>

#include "layers/shared_onednn.h"
#include "tensor/error.h"

namespace glassbox {

using dnnl::memory;
using Tag = memory::format_tag;

// Workspace: [scratchpad | blocked W_hh]. The matmul's weights are (H, 4H):
// W_hh (4H, H) row-major read transposed ("ba") is where they come from.
struct OneDnnLstmSteps::Impl {
  dnnl::matmul matmul;
  dnnl::reorder to_blocked;
  memory user_weights, weights, h, a, scratchpad;
  size_t weights_at = 0, weights_bytes = 0;
  std::string implementation;
  dnnl::stream stream{onednn_cpu_engine()};
};

OneDnnLstmSteps::OneDnnLstmSteps(const std::string& layer, int64_t batch, int64_t hidden)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  dnnl::engine& engine = onednn_cpu_engine();
  auto floats = [](memory::dim rows, memory::dim cols, Tag tag) {
    return memory::desc({rows, cols}, memory::data_type::f32, tag);
  };
  const memory::dim B = batch, H = hidden, G = 4 * hidden;
  try {
    dnnl::primitive_attr attr = onednn_user_scratchpad();
    dnnl::post_ops add_to_a;  // a_t holds the input projection already
    add_to_a.append_sum(1.0f);
    attr.set_post_ops(add_to_a);
    const memory::desc h = floats(B, H, Tag::ab), a = floats(B, G, Tag::ab), user = floats(H, G, Tag::ba);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(h, floats(H, G, Tag::any), a), attr, engine);
    const dnnl::reorder::primitive_desc reorder(engine, user, engine, pd.weights_desc(), onednn_user_scratchpad());
    m.matmul = dnnl::matmul(pd);
    m.to_blocked = dnnl::reorder(reorder);
    m.implementation = pd.impl_info_str();
    m.user_weights = onednn_unbound(user), m.weights = onednn_unbound(pd.weights_desc()), m.h = onednn_unbound(h), m.a = onednn_unbound(a);
    m.weights_at = onednn_aligned(
        std::max({pd.scratchpad_desc().get_size(), reorder.scratchpad_desc().get_size(), kOneDnnAlignment}));
    m.weights_bytes = onednn_aligned(pd.weights_desc().get_size());
    m.scratchpad = onednn_unbound(memory::desc({static_cast<memory::dim>(m.weights_at)}, memory::data_type::u8, Tag::x));
  } catch (const dnnl::error& e) {
    throw ConfigError(cat(layer, " (LSTM): oneDNN cannot build the recurrent product of ", batch, " sequences of ",
                          hidden, " units: ", e.what(), " (status ", static_cast<int>(e.status), ")"));
  }
}

OneDnnLstmSteps::~OneDnnLstmSteps() = default;

std::string OneDnnLstmSteps::algorithms() const {
  return cat("Glassbox; recurrent products in forward on oneDNN matmul ", impl_->implementation);
}

size_t OneDnnLstmSteps::workspace_bytes() const { return impl_->weights_at + impl_->weights_bytes; }

void OneDnnLstmSteps::load_weights(const float* w_hh, void* workspace) {
  Impl& m = *impl_;
  auto* base = static_cast<char*>(workspace);
  m.scratchpad.set_data_handle(base);
  m.user_weights.set_data_handle(const_cast<float*>(w_hh));  // oneDNN's handles are not const: it only reads
  m.weights.set_data_handle(base + m.weights_at);
  m.to_blocked.execute(m.stream, {{DNNL_ARG_FROM, m.user_weights}, {DNNL_ARG_TO, m.weights},
                                  {DNNL_ARG_SCRATCHPAD, m.scratchpad}});
  m.stream.wait();
}

void OneDnnLstmSteps::step(const float* h, float* a) {
  Impl& m = *impl_;
  m.h.set_data_handle(const_cast<float*>(h));
  m.a.set_data_handle(a);
  m.matmul.execute(m.stream, {{DNNL_ARG_SRC, m.h}, {DNNL_ARG_WEIGHTS, m.weights}, {DNNL_ARG_DST, m.a},
                              {DNNL_ARG_SCRATCHPAD, m.scratchpad}});
  m.stream.wait();
}

}  // namespace glassbox
