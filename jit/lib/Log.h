//===- Log.h - ATTNGEN_LOG logging ------------------------------*- C++ -*-===//
#ifndef ATTNGEN_JIT_LOG_H
#define ATTNGEN_JIT_LOG_H

#include <fmt/format.h>

#include <chrono>
#include <string>

namespace attngen {

/// ATTNGEN_LOG: 0 (off: not even the progress of slow work), unset (quiet:
/// only the progress of slow work, warnings), 1 (cache events, timings), 2
/// (also the compiler's stages). Read once per process. Warnings (a corrupt
/// cache entry, a wait for another process's lock) are always printed.
enum class LogLevel { Off = -1, Quiet = 0, Info = 1, Debug = 2 };
LogLevel logLevel();

/// Whether work that took `seconds` deserves a progress note at the default
/// level: over `threshold`, unless ATTNGEN_LOG=0; always with ATTNGEN_LOG >= 1.
bool reportSlow(double seconds, double threshold);

/// Writes "attngen: <message>\n" to stderr in one write.
void logLine(const std::string &message);

template <typename... Args>
void logAt(LogLevel level, fmt::format_string<Args...> format, Args &&...args) {
  if (logLevel() >= level)
    logLine(fmt::format(format, std::forward<Args>(args)...));
}

/// Wall time since construction, in seconds.
class Stopwatch {
public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }

private:
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
};

} // namespace attngen

#endif // ATTNGEN_JIT_LOG_H
