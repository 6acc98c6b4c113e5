// data/loader_staging.h: the GPU half of the loader (data/loader.h), behind
// an interface with no CUDA type in it, so that data/loader.cpp stays a
// plain C++ file. Defined in data/loader_cuda.cpp; a CPU-only build's
// make_device_staging (data/loader.cpp) throws NotBuiltError.
//
// It owns, for one CUDA context:
//   host slots     `slots` x (images: batch*C*H*W float32, labels: batch int32),
//                  pinned (cudaHostAlloc), so copies from them are asynchronous
//   device buffers 2 x the same, on ctx's device (double-buffered)
//   a copy stream, and events that order it against ctx's stream
// Batch k, in host slot s, device buffer j = k % 2:
//   copy stream: wait until ctx's stream has read device buffer j (batch k-2);
//                host slot s -> device buffer j; record copied[s]
//   ctx stream:  wait for copied[s]; device buffer j -> images, labels; record read[j]
// Workers fill host slot s again only after wait_host(s) returned. The slots
// hold bytes: a language model's windows (data/text_batches.h) go through
// them too, its int32 tokens where the images would be.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tensor/context.h"

namespace glassbox {

class DeviceStaging {
 public:
  // The destructor waits for the copies it queued; it never throws.
  virtual ~DeviceStaging() = default;
  virtual float* host_images(int slot) const = 0;
  virtual int32_t* host_labels(int slot) const = 0;
  // Queues host slot `slot` into `images` and `labels` (device pointers on
  // ctx's device, images_bytes and labels_bytes long), as above; returns at once.
  virtual void copy_async(int slot, void* images, void* labels) = 0;
  // Blocks until the last copy out of host slot `slot` has read it.
  virtual void wait_host(int slot) = 0;
};

// For a CUDA context. Throws NotBuiltError in a CPU-only build,
// OutOfMemoryError or LibraryError when an allocation fails.
std::unique_ptr<DeviceStaging> make_device_staging(Context& ctx, size_t images_bytes, size_t labels_bytes,
                                                   int slots);

}  // namespace glassbox
