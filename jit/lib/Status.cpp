//===- Status.cpp - Errors of the JIT C API -------------------------------===//
#include "Status.h"

using namespace attngen;

static thread_local std::string lastError;

attngen_status attngen::fail(attngen_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

attngen_status attngen::failFromRuntime(attnrt_status status) {
  lastError = attnrt_last_error();
  return static_cast<attngen_status>(status);
}

extern "C" const char *attngen_last_error(void) { return lastError.c_str(); }

extern "C" const char *attngen_status_name(attngen_status status) {
  switch (status) {
#define ATTNGEN_STATUS_NAME(name)                                             \
  case name:                                                                   \
    return #name;
    ATTNGEN_STATUS_NAME(ATTNGEN_OK)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_INVALID_ARGUMENT)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_INVALID_METADATA)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_NO_DRIVER)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_NO_DEVICE)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_UNSUPPORTED_DEVICE)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_CUDA)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_INVALID_PTX)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_IO)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_INTERNAL)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_INVALID_SPEC)
    ATTNGEN_STATUS_NAME(ATTNGEN_ERROR_COMPILE)
#undef ATTNGEN_STATUS_NAME
  }
  return "ATTNGEN_UNKNOWN";
}
