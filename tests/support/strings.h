// tests/support/strings.h: small text checks shared by the tests.
#pragma once

#include <string>
#include <vector>

namespace glassbox::testing {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Regular expressions (ECMAScript, as std::regex reads them), compiled in
// strings.cpp alone: <regex> costs each file that instantiates it seconds of
// compiling (8 s under clang's sanitizers for one regex_search), and the
// tests only search printed text with it.
// Whether some part of `text` matches `pattern`.
bool contains_match(const std::string& text, const std::string& pattern);
// Whether all of `text` matches `pattern`.
bool matches_whole(const std::string& text, const std::string& pattern);
// The first match of `pattern` in `text`: the whole match, then each group
// (an unmatched group is empty); no strings where nothing matches.
std::vector<std::string> first_match(const std::string& text, const std::string& pattern);

}  // namespace glassbox::testing
