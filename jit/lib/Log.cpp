//===- Log.cpp - ATTNGEN_LOG logging --------------------------------------===//
#include "Log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace attngen;

LogLevel attngen::logLevel() {
  static const LogLevel level = [] {
    const char *value = std::getenv("ATTNGEN_LOG");
    if (!value || !*value || std::strcmp(value, "0") == 0)
      return LogLevel::Quiet;
    if (std::strcmp(value, "2") == 0 || std::strcmp(value, "debug") == 0)
      return LogLevel::Debug;
    return LogLevel::Info;
  }();
  return level;
}

void attngen::logLine(const std::string &message) {
  // One write() per line keeps lines whole when threads and processes log
  // at once.
  std::string line = "attngen: " + message + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}
