// tensor/step_readback.cpp: Note [Reading a step's results a step late].
#include "tensor/step_readback.h"

#include <cstring>

#include "tensor/convert.h"
#include "tensor/error.h"

namespace glassbox {
namespace {

// Each copy starts on a 256-byte boundary within its slot, as device tensors do.
size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

std::vector<float> Readout::floats(size_t i) const {
  const Copy& c = copies.at(i);
  if (c.dtype == DType::kFloat32) {
    std::vector<float> values(c.bytes.size() / sizeof(float));
    std::memcpy(values.data(), c.bytes.data(), values.size() * sizeof(float));
    return values;
  }
  if (!is_16_bit_float(c.dtype)) throw Error(cat("Readout::floats: copy ", i, " is ", name_of(c.dtype)));
  std::vector<uint16_t> bits(c.bytes.size() / sizeof(uint16_t));
  std::memcpy(bits.data(), c.bytes.data(), bits.size() * sizeof(uint16_t));
  std::vector<float> values(bits.size());
  widen_cpu(bits, c.dtype, values);
  return values;
}

std::vector<int> Readout::ints(size_t i) const {
  const Copy& c = copies.at(i);
  if (c.dtype != DType::kInt32) throw Error(cat("Readout::ints: copy ", i, " is ", name_of(c.dtype)));
  std::vector<int> values(c.bytes.size() / sizeof(int));
  std::memcpy(values.data(), c.bytes.data(), values.size() * sizeof(int));
  return values;
}

StepReadback::StepReadback(Context& ctx, std::vector<Tensor> tensors, int depth)
    : sources_(std::move(tensors)), depth_(depth), slots_(depth + 1) {
  if (depth < 0) throw Error(cat("StepReadback: depth must be 0 or more, got ", depth));
  for (const Tensor& t : sources_) {
    if (!t.defined() || t.device() != ctx.device()) {
      throw Error(cat("StepReadback: ", t.str(), " is not a tensor on ", ctx.device().str()));
    }
    offsets_.push_back(slot_bytes_);
    slot_bytes_ += aligned(t.bytes());
  }
  const size_t total = slot_bytes_ * static_cast<size_t>(slots_);
  if (ctx.is_cuda()) {
    cuda_ = ctx.cuda_state();
    pinned_ = cuda_entry::allocate_pinned(*cuda_, total);
    copied_ = cuda_entry::create_events(*cuda_, slots_, /*timing=*/false);  // waited on only
  } else {
    host_.resize(total);
  }
  steps_.assign(static_cast<size_t>(slots_), 0);
}

StepReadback::~StepReadback() {
  // The device may still be writing into the pinned slots.
  for (int k = 0; k < unread_; ++k) {
    try {
      if (copied_) cuda_entry::wait_event(*copied_, (oldest_ + k) % slots_);
    } catch (const Error&) {
      // A failed device is reported by whoever uses it next.
    }
  }
}

std::byte* StepReadback::slot(int s) {
  std::byte* base = pinned_ ? static_cast<std::byte*>(pinned_.get()) : host_.data();
  return base + slot_bytes_ * static_cast<size_t>(s);
}

void StepReadback::record(int64_t step) {
  if (unread_ == slots_) {
    throw Error(cat("StepReadback: step ", step, " recorded with ", unread_, " steps unread (depth ", depth_,
                    "); take one first"));
  }
  const int s = (oldest_ + unread_) % slots_;
  std::byte* into = slot(s);
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Tensor& t = sources_[i];
    if (cuda_ != nullptr) {
      cuda_entry::copy(*cuda_, into + offsets_[i], t.raw(), t.bytes());  // stream-ordered, into pinned memory
    } else {
      std::memcpy(into + offsets_[i], t.raw(), t.bytes());
    }
  }
  if (copied_) cuda_entry::record_event(*cuda_, *copied_, s);
  steps_[static_cast<size_t>(s)] = step;
  ++unread_;
}

Readout StepReadback::take() {
  if (unread_ == 0) throw Error("StepReadback: take() with no step recorded and unread");
  const int s = oldest_;
  if (copied_) cuda_entry::wait_event(*copied_, s);
  Readout out;
  out.step = steps_[static_cast<size_t>(s)];
  const std::byte* from = slot(s);
  for (size_t i = 0; i < sources_.size(); ++i) {
    const std::byte* begin = from + offsets_[i];
    out.copies.push_back({sources_[i].dtype(), std::vector<std::byte>(begin, begin + sources_[i].bytes())});
  }
  oldest_ = (oldest_ + 1) % slots_;
  --unread_;
  return out;
}

}  // namespace glassbox
