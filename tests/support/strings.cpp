// tests/support/strings.cpp
#include "tests/support/strings.h"

#include <regex>

namespace glassbox::testing {

bool contains_match(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

bool matches_whole(const std::string& text, const std::string& pattern) {
  return std::regex_match(text, std::regex(pattern));
}

std::vector<std::string> first_match(const std::string& text, const std::string& pattern) {
  std::smatch found;
  if (!std::regex_search(text, found, std::regex(pattern))) return {};
  std::vector<std::string> groups;
  for (const auto& group : found) groups.push_back(group.str());
  return groups;
}

}  // namespace glassbox::testing
