//===- DiskCache.cpp - Compiled kernels on disk ---------------------------===//
#include "DiskCache.h"
#include "Log.h"

#include "attnrt/attnrt.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace attngen;
namespace fs = llvm::sys::fs;

static constexpr llvm::StringLiteral kMagic = "attngen-kernel-cache 1\n";

/// Largest entry a reader accepts: real entries are well under 2 MiB of PTX
/// and metadata; anything bigger is not one of ours and is not read.
static constexpr off_t kMaxEntryBytes = off_t(64) << 20;

/// Waiting for another process's lock is announced after this long (even
/// without ATTNGEN_LOG), so a long wait never looks like a hang.
static constexpr std::chrono::milliseconds kLockNoticeAfter{3000};

static std::string checksum(const CompiledKernel &kernel) {
  std::string all = kernel.key + '\0' + kernel.ptx + '\0' + kernel.metadata;
  return fmt::format("{:016x}", llvm::xxh3_64bits(all));
}

std::string attngen::defaultCacheDir() {
  if (const char *dir = std::getenv("ATTNGEN_CACHE_DIR"); dir && *dir)
    return dir;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    llvm::sys::path::append(path, xdg, "attngen");
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(path, home, ".cache", "attngen");
  return std::string(path);
}

std::string DiskCache::entryPath(const std::string &key) const {
  llvm::SmallString<256> path(folder);
  llvm::sys::path::append(
      path, fmt::format("{:016x}.kernel", llvm::xxh3_64bits(key)));
  return std::string(path);
}

std::string DiskCache::serialize(const CompiledKernel &kernel) {
  std::string out(kMagic);
  auto field = [&](llvm::StringRef name, const std::string &value) {
    out += fmt::format("{} {}\n", name.str(), value.size());
    out += value;
    out += '\n';
  };
  field("key", kernel.key);
  field("ptx", kernel.ptx);
  field("metadata", kernel.metadata);
  out += "xxh3 " + checksum(kernel) + "\n";
  return out;
}

bool DiskCache::parse(const std::string &bytes, const std::string &expectedKey,
                      CompiledKernel &out, std::string &why) {
  llvm::StringRef rest(bytes);
  if (!rest.consume_front(kMagic)) {
    why = "it does not start with the attngen cache header";
    return false;
  }
  auto field = [&](llvm::StringRef name, std::string &value) {
    if (!rest.consume_front(name) || !rest.consume_front(" ")) {
      why = fmt::format("field '{}' is missing", name.str());
      return false;
    }
    size_t size = 0;
    if (rest.consumeInteger(10, size) || !rest.consume_front("\n") ||
        size > rest.size() || rest.size() - size < 1 || rest[size] != '\n') {
      why = fmt::format("field '{}' has a bad length (truncated file?)",
                        name.str());
      return false;
    }
    value = rest.take_front(size).str();
    rest = rest.drop_front(size + 1);
    return true;
  };
  CompiledKernel kernel;
  if (!field("key", kernel.key) || !field("ptx", kernel.ptx) ||
      !field("metadata", kernel.metadata))
    return false;
  std::string sum;
  if (!rest.consume_front("xxh3 ") || rest.size() != 17 || rest.back() != '\n') {
    why = "the checksum line is missing or malformed";
    return false;
  }
  sum = rest.drop_back().str();
  if (sum != checksum(kernel)) {
    why = "its checksum does not match its contents";
    return false;
  }
  if (kernel.key != expectedKey) {
    why = "it holds another key (another compiler build or a hash clash)";
    return false;
  }
  // The metadata must still be what this runtime reads.
  attnrt_kernel_info info;
  if (attnrt_metadata_parse(kernel.metadata.c_str(), &info) != ATTNRT_OK) {
    why = fmt::format("its metadata is invalid: {}", attnrt_last_error());
    return false;
  }
  kernel.kernelName = info.kernel;
  kernel.arch = info.arch;
  out = std::move(kernel);
  return true;
}

/// Reads the entry at `path` if it is a regular file of at most
/// kMaxEntryBytes. Never follows a symbolic link and never blocks on a FIFO
/// or device: O_NOFOLLOW | O_NONBLOCK, then fstat on what was opened.
static DiskCache::Lookup readEntryFile(const std::string &path,
                                       std::string &bytes, std::string &why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return DiskCache::Lookup::Miss;
    why = errno == ELOOP ? std::string("it is a symbolic link, not a file")
                         : fmt::format("it cannot be opened: {}", std::strerror(errno));
    return DiskCache::Lookup::Corrupt;
  }
  llvm::scope_exit closeFd([&] { ::close(fd); });
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    why = fmt::format("fstat failed: {}", std::strerror(errno));
    return DiskCache::Lookup::Corrupt;
  }
  if (!S_ISREG(st.st_mode)) {
    why = "it is not a regular file (a FIFO, device, socket or folder)";
    return DiskCache::Lookup::Corrupt;
  }
  if (st.st_size > kMaxEntryBytes) {
    why = fmt::format("it is {} bytes, more than the {} MiB an entry may have",
                      static_cast<long long>(st.st_size), kMaxEntryBytes >> 20);
    return DiskCache::Lookup::Corrupt;
  }
  // Read one byte past the size seen by fstat, so a file that grew since is
  // seen as such (and then fails the length checks) instead of truncated.
  bytes.resize(static_cast<size_t>(st.st_size) + 1);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      why = fmt::format("reading it failed: {}", std::strerror(errno));
      return DiskCache::Lookup::Corrupt;
    }
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return DiskCache::Lookup::Hit;
}

