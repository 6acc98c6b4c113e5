// data/synthetic.h: synthetic data, no files. Images are drawn from U(-1, 1)
// with a fixed seed (never zeros, which would hide unwritten outputs and can
// run faster than real data); labels are n % classes; a language model's
// tokens are drawn uniformly from its vocabulary (its `classes`).
//   fill_synthetic_batch: one batch, made once and left on the device (the benchmarks)
//   SyntheticDataset:     a Dataset whose sample n depends only on (seed, n)
#pragma once

#include <cstdint>
#include <string>

#include "data/dataset.h"
#include "graph/graph.h"

namespace glassbox {

// Fills every input of the graph (compile it first): float32 inputs (the
// images) from U(-1, 1), "labels" with n % classes, any other int32 input
// (a language model's tokens) with ids from U{0, ..., classes - 1}.
void fill_synthetic_batch(Context& ctx, const Graph& graph, int classes, uint64_t seed = 42);

struct SyntheticOptions {
  int64_t size = 1024;  // samples
  int classes = 10;
  Shape sample;         // (C, H, W), or any shape: load() writes sample.numel() values
  uint64_t seed = 1;
  std::string name = "synthetic";  // for describe()
};

class SyntheticDataset final : public Dataset {
 public:
  // Throws ConfigError for a size or class count below 1.
  explicit SyntheticDataset(SyntheticOptions options);

  std::string describe() const override;
  int64_t size() const override { return options_.size; }
  int classes() const override { return options_.classes; }
  Shape sample_shape() const override { return options_.sample; }
  // The same values in both modes, whatever `rng` holds.
  int load(int64_t index, std::span<float> pixels, SampleMode mode, std::mt19937_64& rng) const override;

 private:
  SyntheticOptions options_;
};

}  // namespace glassbox
