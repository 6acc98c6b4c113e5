// tools/cli/batch_list.cpp
#include "tools/cli/batch_list.h"

#include "tensor/error.h"
#include "tensor/parse.h"

namespace glassbox::cli {

std::vector<int> parse_batch_list(std::string_view flag, const std::string& text) {
  const std::vector<std::string_view> items = split_commas(text);
  std::vector<int> batches;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i] != "...") {
      batches.push_back(static_cast<int>(parse_int(flag, items[i], 1, kMaxInt)));
      continue;
    }
    // "a,b,...,c": a geometric run with the ratio b/a, up to c.
    if (batches.size() < 2 || i + 1 >= items.size() || items[i + 1] == "...") {
      throw ConfigError(cat(flag, " ", text, ": '...' needs two batches before it and the last one after it, "
                                             "as in 1,2,4,...,256"));
    }
    const int64_t a = batches[batches.size() - 2], b = batches.back();
    if (b <= a || b % a != 0) {
      throw ConfigError(cat(flag, " ", text, ": before '...', ", b, " must be a multiple of ", a,
                            " greater than it (the run multiplies by ", b, "/", a, ")"));
    }
    const int64_t last = parse_int(flag, items[i + 1], 1, kMaxInt);
    for (int64_t next = b * (b / a); next < last; next *= b / a) batches.push_back(static_cast<int>(next));
  }
  // Never empty: a non-empty text has at least one item, and "..." alone throws above.
  for (size_t i = 1; i < batches.size(); ++i) {
    if (batches[i] <= batches[i - 1]) {
      throw ConfigError(cat(flag, " ", text, ": batches must grow from left to right (", batches[i - 1], " then ",
                            batches[i], ")"));
    }
  }
  return batches;
}

}  // namespace glassbox::cli
