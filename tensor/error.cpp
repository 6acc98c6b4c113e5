// tensor/error.cpp: formatting of library errors.
#include "tensor/error.h"

namespace glassbox {

LibraryError::LibraryError(std::string library, std::string expression, std::string location,
                           int status, std::string message)
    : Error(cat(library, " error ", status, " (", message, ") in ", expression, " at ", location)),
      library_(std::move(library)),
      expression_(std::move(expression)),
      status_(status) {}

void throw_library_error(std::string_view library, std::string_view expression,
                         std::string_view file, int line, int status, std::string_view message) {
  throw LibraryError(std::string(library), std::string(expression), cat(file, ":", line), status,
                     std::string(message));
}

}  // namespace glassbox
