// tensor/copy.cpp: host copies directly, anything touching a device through
// the CUDA entry points (stream-ordered).
#include "tensor/copy.h"

#include <cstring>

#include "tensor/convert.h"
#include "tensor/cuda_entry.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

// `what`: the operation, for the message ("copy", "fill_zero", ...).
void check_same_device_or_host(const Context& ctx, const Tensor& t, std::string_view what) {
  if (t.device().is_cuda() && t.device() != ctx.device()) {
    throw Error(cat(what, ": tensor ", t.str(), ", the context is ", ctx.device().str()));
  }
}

void copy_bytes(Context& ctx, void* dst, const void* src, size_t bytes, bool host_only) {
  if (host_only) {
    std::memcpy(dst, src, bytes);
  } else {
    cuda_entry::copy(*ctx.cuda_state(), dst, src, bytes);
  }
}

}  // namespace

void copy(Context& ctx, const Tensor& src, const Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.numel() != dst.numel()) {
    throw ShapeError(cat("copy: source ", src.str(), " does not match destination ", dst.str()));
  }
  check_same_device_or_host(ctx, src, "copy");
  check_same_device_or_host(ctx, dst, "copy");
  // Views of one buffer that overlap: neither memcpy nor cudaMemcpy says
  // what they copy then. A tensor onto itself is a copy with nothing to do.
  const auto* from = static_cast<const char*>(src.raw());
  auto* to = static_cast<char*>(dst.raw());
  if (from == to) return;
  if (src.device() == dst.device() && from < to + dst.bytes() && to < from + src.bytes()) {
    throw Error(cat("copy: source ", src.str(), " and destination ", dst.str(),
                    " overlap in one buffer; copy through a tensor of its own"));
  }
  const bool host_only = !src.device().is_cuda() && !dst.device().is_cuda();
  copy_bytes(ctx, dst.raw(), src.raw(), src.bytes(), host_only);
}

void fill_zero(Context& ctx, const Tensor& dst) {
  check_same_device_or_host(ctx, dst, "fill_zero");
  if (dst.device().is_cuda()) {
    cuda_entry::fill_zero(*ctx.cuda_state(), dst.raw(), dst.bytes());
  } else {
    // Over the threads: one core's stores do not fill the memory bus, and a
    // training step zeroes every gradient first (AlexNet's: 244 MB).
    auto* bytes = static_cast<unsigned char*>(dst.raw());
    parallel_for(static_cast<int64_t>(dst.bytes()), kElementwiseGrain * 4, [&](int64_t begin, int64_t end) {
      std::memset(bytes + begin, 0, static_cast<size_t>(end - begin));
    });
  }
}

template <typename T>
std::vector<T> to_vector(Context& ctx, const Tensor& src) {
  check_same_device_or_host(ctx, src, "to_vector");
  std::vector<T> values(static_cast<size_t>(src.numel()));
  copy_bytes(ctx, values.data(), src.template data<T>(), src.bytes(), !src.device().is_cuda());
  ctx.synchronize();
  return values;
}

template <typename T>
void from_vector(Context& ctx, std::span<const T> values, const Tensor& dst) {
  check_same_device_or_host(ctx, dst, "from_vector");
  if (static_cast<int64_t>(values.size()) != dst.numel()) {
    throw ShapeError(cat("from_vector: ", values.size(), " values for ", dst.str()));
  }
  copy_bytes(ctx, dst.template data<T>(), values.data(), dst.bytes(), !dst.device().is_cuda());
  ctx.synchronize();  // `values` may go away as soon as we return
}

std::vector<float> to_float_vector(Context& ctx, const Tensor& src) {
  if (!is_16_bit_float(src.dtype())) return to_vector<float>(ctx, src);
  check_same_device_or_host(ctx, src, "to_float_vector");
  std::vector<uint16_t> bits(static_cast<size_t>(src.numel()));
  copy_bytes(ctx, bits.data(), src.raw(), src.bytes(), !src.device().is_cuda());
  ctx.synchronize();
  std::vector<float> values(bits.size());
  widen_cpu(bits, src.dtype(), values);
  return values;
}

template std::vector<float> to_vector<float>(Context&, const Tensor&);
template std::vector<int> to_vector<int>(Context&, const Tensor&);
template void from_vector<float>(Context&, std::span<const float>, const Tensor&);
template void from_vector<int>(Context&, std::span<const int>, const Tensor&);

}  // namespace glassbox
