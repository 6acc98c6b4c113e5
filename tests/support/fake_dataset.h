// tests/support/fake_dataset.h: a Dataset whose samples say who they are,
// for the loader's tests (tests/test_loader*.cpp).
//
// Sample i is C*H*W = 2*3*3 floats: every pixel i + 1 (so zero padding is
// told apart from sample 0), except pixel 1, which holds the first draw of
// the RNG load() was given, (rng() >> 40): a 24-bit integer, exact in a float.
// Its label is i % classes. Chosen indices can fail: SampleError (an
// unreadable file), DataError (a broken dataset) or a label out of range;
// `delay` makes every load slow.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "data/loader.h"
#include "tensor/copy.h"

namespace glassbox::testing {

struct FakeDatasetOptions {
  int64_t size = 20;
  int classes = 7;
  std::set<int64_t> unreadable;  // SampleError("/fake/<i>.png", "not a PNG")
  int64_t broken = -1;           // DataError("/fake/<i>.png: truncated at byte 12")
  int64_t bad_label = -1;        // returns `classes`
  int64_t foreign = -1;          // std::runtime_error("the disk is on fire"), as a program's own Dataset may throw
  int64_t not_an_exception = -1; // throws the int 42
  std::chrono::milliseconds delay{0};
};

class FakeDataset final : public Dataset {
 public:
  explicit FakeDataset(FakeDatasetOptions options)
      : options_(std::move(options)), loads_(static_cast<size_t>(options_.size)) {}

  std::string describe() const override { return cat("fake (", options_.size, " samples)"); }
  int64_t size() const override { return options_.size; }
  int classes() const override { return options_.classes; }
  Shape sample_shape() const override { return Shape{2, 3, 3}; }

  int load(int64_t index, std::span<float> pixels, SampleMode, std::mt19937_64& rng) const override {
    ++loads_[static_cast<size_t>(index)];
    const int now = ++loading_;
    for (int seen = most_at_once_.load(); now > seen && !most_at_once_.compare_exchange_weak(seen, now);) {
    }
    if (options_.delay.count() > 0) std::this_thread::sleep_for(options_.delay);
    --loading_;
    if (options_.unreadable.count(index)) throw SampleError(cat("/fake/", index, ".png"), "not a PNG");
    if (index == options_.broken) throw DataError(cat("/fake/", index, ".png: truncated at byte 12"));
    if (index == options_.foreign) throw std::runtime_error("the disk is on fire");
    if (index == options_.not_an_exception) throw 42;
    for (float& p : pixels) p = static_cast<float>(index + 1);
    pixels[1] = static_cast<float>(rng() >> 40);
    if (index == options_.bad_label) return options_.classes;
    return static_cast<int>(index % options_.classes);
  }

  // How often load() was called for `index`.
  int loads(int64_t index) const { return loads_[static_cast<size_t>(index)].load(); }
  // The most load() calls that were running at the same time.
  int most_at_once() const { return most_at_once_.load(); }

 private:
  FakeDatasetOptions options_;
  mutable std::vector<std::atomic<int>> loads_;
  mutable std::atomic<int> loading_{0};
  mutable std::atomic<int> most_at_once_{0};
};

inline constexpr int64_t kFakeSampleNumel = 18;

// One batch as next() gave it.
struct LoadedBatch {
  int count = 0;
  std::vector<float> images;
  std::vector<int> labels;
  friend bool operator==(const LoadedBatch&, const LoadedBatch&) = default;
  // Sample `row`'s index (pixel 0 is index + 1; 0 in padding).
  int64_t index(int row) const { return static_cast<int64_t>(images[static_cast<size_t>(row) * kFakeSampleNumel]) - 1; }
  float draw(int row) const { return images[static_cast<size_t>(row) * kFakeSampleNumel + 1]; }
};

// Tensors of the loader's batch on ctx's device.
struct BatchTensors {
  BatchTensors(Context& ctx, int batch)
      : images(ctx.allocate(Shape{batch, 2, 3, 3}, DType::kFloat32, MemoryCategory::kData)),
        labels(ctx.allocate(Shape{batch}, DType::kInt32, MemoryCategory::kData)) {}
  Tensor images, labels;
};

// Starts `epoch` and takes every batch of it (or `limit` batches).
inline std::vector<LoadedBatch> load_epoch(Context& ctx, Loader& loader, int epoch, int limit = -1) {
  BatchTensors tensors(ctx, loader.options().batch);
  loader.start_epoch(epoch);
  std::vector<LoadedBatch> batches;
  while (limit < 0 || static_cast<int>(batches.size()) < limit) {
    const int count = loader.next(tensors.images, tensors.labels);
    if (count == 0) break;
    batches.push_back({count, to_vector<float>(ctx, tensors.images), to_vector<int>(ctx, tensors.labels)});
  }
  return batches;
}

// The sample indices of an epoch's real rows, in order.
inline std::vector<int64_t> indices_of(const std::vector<LoadedBatch>& batches) {
  std::vector<int64_t> indices;
  for (const LoadedBatch& b : batches) {
    for (int row = 0; row < b.count; ++row) indices.push_back(b.index(row));
  }
  return indices;
}

}  // namespace glassbox::testing
