// tools/cli/args.cpp
#include "tools/cli/args.h"

#include "tensor/error.h"

namespace glassbox::cli {

Args::Args(const std::string& verb, const std::vector<FlagSpec>& flags, const std::vector<std::string>& words) {
  auto valid = [&] {
    std::string names;
    for (const FlagSpec& f : flags) names += (names.empty() ? "" : ", ") + f.name;
    return names;
  };
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (!word.starts_with("--")) {
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
    if (spec->value_name.empty()) {
      if (equals != std::string::npos) throw ConfigError(cat(name, " takes no value"));
      values_[name] = "";
    } else if (equals != std::string::npos) {
      values_[name] = word.substr(equals + 1);
    } else if (i + 1 < words.size()) {
      values_[name] = words[++i];
    } else {
      throw ConfigError(cat(name, " needs a value (", name, " ", spec->value_name, ")"));
    }
  }
}

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  const auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

int Args::positive_int(const std::string& flag, int fallback) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos || std::stoi(text) <= 0) {
    throw ConfigError(cat(flag, " must be a positive integer, got '", text, "'"));
  }
  return std::stoi(text);
}

}  // namespace glassbox::cli
