// tensor/tensor.h: a typed, shaped view into a Buffer on one device.
//
// A Tensor is a handle: copying it copies the view, never the data, and a
// const Tensor still gives write access to its elements (as with a pointer).
// Tensors are packed (contiguous) in their layout; the graph hands layers
// views into a few large buffers planned at compile time. Copies between host
// and device are explicit (tensor/copy.h), never implicit.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "tensor/allocator.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/error.h"
#include "tensor/shape.h"

namespace glassbox {

// Memory order of a rank-4 image tensor, whose shape is (N, C, H, W) either
// way. NCHW, but NHWC where a graph stores a value channels-last (Note
// [Channels-last values], graph/layouts.h), and for a CUDA convolution's KRSC
// filter; NHWC is what oneDNN's and cuDNN's fast convolutions work on.
enum class Layout { kNCHW, kNHWC };
std::string_view name_of(Layout layout);  // "NCHW", "NHWC"

// The element strides of a packed tensor of `shape` stored in `layout`, in
// (N, C, H, W) order: NCHW (C*H*W, H*W, W, 1), NHWC (H*W*C, 1, W*C, C). A
// shape of rank 1 to 3 is read as NCHW padded with trailing ones, which only
// NCHW may describe. ShapeError for any other rank, or NHWC below rank 4.
std::array<int64_t, 4> packed_strides(const Shape& shape, Layout layout);
// Whether NCHW and NHWC put every element of a rank-4 `shape` at the same
// place: where C is 1 or H*W is 1, the one stride that differs never
// multiplies an index above 0, so a value stored in one layout is already
// the other (a layer reads it as it is, with no conversion). False for any
// other rank.
bool layouts_share_bytes(const Shape& shape);

// One allocation, returned to its allocator when the last view of it goes.
class Buffer {
 public:
  Buffer(std::shared_ptr<Allocator> allocator, size_t bytes, MemoryCategory category);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return allocator_->device(); }
  MemoryCategory category() const { return category_; }

 private:
  std::shared_ptr<Allocator> allocator_;  // kept alive by every buffer it made
  size_t bytes_;
  MemoryCategory category_;
  void* data_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage (e.g. "no gradient wanted here")
  Tensor(std::shared_ptr<Buffer> buffer, size_t byte_offset, Shape shape, DType dtype,
         Layout layout = Layout::kNCHW);

  bool defined() const { return buffer_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  Device device() const;
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * size_of(dtype_); }

  void* raw() const;
  // Typed element pointer; throws Error if T does not match the dtype.
  template <typename T>
  T* data() const {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(raw());
  }

  // The same elements (and name) under another shape of equal element count.
  Tensor reshaped(Shape shape) const;
  // A packed sub-view starting `byte_offset` bytes into this tensor's storage
  // (unnamed: a part is not the whole).
  Tensor view(size_t byte_offset, Shape shape, DType dtype) const;
  // The same view (and name), its elements said to be in `layout` order.
  Tensor with_layout(Layout layout) const;

  std::string str() const;  // "float32 (8, 3, 224, 224) on cuda:0" (", NHWC" after the shape where it is)

  // A name for error messages ("conv1_1.weight"); the graph names every
  // tensor it plans, and every undefined one with why there is none. Shared,
  // so copying a tensor never allocates.
  Tensor named(std::string name) const;
  std::string_view name() const { return name_ ? std::string_view(*name_) : std::string_view(); }

 private:
  void check_dtype(DType requested) const;
  std::string described() const;  // "'conv1_1.weight' float32 (64, 3, 3, 3) on cpu"

  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;  // bytes from the start of the buffer
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  Layout layout_ = Layout::kNCHW;
  std::shared_ptr<const std::string> name_;
};

// A tensor with the name a model's state goes by: "conv1.weight",
// "layer1.0.bn1.running_mean" (Graph::named_parameters, named_state).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

}  // namespace glassbox
