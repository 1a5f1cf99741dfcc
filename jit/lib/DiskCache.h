//===- DiskCache.h - Compiled kernels on disk -------------------*- C++ -*-===//
//
// One file per kernel, <dir>/<xxh3 of the key>.kernel:
//
//   attngen-kernel-cache 1\n
//   key <bytes>\n<key>\n
//   ptx <bytes>\n<ptx>\n
//   metadata <bytes>\n<json>\n
//   xxh3 <16 hex digits over key, ptx and metadata>\n
//
// Entries are written to a unique temporary file and renamed into place, so
// a reader sees a whole entry or none. A reader opens only a regular file of
// at most 64 MiB (never a symbolic link, FIFO or device) and checks the
// header, every length, the checksum and that the stored key is the one it
// asked for (the key names the compiler build, so an entry from another build
// is stale); anything else is reported corrupt and the caller rebuilds it. A per-key
// lock file (<entry>.lock, kept; a POSIX fcntl record lock) lets one process
// compile or repair an entry while the others wait for it; a wait of more
// than a few seconds is announced on stderr.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNGEN_JIT_DISKCACHE_H
#define ATTNGEN_JIT_DISKCACHE_H

#include "Compile.h"

#include <chrono>
#include <string>

namespace attngen {

class DiskCache {
public:
  /// `dir` empty: disabled (every lookup misses, writes do nothing).
  explicit DiskCache(std::string dir) : folder(std::move(dir)) {}

  bool enabled() const { return !folder.empty(); }
  const std::string &dir() const { return folder; }
  std::string entryPath(const std::string &key) const;

  enum class Lookup { Hit, Miss, Corrupt };
  /// Reads the entry of `key`; on Corrupt, `why` says what was wrong.
  Lookup read(const std::string &key, CompiledKernel &out, std::string &why);
  /// Deletes the entry of `key` (a corrupt one, before it is rebuilt).
  void remove(const std::string &key);

  /// Writes the entry atomically. Failure (full disk, read-only folder) is
  /// not an error for the caller: it is logged and the kernel stays usable.
  bool write(const CompiledKernel &kernel);

  /// An exclusive lock on <entry>.lock held while compiling `key`, so that
  /// other processes wait for this one's entry instead of compiling it
  /// again. Gives up after `timeout` (the caller then compiles anyway).
  class KeyLock {
  public:
    KeyLock() = default;
    KeyLock(KeyLock &&other) noexcept : fd(other.fd) { other.fd = -1; }
    KeyLock &operator=(KeyLock &&) = delete;
    ~KeyLock();
    bool held() const { return fd >= 0; }

  private:
    friend class DiskCache;
    int fd = -1;
  };
  KeyLock lock(const std::string &key, std::chrono::milliseconds timeout);

  /// Serialises / parses the entry format above (exposed for tests).
  static std::string serialize(const CompiledKernel &kernel);
  static bool parse(const std::string &bytes, const std::string &expectedKey,
                    CompiledKernel &out, std::string &why);

private:
  std::string folder;
};

/// ATTNGEN_CACHE_DIR, else $XDG_CACHE_HOME/attngen, else
/// $HOME/.cache/attngen, else "" (no disk cache).
std::string defaultCacheDir();

} // namespace attngen

#endif // ATTNGEN_JIT_DISKCACHE_H
