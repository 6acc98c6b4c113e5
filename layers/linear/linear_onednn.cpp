// layers/linear/linear_onednn.cpp: see layers/linear/linear_onednn.h.
#include "layers/linear/linear_onednn.h"

#include <unordered_map>

#include "layers/shared_onednn.h"
#include "tensor/cpu_blas.h"
#include "tensor/error.h"

namespace glassbox {

using dnnl::memory;
using Tag = memory::format_tag;

struct OneDnnLinearForward::Impl {
  dnnl::stream stream{onednn_cpu_engine()};
  dnnl::matmul matmul;
  std::string implementation;
  size_t scratchpad_bytes = 0;
  bool bias = false;
  std::string backward;  // the path the layer's backward runs on
  // Handles bound to the tensors on every call; the argument map holds the
  // same handles, so it is made once.
  memory x, w, b, y, scratchpad;
  std::unordered_map<int, memory> args;
};

OneDnnLinearForward::OneDnnLinearForward(const std::string& layer, int64_t rows, int64_t in, int64_t out, bool bias,
                                         std::string backward)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.bias = bias;
  m.backward = std::move(backward);
  dnnl::engine& engine = onednn_cpu_engine();
  auto desc = [](memory::dim r, memory::dim c, Tag tag) { return memory::desc({r, c}, memory::data_type::f32, tag); };
  const memory::desc x_md = desc(rows, in, Tag::ab), y_md = desc(rows, out, Tag::ab);
  const memory::desc w_md = desc(in, out, Tag::ba);  // w (out, in) row-major, read as w^T
  const memory::desc b_md = bias ? desc(1, out, Tag::ab) : memory::desc();
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x_md, w_md, b_md, y_md), onednn_user_scratchpad(), engine);
    m.matmul = dnnl::matmul(pd);
    m.implementation = pd.impl_info_str();
    m.scratchpad_bytes = onednn_aligned(pd.scratchpad_desc().get_size());
    m.x = onednn_unbound(x_md);
    m.w = onednn_unbound(w_md);
    m.y = onednn_unbound(y_md);
    m.scratchpad = onednn_unbound(pd.scratchpad_desc());
    m.args = {{DNNL_ARG_SRC, m.x}, {DNNL_ARG_WEIGHTS, m.w}, {DNNL_ARG_DST, m.y}, {DNNL_ARG_SCRATCHPAD, m.scratchpad}};
    if (bias) {
      m.b = onednn_unbound(b_md);
      m.args.emplace(DNNL_ARG_BIAS, m.b);
    }
  } catch (const dnnl::error& e) {
    throw ConfigError(cat(layer, " (Linear): oneDNN cannot build its matmul for ", rows, " rows of ", in, " -> ", out,
                          " features: ", e.what(), " (status ", static_cast<int>(e.status), ")"));
  }
}

OneDnnLinearForward::~OneDnnLinearForward() = default;

std::string OneDnnLinearForward::algorithms() const {
  return cat("oneDNN matmul ", impl_->implementation, " (forward); backward: ", impl_->backward, " on ", cpu_gemm_name());
}

bool OneDnnLinearForward::uses_reference_code() const { return impl_->implementation.starts_with("ref"); }

size_t OneDnnLinearForward::workspace_bytes() const { return impl_->scratchpad_bytes; }

void OneDnnLinearForward::forward(const float* x, const float* w, const float* b, float* y, void* workspace) {
  Impl& m = *impl_;
  m.x.set_data_handle(const_cast<float*>(x));
  m.w.set_data_handle(const_cast<float*>(w));
  if (m.bias) m.b.set_data_handle(const_cast<float*>(b));
  m.y.set_data_handle(y);
  m.scratchpad.set_data_handle(workspace);
  m.matmul.execute(m.stream, m.args);
  m.stream.wait();
}

}  // namespace glassbox
