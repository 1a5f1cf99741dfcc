//===- Error.cpp - Thread-local error messages, status names ---------------===//

#include "Error.h"

#include <cstdarg>
#include <cstdio>
#include <exception>

namespace attnrt {

/// The last failure's message of the calling thread.
static thread_local std::string lastError;

/// vsnprintf into a std::string, sized with a first measuring pass.
static std::string vformat(const char *fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int length = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (length <= 0)
    return std::string();
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(&text[0], text.size(), fmt, args);
  text.resize(static_cast<size_t>(length));
  return text;
}

std::string format(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string text = vformat(fmt, args);
  va_end(args);
  return text;
}

attnrt_status fail(attnrt_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string text = vformat(fmt, args);
  va_end(args);
  return failWith(status, std::move(text));
}

attnrt_status failWith(attnrt_status status, std::string message) {
  try {
    lastError = std::move(message);
  } catch (...) {
    // Out of memory while recording the message: keep the status at least.
  }
  return status;
}

} // namespace attnrt

extern "C" {

const char *attnrt_last_error(void) { return attnrt::lastError.c_str(); }

const char *attnrt_status_name(attnrt_status status) {
  switch (status) {
  case ATTNRT_OK:
    return "ATTNRT_OK";
  case ATTNRT_ERROR_INVALID_ARGUMENT:
    return "ATTNRT_ERROR_INVALID_ARGUMENT";
  case ATTNRT_ERROR_INVALID_METADATA:
    return "ATTNRT_ERROR_INVALID_METADATA";
  case ATTNRT_ERROR_NO_DRIVER:
    return "ATTNRT_ERROR_NO_DRIVER";
  case ATTNRT_ERROR_NO_DEVICE:
    return "ATTNRT_ERROR_NO_DEVICE";
  case ATTNRT_ERROR_UNSUPPORTED_DEVICE:
    return "ATTNRT_ERROR_UNSUPPORTED_DEVICE";
  case ATTNRT_ERROR_CUDA:
    return "ATTNRT_ERROR_CUDA";
  case ATTNRT_ERROR_INVALID_PTX:
    return "ATTNRT_ERROR_INVALID_PTX";
  case ATTNRT_ERROR_IO:
    return "ATTNRT_ERROR_IO";
  case ATTNRT_ERROR_INTERNAL:
    return "ATTNRT_ERROR_INTERNAL";
  }
  return "ATTNRT_UNKNOWN";
}

int attnrt_abi_version(void) { return ATTNRT_ABI_VERSION; }

size_t attnrt_sizeof_forward_args(void) { return sizeof(attnrt_forward_args); }

size_t attnrt_sizeof_kernel_info(void) { return sizeof(attnrt_kernel_info); }

} // extern "C"
