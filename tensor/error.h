// tensor/error.h: the exceptions Glassbox throws, and the one check-macro shape
// that every library's status codes go through.
//
// User-facing errors name the thing that is wrong ("conv3_1 (Conv2d): input has
// 128 channels, ..."); library errors carry the failed expression, file:line
// and the library's own message. Nothing in Glassbox aborts or exits on error.
#pragma once

#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace glassbox {

// Base of every Glassbox error: catch this to report anything the library throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A tensor shape does not fit what a layer or the graph expects.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A shape, or a cost computed from shapes, too large to represent: more
// elements than a tensor may have (kMaxElements, tensor/shape.h) or a count
// past 64 bits. Layers name themselves in it; programs report it as a batch
// that is too large.
class SizeError : public ShapeError {
 public:
  using ShapeError::ShapeError;
};

// Bad configuration: an unknown name, an invalid option, an unconnected graph.
// Programs report it as a usage error (exit code 2).
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A step produced a loss that is not a finite number (graph/finite_check.h).
class NumericalError : public Error {
 public:
  using Error::Error;
};

// A file is not what it should be: wrong magic, truncated, inconsistent
// counts, not a JPEG, a safetensors header that is not the format's. The
// message names the file and, where it applies, the byte offset and what was
// expected there: "/data/train-images-idx3-ubyte.gz: truncated at byte
// 4,718,608 of the decompressed data: 60,000 images of 28x28 need 47,040,016 bytes".
class DataError : public Error {
 public:
  using Error::Error;
};

// An allocation failed: the message names the device, size, category and usage.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// A CUDA path was asked for in a build made without CUDA.
class NotBuiltError : public Error {
 public:
  using Error::Error;
};

// A call into CUDA, cuDNN, cuBLAS or NCCL returned an error status.
class LibraryError : public Error {
 public:
  LibraryError(std::string library, std::string expression, std::string location, int status,
               std::string message);
  // The same error, its message after `context` ("conv1 (Conv2d) forward: ").
  LibraryError(std::string_view context, const LibraryError& cause);
  const std::string& library() const { return library_; }
  const std::string& expression() const { return expression_; }
  int status() const { return status_; }

 private:
  std::string library_;
  std::string expression_;
  int status_;
};

// Concatenates anything printable into one string: cat("conv1: ", 3, " channels").
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// Bytes from a file, fit to quote in a one-line message: printable ASCII as
// it is; \n, \r, \t and \\ escaped; every other byte (control, non-ASCII) as
// \xNN. Longer than `max_chars` once escaped, it is cut there and ends "..."
// with the whole length: `abc... (1,048,576 bytes)`. A file's contents are
// never echoed raw: a control byte could rewrite the terminal, a megabyte of
// text would bury the message.
std::string excerpt(std::string_view bytes, size_t max_chars = 40);

// Throws what `thrown` holds again, its message after `context` ("while
// capturing a CUDA graph: "), as the same kind of Glassbox error (a caller's
// catch of OutOfMemoryError or ConfigError, and a program's exit code, still
// see it as that); std::bad_alloc as OutOfMemoryError, any other
// std::exception as Error, and anything else as Error saying so.
[[noreturn]] void rethrow_with_context(const std::exception_ptr& thrown, std::string_view context);

[[noreturn]] void throw_library_error(std::string_view library, std::string_view expression,
                                      std::string_view file, int line, int status,
                                      std::string_view message);

}  // namespace glassbox

// Evaluates `expr` once; if it is not `ok`, throws LibraryError with the
// expression text, file:line and the library's message (`to_string(status)`).
// The per-library macros (CUDA_CHECK, CUDNN_CHECK, ...) live in
// tensor/checks_cuda.h and are this macro with their arguments filled in.
#define GLASSBOX_CHECK_STATUS(expr, ok, to_string, library)                                \
  do {                                                                                     \
    const auto glassbox_status_ = (expr);                                                  \
    if (glassbox_status_ != (ok)) {                                                        \
      ::glassbox::throw_library_error(library, #expr, __FILE__, __LINE__,                  \
                                      static_cast<int>(glassbox_status_),                  \
                                      to_string(glassbox_status_));                        \
    }                                                                                      \
  } while (0)
