// tensor/json_error.h: nlohmann-json's messages, fit to quote in ours.
#pragma once

#include <string>
#include <string_view>

namespace glassbox {

// A message of nlohmann-json's (an exception's what()) without its
// "[json.exception.parse_error.101] " prefix, and with the bytes it quotes
// from the input ("last read: '...'", "parsing '...'") cut to an excerpt
// (tensor/error.h): a token can be megabytes long.
std::string json_error_reason(std::string_view what);

}  // namespace glassbox
