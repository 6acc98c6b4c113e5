// tensor/tensor.cpp: buffers and views.
#include "tensor/tensor.h"

namespace glassbox {

Buffer::Buffer(std::shared_ptr<Allocator> allocator, size_t bytes, MemoryCategory category)
    : allocator_(std::move(allocator)),
      bytes_(bytes),
      category_(category),
      data_(allocator_->allocate(bytes, category)) {}

Buffer::~Buffer() { allocator_->deallocate(data_, bytes_, category_); }

Tensor::Tensor(std::shared_ptr<Buffer> buffer, size_t byte_offset, Shape shape, DType dtype,
               Layout layout)
    : buffer_(std::move(buffer)),
      offset_(byte_offset),
      shape_(std::move(shape)),
      dtype_(dtype),
      layout_(layout) {
  // In this order so that no sum wraps around (an offset near SIZE_MAX).
  if (buffer_ && (offset_ > buffer_->bytes() || bytes() > buffer_->bytes() - offset_)) {
    throw Error(cat("tensor ", str(), " at byte ", offset_, " does not fit its buffer of ",
                    buffer_->bytes(), " bytes"));
  }
}

Tensor Tensor::named(std::string name) const {
  Tensor copy = *this;
  copy.name_ = std::make_shared<const std::string>(std::move(name));
  return copy;
}

std::string Tensor::described() const { return name_ ? cat("'", *name_, "' ", str()) : str(); }

Device Tensor::device() const { return buffer_ ? buffer_->device() : Device::cpu(); }

void* Tensor::raw() const {
  if (!buffer_) {
    throw Error(name_ ? cat("access to an undefined tensor: ", *name_)
                      : std::string("access to an undefined tensor (default-constructed, never given storage)"));
  }
  return static_cast<char*>(buffer_->data()) + offset_;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape.numel() != numel()) {
    throw ShapeError(cat("cannot view ", shape_.str(), " (", numel(), " elements) as ",
                         shape.str(), " (", shape.numel(), " elements)"));
  }
  Tensor same = Tensor(buffer_, offset_, std::move(shape), dtype_, layout_);
  same.name_ = name_;  // the same elements, so the same name
  return same;
}

Tensor Tensor::view(size_t byte_offset, Shape shape, DType dtype) const {
  if (buffer_ && byte_offset > buffer_->bytes() - offset_) {  // offset_ + byte_offset would pass the end, or wrap
    throw Error(cat("a view at byte ", byte_offset, " of ", str(), " (itself at byte ", offset_,
                    ") starts past the end of its buffer of ", buffer_->bytes(), " bytes"));
  }
  if ((offset_ + byte_offset) % size_of(dtype) != 0) {  // its elements would straddle the buffer's
    throw Error(cat("a view at byte ", byte_offset, " of ", str(), " (itself at byte ", offset_,
                    ") does not start on a ", size_of(dtype), "-byte boundary, which its ", name_of(dtype),
                    " elements need"));
  }
  return Tensor(buffer_, offset_ + byte_offset, std::move(shape), dtype, layout_);
}

Tensor Tensor::with_layout(Layout layout) const {
  Tensor same = *this;
  same.layout_ = layout;
  return same;
}

std::string_view name_of(Layout layout) { return layout == Layout::kNHWC ? "NHWC" : "NCHW"; }

bool layouts_share_bytes(const Shape& shape) {
  return shape.rank() == 4 && (shape[1] == 1 || shape[2] * shape[3] == 1);
}

std::array<int64_t, 4> packed_strides(const Shape& shape, Layout layout) {
  if (shape.rank() < 1 || shape.rank() > 4 || (layout == Layout::kNHWC && shape.rank() != 4)) {
    throw ShapeError(cat("packed strides: ", name_of(layout), " describes ",
                         layout == Layout::kNHWC ? "rank 4" : "rank 1 to 4", ", not ", shape.str()));
  }
  int64_t d[4] = {1, 1, 1, 1};
  for (int i = 0; i < shape.rank(); ++i) d[i] = shape[i];
  if (layout == Layout::kNHWC) return {d[2] * d[3] * d[1], 1, d[3] * d[1], d[1]};
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

std::string Tensor::str() const {
  if (!buffer_) return "undefined tensor";
  return cat(name_of(dtype_), " ", shape_.str(), layout_ == Layout::kNHWC ? ", NHWC" : "", " on ", device().str());
}

void Tensor::check_dtype(DType requested) const {
  if (requested != dtype_) {
    throw Error(cat("tensor ", described(), " accessed as ", name_of(requested)));
  }
}

}  // namespace glassbox