DiskCache::Lookup DiskCache::read(const std::string &key, CompiledKernel &out,
                                  std::string &why) {
  if (!enabled())
    return Lookup::Miss;
  std::string bytes;
  if (Lookup lookup = readEntryFile(entryPath(key), bytes, why); lookup != Lookup::Hit)
    return lookup;
  if (parse(bytes, key, out, why))
    return Lookup::Hit;
  return Lookup::Corrupt;
}

void DiskCache::remove(const std::string &key) {
  if (enabled())
    fs::remove(entryPath(key));
}

bool DiskCache::write(const CompiledKernel &kernel) {
  if (!enabled())
    return false;
  if (std::error_code ec = fs::create_directories(folder)) {
    logLine(fmt::format("cannot create the cache folder '{}': {}; kernels "
                        "are not cached on disk (set ATTNGEN_CACHE_DIR)",
                        folder, ec.message()));
    return false;
  }
  std::string path = entryPath(kernel.key);
  int fd = -1;
  llvm::SmallString<256> temp;
  if (std::error_code ec =
          fs::createUniqueFile(path + ".%%%%%%%%.tmp", fd, temp)) {
    logLine(fmt::format("cannot write to the cache folder '{}': {}", folder,
                        ec.message()));
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << serialize(kernel);
    os.close();
    if (os.has_error()) {
      logLine(fmt::format("writing cache entry '{}' failed: {}", temp.str(),
                          os.error().message()));
      os.clear_error();
      fs::remove(temp);
      return false;
    }
  }
  if (std::error_code ec = fs::rename(temp, path)) {
    logLine(fmt::format("cannot move '{}' into place: {}", temp.str(),
                        ec.message()));
    fs::remove(temp);
    return false;
  }
  return true;
}

DiskCache::KeyLock::~KeyLock() {
  if (fd >= 0) {
    fs::unlockFile(fd);
    fs::file_t file = fd;
    fs::closeFile(file);
  }
}

/// " (pid N)" for the process holding the record lock on `fd`, or "" when
/// the system does not say.
static std::string lockHolder(int fd) {
  struct flock query;
  std::memset(&query, 0, sizeof(query));
  query.l_type = F_WRLCK;
  query.l_whence = SEEK_SET;
  if (::fcntl(fd, F_GETLK, &query) != 0 || query.l_type == F_UNLCK || query.l_pid <= 0)
    return "";
  return fmt::format(" (pid {})", static_cast<long>(query.l_pid));
}

DiskCache::KeyLock DiskCache::lock(const std::string &key,
                                   std::chrono::milliseconds timeout) {
  KeyLock result;
  if (!enabled() || fs::create_directories(folder))
    return result;
  int fd = -1;
  std::string lockPath = entryPath(key) + ".lock";
  if (fs::openFileForReadWrite(lockPath, fd, fs::CD_OpenAlways, fs::OF_None))
    return result;
  // fs::tryLockFile takes a POSIX record lock (fcntl F_SETLK) on the whole
  // file; processes that die release theirs.
  Stopwatch clock;
  bool locked = !fs::tryLockFile(fd, std::min(timeout, kLockNoticeAfter));
  if (!locked && timeout > kLockNoticeAfter) {
    logLine(fmt::format("waiting for the lock file '{}': another process{} "
                        "holds it while it compiles the same kernel (key: {}); "
                        "waiting up to {} s more, then compiling here",
                        lockPath, lockHolder(fd), key,
                        (timeout - kLockNoticeAfter).count() / 1000));
    locked = !fs::tryLockFile(fd, timeout - kLockNoticeAfter);
    if (locked)
      logLine(fmt::format("got the lock file '{}' after {:.1f} s", lockPath,
                          clock.seconds()));
  }
  if (!locked) {
    logLine(fmt::format("waited {:.1f} s for the lock file '{}' held by "
                        "another process; compiling the kernel here too",
                        clock.seconds(), lockPath));
    fs::file_t file = fd;
    fs::closeFile(file);
    return result;
  }
  result.fd = fd;
  return result;
}
