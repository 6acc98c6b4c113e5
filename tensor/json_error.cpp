// tensor/json_error.cpp
#include "tensor/json_error.h"

#include "tensor/error.h"

namespace glassbox {

std::string json_error_reason(std::string_view what) {
  if (const size_t end = what.find("] "); end != std::string_view::npos) what.remove_prefix(end + 2);
  for (const std::string_view marker : {"last read: '", "parsing '"}) {
    const size_t begin = what.find(marker);
    if (begin == std::string_view::npos) continue;
    const size_t from = begin + marker.size();
    size_t to = what.rfind("'; expected ");  // nlohmann's words follow the token
    if (to == std::string_view::npos || to < from) to = what.rfind('\'');
    if (to == std::string_view::npos || to < from) continue;
    return cat(what.substr(0, from), excerpt(what.substr(from, to - from)), what.substr(to));
  }
  return std::string(what);
}

}  // namespace glassbox
