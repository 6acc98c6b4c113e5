// tools/cli/network_arg.h: the one network a verb works on.
#pragma once

#include "nets/registry.h"
#include "tools/cli/args.h"

namespace glassbox::cli {

// Exactly one positional, a known network or an MLP spec; ConfigError
// otherwise, listing the names.
inline NetSpec network_arg(const Args& args, const std::string& verb) {
  if (args.positionals().size() != 1) {
    throw ConfigError(cat(verb, " takes one network name (got ", args.positionals().size(), "); valid: ", net_names()));
  }
  return find_net(args.positionals()[0]);
}

}  // namespace glassbox::cli
