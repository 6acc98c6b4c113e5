// layers/conv2d/conv2d_operand_onednn.cpp: layers/conv2d/conv2d_operand_onednn.h.
#include "layers/conv2d/conv2d_operand_onednn.h"

#include <algorithm>

#include "layers/shared_onednn.h"

namespace glassbox {

using dnnl::memory;

// Note [Blocked layouts that are plain]: a layout that blocks dimension 1
// (channels) by its whole size, as nChw16c does with 16 channels, orders the
// bytes as the plain layout with that dimension innermost: nChw16c of 16
// channels is NHWC, byte for byte. oneDNN still sees two layouts and would
// reorder (copy) between them: ResNet-56's first stage, 16 channels stored
// NHWC, would copy every dy, x and dx of its backward passes, whose kernels
// take nChw16c on those 32 x 32 planes (Note [The backward's layouts on NHWC
// values]). So an operand compares the plain form of the primitive's layout
// with its own, and where they agree the primitive works on the tensor in
// place, through a memory object of its own layout.
memory::desc plain_form(const memory::desc& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.format_kind != dnnl_blocked || d.ndims < 2) return desc;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  if (b.inner_nblks != 1 || b.inner_idxs[0] != 1 || b.inner_blks[0] != d.dims[1] || d.padded_dims[1] != d.dims[1]) {
    return desc;
  }
  memory::dims strides(b.strides, b.strides + d.ndims);
  strides[1] = 1;  // the block is the whole dimension, innermost
  return memory::desc(desc.dims(), desc.data_type(), strides);
}

void OneDnnOperand::plan(const memory::desc& outside_desc, const memory::desc& inside_desc, Role role, size_t* next_offset,
                         size_t* scratchpad) {
  dnnl::engine& engine = onednn_cpu_engine();
  const bool reads = role == Role::kRead, writes = !reads;
  outside = onednn_unbound(outside_desc);
  agree = plain_form(inside_desc) == outside_desc;  // Note [Blocked layouts that are plain]
  copied = role == Role::kAddedTo || !agree;
  if (!copied) {
    aliased = !(inside_desc == outside_desc);
    inside = aliased ? onednn_unbound(inside_desc) : outside;
    return;
  }
  inside = onednn_unbound(inside_desc);
  offset = *next_offset;
  *next_offset += onednn_aligned(inside_desc.get_size());
  auto make = [&](const memory::desc& from, const memory::desc& to, dnnl::primitive_attr attr) {
    dnnl::reorder::primitive_desc pd(engine, from, engine, to, attr);
    *scratchpad = std::max(*scratchpad, pd.scratchpad_desc().get_size());
    return dnnl::reorder(pd);
  };
  if (reads) in = make(outside_desc, inside_desc, onednn_user_scratchpad());
  if (writes) {
    out = make(inside_desc, outside_desc, onednn_user_scratchpad());
    dnnl::primitive_attr sum = onednn_user_scratchpad();
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    sum.set_post_ops(ops);
    add_out = make(inside_desc, outside_desc, sum);
  }
}

}  // namespace glassbox
