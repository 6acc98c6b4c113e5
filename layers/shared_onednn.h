// layers/shared_onednn.h: what every oneDNN path shares (layers/conv2d_onednn.cpp,
// layers/lstm_onednn.cpp): the CPU engine and the attribute that hands each
// primitive's scratchpad to the caller (Note [oneDNN's scratchpad] in
// conv2d_onednn.cpp). Built only with oneDNN; includes oneDNN's header, so
// only *_onednn.cpp files include it.
#pragma once

#include <cstddef>

#include "oneapi/dnnl/dnnl.hpp"

namespace glassbox {

// Where every buffer a oneDNN path places in the workspace starts: a cache line.
constexpr size_t kOneDnnAlignment = 64;
inline size_t onednn_aligned(size_t bytes) { return (bytes + kOneDnnAlignment - 1) / kOneDnnAlignment * kOneDnnAlignment; }

dnnl::engine& onednn_cpu_engine();
dnnl::primitive_attr onednn_user_scratchpad();

}  // namespace glassbox
