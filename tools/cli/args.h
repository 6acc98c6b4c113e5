// tools/cli/args.h: command-line arguments of one verb: positionals and the
// flags it declares. Anything else is a usage error (ConfigError) naming the
// flag and the valid choices: an unknown flag, a flag given twice, a missing
// or empty value, a number that is not one or out of range.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/compile_flags.h"

namespace glassbox::cli {

using glassbox::FlagSpec;  // graph/compile_flags.h: the flag table's row, shared with bench_nets

class Args {
 public:
  // Accepts "--flag value", "--flag=value" and switches. Throws ConfigError.
  Args(const std::string& verb, const std::vector<FlagSpec>& flags, const std::vector<std::string>& words);

  const std::vector<std::string>& positionals() const { return positionals_; }
  bool has(const std::string& flag) const { return values_.contains(flag); }
  std::string get(const std::string& flag, const std::string& fallback) const;
  // Every flag given, by name ("" for a switch): what compile_options_from_flags reads.
  const std::map<std::string, std::string>& values() const { return values_; }
  // An integer in [min, max], or `fallback` when the flag is absent; throws
  // ConfigError naming the flag, the range and the value otherwise.
  int int_in(const std::string& flag, int fallback, int min, int max) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

}  // namespace glassbox::cli
