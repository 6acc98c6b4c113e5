// tools/cli/batch_list.h: a list of batch sizes as a user writes it:
// "1,2,4,...,256" (a geometric run: each the one before times 2, up to 256),
// "8,16,...,64", or plainly "1,3,8". Throws ConfigError naming the flag for an
// entry that is not a batch, a "..." without two entries before it and one
// after, or a list that does not grow.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace glassbox::cli {

std::vector<int> parse_batch_list(std::string_view flag, const std::string& text);

}  // namespace glassbox::cli
