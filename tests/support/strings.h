// tests/support/strings.h: small text checks shared by the tests.
#pragma once

#include <string>

namespace glassbox::testing {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace glassbox::testing
