// data/loader_cuda.cpp: the loader's pinned host slots, device buffers, copy
// stream and events (data/loader_staging.h says how batches flow through them).
#include <cuda_runtime.h>

#include <array>
#include <vector>

#include "data/loader_staging.h"
#include "tensor/checks_cuda.h"
#include "tensor/context_cuda.h"
#include "tensor/handles_cuda.h"

namespace glassbox {
namespace {

struct PinnedFree {
  void operator()(void* ptr) const noexcept { (void)cudaFreeHost(ptr); }
};

CudaEvent make_event() {
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));  // ordering only: cheaper
  return CudaEvent(event);
}

// Labels start at a 256-byte boundary after the images, in host slots and device buffers alike.
size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

class CudaStaging final : public DeviceStaging {
 public:
  CudaStaging(Context& ctx, size_t images_bytes, size_t labels_bytes, int slots)
      : ctx_(ctx), images_bytes_(images_bytes), labels_bytes_(labels_bytes),
        stride_(aligned(images_bytes) + aligned(labels_bytes)) {
    CUDA_CHECK(cudaSetDevice(cuda_resources(ctx).device));
    void* host = nullptr;
    CUDA_CHECK(cudaHostAlloc(&host, stride_ * static_cast<size_t>(slots), cudaHostAllocDefault));
    host_.reset(host);
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    copy_stream_ = CudaStream(stream);
    for (int s = 0; s < slots; ++s) copied_.push_back(make_event());
    for (int j = 0; j < 2; ++j) {
      // Through the context's allocator, so the memory report counts it as data.
      device_[j] = ctx.allocate(Shape{static_cast<int64_t>(stride_ / sizeof(float))}, DType::kFloat32,
                                MemoryCategory::kData);
      read_[j] = make_event();
      // The copy stream's first writes into device_[j] wait for its
      // allocation, which is stream-ordered on ctx's stream (cudaMallocAsync):
      // the pool may hand it a block that kernels queued there still read.
      CUDA_CHECK(cudaEventRecord(read_[j].get(), stream_of(ctx)));
    }
  }

  // Every copy out of the host slots and into the device buffers is done
  // before they are freed; ctx's stream, which reads the device buffers, also
  // frees them (stream-ordered), after its own reads.
  ~CudaStaging() override { (void)cudaStreamSynchronize(copy_stream_.get()); }

  float* host_images(int slot) const override { return reinterpret_cast<float*>(host_slot(slot)); }
  int32_t* host_labels(int slot) const override {
    return reinterpret_cast<int32_t*>(host_slot(slot) + aligned(images_bytes_));
  }

  void copy_async(int slot, void* images, void* labels) override {
    const int j = turn_;
    turn_ ^= 1;
    char* device = static_cast<char*>(device_[j].raw());
    cudaStream_t copy = copy_stream_.get();
    cudaStream_t step = stream_of(ctx_);
    cudaEvent_t copied = copied_.at(static_cast<size_t>(slot)).get();
    // Device buffer j was last read by ctx's stream two batches ago (for the
    // first two batches: allocated there).
    CUDA_CHECK(cudaStreamWaitEvent(copy, read_[j].get(), 0));
    CUDA_CHECK(cudaMemcpyAsync(device, host_images(slot), images_bytes_, cudaMemcpyHostToDevice, copy));
    CUDA_CHECK(cudaMemcpyAsync(device + aligned(images_bytes_), host_labels(slot), labels_bytes_,
                               cudaMemcpyHostToDevice, copy));
    CUDA_CHECK(cudaEventRecord(copied, copy));
    CUDA_CHECK(cudaStreamWaitEvent(step, copied, 0));
    CUDA_CHECK(cudaMemcpyAsync(images, device, images_bytes_, cudaMemcpyDeviceToDevice, step));
    CUDA_CHECK(cudaMemcpyAsync(labels, device + aligned(images_bytes_), labels_bytes_, cudaMemcpyDeviceToDevice,
                               step));
    CUDA_CHECK(cudaEventRecord(read_[j].get(), step));
  }

  // Note [An unrecorded event is done]: "Before the first call to
  // cudaEventRecord(), an event represents an empty set of work" (CUDA
  // runtime API, cudaEventRecord): waiting on it, from a stream
  // (cudaStreamWaitEvent) or the host (cudaEventSynchronize), returns at once.
  void wait_host(int slot) override { CUDA_CHECK(cudaEventSynchronize(copied_.at(static_cast<size_t>(slot)).get())); }

 private:
  char* host_slot(int slot) const { return static_cast<char*>(host_.get()) + stride_ * static_cast<size_t>(slot); }

  Context& ctx_;
  size_t images_bytes_, labels_bytes_, stride_;
  std::unique_ptr<void, PinnedFree> host_;  // slots x (images, labels)
  std::array<Tensor, 2> device_;  // 2 x (images, labels), each stride_ bytes
  CudaStream copy_stream_;
  std::vector<CudaEvent> copied_;  // per host slot: its last copy to the device has read it
  std::array<CudaEvent, 2> read_;  // per device buffer: ctx's stream has read it into images, labels
  int turn_ = 0;                   // the device buffer the next batch goes into
};

}  // namespace

std::unique_ptr<DeviceStaging> make_device_staging(Context& ctx, size_t images_bytes, size_t labels_bytes,
                                                   int slots) {
  return std::make_unique<CudaStaging>(ctx, images_bytes, labels_bytes, slots);
}

}  // namespace glassbox
