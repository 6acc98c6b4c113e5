// layers/conv2d/conv2d_operand_onednn.h: one tensor of a oneDNN convolution pass
// (layers/conv2d/conv2d_onednn.cpp): Glassbox's layout outside, the primitive's
// inside, and the reorders between them. Built only with oneDNN.
#pragma once

#include <cstddef>
#include <unordered_map>

#include "oneapi/dnnl/dnnl.hpp"

namespace glassbox {

// Note [Blocked layouts that are plain] (layers/conv2d/conv2d_operand_onednn.cpp):
// `desc` in its plain form where its one block spans the whole of dimension
// 1; else `desc` itself.
dnnl::memory::desc plain_form(const dnnl::memory::desc& desc);

// One tensor a pass reads or writes: Glassbox's NCHW (or OIHW) layout outside,
// the layout the primitive chose inside. When they differ, the inside copy is
// a slice of the workspace and reorders move the data.
struct OneDnnOperand {
  dnnl::memory outside, inside;
  bool copied = false;   // inside is a workspace slice (else `outside` itself, or an alias of it)
  bool agree = false;    // the layouts agree: a kAddedTo result that is written (not added) can land outside
  bool aliased = false;  // not copied: inside is the primitive's layout over outside's bytes
  size_t offset = 0;     // of the slice
  dnnl::reorder in, out, add_out;

  // kRead: the primitive reads it (reordered in). kWritten: it writes it
  // (reordered out). kAddedTo: it writes a result that is added to what is
  // outside (dW += ..., dx in GradMode::kAdd), so it lands in the workspace
  // even when the layouts agree.
  enum class Role { kRead, kWritten, kAddedTo };
  void plan(const dnnl::memory::desc& outside_desc, const dnnl::memory::desc& inside_desc, Role role,
            size_t* next_offset, size_t* scratchpad);

  // The reorders' arguments, made once (memory objects are handles: binding
  // new pointers later changes what these maps point at too).
  void finish(const dnnl::memory& scratchpad) {
    to_inside = {{DNNL_ARG_FROM, outside}, {DNNL_ARG_TO, inside}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
    to_outside = {{DNNL_ARG_FROM, inside}, {DNNL_ARG_TO, outside}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
  }

  // `add`: the pass will add its result to what is outside (write(add = true)).
  void bind(const void* data, char* workspace, bool add = true) {
    outside.set_data_handle(const_cast<void*>(data));
    direct = agree && !add;
    if (copied) inside.set_data_handle(direct ? const_cast<void*>(data) : workspace + offset);
    if (aliased) inside.set_data_handle(const_cast<void*>(data));
  }
  void read(dnnl::stream& stream) {
    if (copied) in.execute(stream, to_inside);
  }
  void write(dnnl::stream& stream, bool add) {
    if (copied && !direct) (add ? add_out : out).execute(stream, to_outside);
  }

 private:
  std::unordered_map<int, dnnl::memory> to_inside, to_outside;
  bool direct = false;  // this call's result lands outside, in place
};

}  // namespace glassbox
