// tools/cli/args.h: command-line arguments of one verb: positionals and the
// flags it declares. Anything else is a usage error naming the valid choices.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace glassbox::cli {

struct FlagSpec {
  std::string name;         // "--batch"
  std::string value_name;   // "N"; empty for a switch (--cudnn-search)
  std::string help;
};

class Args {
 public:
  // Throws ConfigError for an unknown flag or a missing value.
  Args(const std::string& verb, const std::vector<FlagSpec>& flags, const std::vector<std::string>& words);

  const std::vector<std::string>& positionals() const { return positionals_; }
  bool has(const std::string& flag) const { return values_.contains(flag); }
  std::string get(const std::string& flag, const std::string& fallback) const;
  // A positive integer, or `fallback` when absent; throws ConfigError otherwise.
  int positive_int(const std::string& flag, int fallback) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

}  // namespace glassbox::cli
