// data/loader_order.cpp: the order of an epoch (data/loader_order.h).
#include "data/loader_order.h"

#include <numeric>
#include <random>
#include <utility>

namespace glassbox::loader_order {

// Note [Our own Fisher-Yates]: the standard fixes std::mt19937_64's output
// but not the algorithms of std::shuffle or std::uniform_int_distribution, and
// libstdc++ and libc++ differ: the same seed would give another order with
// another standard library. So the shuffle is written out: Fisher-Yates
// (Knuth's Algorithm P), each j drawn uniformly in [0, i] by rejection, which
// avoids the bias of a plain `draw % (i + 1)`.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle || n < 2) return order;
  std::mt19937_64 rng(order_seed(seed, epoch));
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;  // a multiple of bound: [0, limit) maps evenly
    uint64_t draw = rng();
    while (draw >= limit) draw = rng();
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(draw % bound)]);
  }
  return order;
}

std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int batch, int shard, int shards) {
  const auto group = static_cast<size_t>(batch) * static_cast<size_t>(shards);
  std::vector<int64_t> mine;
  for (size_t start = 0; start + group <= order.size(); start += group) {
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(start + static_cast<size_t>(shard) * batch);
    mine.insert(mine.end(), first, first + batch);
  }
  return mine;
}

}  // namespace glassbox::loader_order
