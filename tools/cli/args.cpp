// tools/cli/args.cpp
#include "tools/cli/args.h"

#include "tensor/error.h"
#include "tensor/parse.h"

namespace glassbox::cli {

Args::Args(const std::string& verb, const std::vector<FlagSpec>& flags, const std::vector<std::string>& words) {
  auto valid = [&] {
    std::string names;
    for (const FlagSpec& f : flags) names += (names.empty() ? "" : ", ") + f.name;
    return names.empty() ? std::string("none") : names;
  };
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.size() < 2 || word[0] != '-') {  // "-" alone is a positional, as in Unix tools
      positionals_.push_back(word);
      continue;
    }
    const size_t equals = word.find('=');
    const std::string name = word.substr(0, equals);
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& f : flags) {
      if (f.name == name) spec = &f;
    }
    if (spec == nullptr) throw ConfigError(cat("unknown flag '", name, "' for '", verb, "'; valid: ", valid()));
    std::string value;
    if (spec->value_name.empty()) {
      if (equals != std::string::npos) throw ConfigError(cat(name, " takes no value"));
    } else if (equals != std::string::npos) {
      value = word.substr(equals + 1);
    } else if (i + 1 < words.size()) {
      value = words[++i];
    } else {
      throw ConfigError(cat(name, " needs a value (", name, " ", spec->value_name, ")"));
    }
    if (!spec->value_name.empty() && value.empty()) {
      throw ConfigError(cat(name, " needs a value (", name, " ", spec->value_name, "), got an empty one"));
    }
    const auto [at, inserted] = values_.emplace(name, value);
    if (!inserted) {
      throw ConfigError(spec->value_name.empty()
                            ? cat(name, " is given twice; give it once")
                            : cat(name, " is given twice ('", at->second, "' and '", value, "'); give it once"));
    }
  }
}

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  const auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

int Args::int_in(const std::string& flag, int fallback, int min, int max) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  return static_cast<int>(parse_int(flag, it->second, min, max));
}

}  // namespace glassbox::cli
