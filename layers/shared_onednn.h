// layers/shared_onednn.h: what every oneDNN path shares (layers/*_onednn.cpp):
// the CPU engine, memories made before their buffers exist, and the attribute
// that hands each primitive's scratchpad to the caller (Note [oneDNN's
// scratchpad] in conv2d_onednn.cpp). Built only with oneDNN; includes oneDNN's
// header, so only *_onednn.cpp files include it.
#pragma once

#include <cstddef>

#include "oneapi/dnnl/dnnl.hpp"

namespace glassbox {

// Where every buffer a oneDNN path places in the workspace starts: a cache line.
constexpr size_t kOneDnnAlignment = 64;
inline size_t onednn_aligned(size_t bytes) { return (bytes + kOneDnnAlignment - 1) / kOneDnnAlignment * kOneDnnAlignment; }

dnnl::engine& onednn_cpu_engine();
dnnl::primitive_attr onednn_user_scratchpad();

// A memory on the CPU engine with no buffer yet: plans make their memories once
// and point them at each call's tensors with set_data_handle.
inline dnnl::memory onednn_unbound(const dnnl::memory::desc& desc) {
  return dnnl::memory(desc, onednn_cpu_engine(), DNNL_MEMORY_NONE);
}

}  // namespace glassbox
