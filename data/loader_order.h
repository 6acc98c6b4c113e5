// data/loader_order.h: the loader's reproducibility rule (data/loader.h) as
// functions. Epoch e's order is a function of (seed, e) and the augmentation
// of sample i in epoch e a function of (seed, e, i), nothing else: not the
// worker count, the prefetch depth or the timing. Tests, and anything that
// replays a run, compute the same values here.
//
//   key(seed, e)          = combine(mix64(seed), e)
//   order seed of e       = combine(key(seed, e), 2^64 - 1)   (no sample index is 2^64 - 1)
//   sample seed of (e, i) = combine(key(seed, e), i)
//   combine(k, v)         = mix64(k ^ mix64(v))
#pragma once

#include <cstdint>
#include <vector>

namespace glassbox::loader_order {

// SplitMix64's finaliser (Steele, Lea & Flood, 2014): a bijection on 64 bits
// that maps neighbouring inputs (epochs 3 and 4, samples 17 and 18) to
// unrelated outputs, so seeds made from small counters do not correlate.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
constexpr uint64_t combine(uint64_t key, uint64_t value) { return mix64(key ^ mix64(value)); }

constexpr uint64_t epoch_key(uint64_t seed, int64_t epoch) {
  return combine(mix64(seed), static_cast<uint64_t>(epoch));
}
// Seeds the std::mt19937_64 that shuffles epoch `epoch`.
constexpr uint64_t order_seed(uint64_t seed, int64_t epoch) { return combine(epoch_key(seed, epoch), ~uint64_t{0}); }
// Seeds the std::mt19937_64 that Dataset::load gets for sample `index` of epoch `epoch`.
constexpr uint64_t sample_seed(uint64_t seed, int64_t epoch, int64_t index) {
  return combine(epoch_key(seed, epoch), static_cast<uint64_t>(index));
}

// The sample indices epoch `epoch` visits: 0, 1, ..., n-1 without shuffle,
// else a Fisher-Yates shuffle of them driven by std::mt19937_64(order_seed)
// (Note [Our own Fisher-Yates], data/loader_order.cpp).
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle);

// Shard `shard` of `shards` of an epoch's order, for data-parallel training
// at `batch` samples per rank: the order is cut into groups of shards x batch
// (a partial last group is dropped) and the shard takes the shard-th batch
// of each group. The ranks' k-th batches together are then exactly the k-th
// batch of shards x batch that one process would take from the same order.
std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int batch, int shard, int shards);

}  // namespace glassbox::loader_order
