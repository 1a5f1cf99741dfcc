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
    if (!value || !*value)
      return LogLevel::Quiet;
    if (std::strcmp(value, "0") == 0)
      return LogLevel::Off;
    if (std::strcmp(value, "2") == 0 || std::strcmp(value, "debug") == 0)
      return LogLevel::Debug;
    return LogLevel::Info;
  }();
  return level;
}

bool attngen::reportSlow(double seconds, double threshold) {
  LogLevel level = logLevel();
  return level >= LogLevel::Info || (level == LogLevel::Quiet && seconds > threshold);
}

void attngen::logLine(const std::string &message) {
  // One write() per line keeps lines whole when threads and processes log
  // at once.
  std::string line = "attngen: " + message + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}
