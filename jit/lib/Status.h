//===- Status.h - Errors of the JIT C API -----------------------*- C++ -*-===//
//
// Like the runtime, every failing path records one sentence in a
// thread-local slot (attngen_last_error) and returns an attngen_status.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNGEN_JIT_STATUS_H
#define ATTNGEN_JIT_STATUS_H

#include "attngen/attngen.h"

#include <fmt/format.h>

#include <exception>
#include <string>

namespace attngen {

/// Records `message` as this thread's last error and returns `status`.
attngen_status fail(attngen_status status, std::string message);

template <typename... Args>
attngen_status fail(attngen_status status, fmt::format_string<Args...> format,
                    Args &&...args) {
  return fail(status, fmt::format(format, std::forward<Args>(args)...));
}

/// Passes a failed runtime call on: same status value, attnrt's message.
attngen_status failFromRuntime(attnrt_status status);

/// Runs `body` and turns a C++ exception into ATTNGEN_ERROR_INTERNAL: no
/// exception may cross the C API.
template <typename Body>
attngen_status guardApi(const char *function, Body &&body) {
  try {
    return body();
  } catch (const std::exception &e) {
    return fail(ATTNGEN_ERROR_INTERNAL,
                "{} failed unexpectedly: {}; this is an attngen bug or the "
                "host is out of memory",
                function, e.what());
  } catch (...) {
    return fail(ATTNGEN_ERROR_INTERNAL,
                "{} failed with an unknown exception; this is an attngen bug",
                function);
  }
}

} // namespace attngen

#endif // ATTNGEN_JIT_STATUS_H
