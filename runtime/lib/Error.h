//===- Error.h - Thread-local error messages --------------------*- C++ -*-===//
//
// Every failing runtime call records one full sentence (what is wrong, how to
// fix it) in a thread-local slot that attnrt_last_error() returns.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_LIB_ERROR_H
#define ATTNRT_LIB_ERROR_H

#include "attnrt/attnrt.h"

#include <exception>
#include <string>

namespace attnrt {

/// printf-style formatting into a std::string (no length limit).
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/// Records `message` as this thread's last error and returns `status`, so a
/// failing path reads `return fail(ATTNRT_ERROR_..., "...", ...);`.
attnrt_status fail(attnrt_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// Same as fail() for an already formatted message.
attnrt_status failWith(attnrt_status status, std::string message);

/// Runs `body` (returning attnrt_status) and turns any C++ exception into
/// ATTNRT_ERROR_INTERNAL: exceptions must never cross the C API.
template <typename Body> attnrt_status guardApi(const char *function, Body &&body) {
  try {
    return body();
  } catch (const std::exception &e) {
    return fail(ATTNRT_ERROR_INTERNAL, "%s failed unexpectedly: %s; this is a runtime bug or the host is out of memory",
                function, e.what());
  } catch (...) {
    return fail(ATTNRT_ERROR_INTERNAL, "%s failed with an unknown exception; this is a runtime bug", function);
  }
}

} // namespace attnrt

#endif // ATTNRT_LIB_ERROR_H
