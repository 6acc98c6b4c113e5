// tensor/error.cpp: formatting of library errors, and excerpts of file
// contents for messages.
#include "tensor/error.h"

#include <cstdio>
#include <new>

#include "tensor/grouped.h"

namespace glassbox {

LibraryError::LibraryError(std::string library, std::string expression, std::string location,
                           int status, std::string message)
    : Error(cat(library, " error ", status, " (", message, ") in ", expression, " at ", location)),
      library_(std::move(library)),
      expression_(std::move(expression)),
      status_(status) {}

LibraryError::LibraryError(std::string_view context, const LibraryError& cause)
    : Error(cat(context, cause.what())),
      library_(cause.library_),
      expression_(cause.expression_),
      status_(cause.status_) {}

void rethrow_with_context(const std::exception_ptr& thrown, std::string_view context) {
  try {
    std::rethrow_exception(thrown);
  } catch (const LibraryError& e) {
    throw LibraryError(context, e);
  } catch (const SizeError& e) {  // before ShapeError, which it is too
    throw SizeError(cat(context, e.what()));
  } catch (const ShapeError& e) {
    throw ShapeError(cat(context, e.what()));
  } catch (const ConfigError& e) {
    throw ConfigError(cat(context, e.what()));
  } catch (const NumericalError& e) {
    throw NumericalError(cat(context, e.what()));
  } catch (const DataError& e) {
    throw DataError(cat(context, e.what()));
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(cat(context, e.what()));
  } catch (const NotBuiltError& e) {
    throw NotBuiltError(cat(context, e.what()));
  } catch (const std::bad_alloc& e) {  // the host's memory: what max-batch and sweep catch as out of memory
    throw OutOfMemoryError(cat(context, "out of host memory (", e.what(), ")"));
  } catch (const std::exception& e) {
    throw Error(cat(context, e.what()));
  } catch (...) {
    throw Error(cat(context, "something that is not a std::exception was thrown"));
  }
}

void throw_library_error(std::string_view library, std::string_view expression,
                         std::string_view file, int line, int status, std::string_view message) {
  throw LibraryError(std::string(library), std::string(expression), cat(file, ":", line), status,
                     std::string(message));
}

std::string excerpt(std::string_view bytes, size_t max_chars) {
  std::string text;
  size_t used = 0;
  for (; used < bytes.size(); ++used) {
    const auto byte = static_cast<unsigned char>(bytes[used]);
    char piece[5] = {static_cast<char>(byte), '\0'};
    if (byte == '\n' || byte == '\r' || byte == '\t' || byte == '\\') {
      piece[0] = '\\';
      piece[1] = byte == '\n' ? 'n' : byte == '\r' ? 'r' : byte == '\t' ? 't' : '\\';
      piece[2] = '\0';
    } else if (byte < 0x20 || byte > 0x7e) {
      std::snprintf(piece, sizeof piece, "\\x%02x", static_cast<unsigned>(byte));
    }
    const std::string_view escaped(piece);
    if (text.size() + escaped.size() > max_chars) break;
    text += escaped;
  }
  if (used < bytes.size()) text += cat("... (", grouped(bytes.size()), " bytes)");
  return text;
}

}  // namespace glassbox
