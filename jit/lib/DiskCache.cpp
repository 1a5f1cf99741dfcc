//===- DiskCache.cpp - Compiled kernels on disk ---------------------------===//
#include "DiskCache.h"
#include "Log.h"

#include "attnrt/attnrt.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

using namespace attngen;
namespace fs = llvm::sys::fs;

static constexpr llvm::StringLiteral kMagic = "attngen-kernel-cache 1\n";

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

DiskCache::Lookup DiskCache::read(const std::string &key, CompiledKernel &out,
                                  std::string &why) {
  if (!enabled())
    return Lookup::Miss;
  std::string path = entryPath(key);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return Lookup::Miss;
  if (parse((*buffer)->getBuffer().str(), key, out, why))
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

DiskCache::KeyLock DiskCache::lock(const std::string &key,
                                   std::chrono::milliseconds timeout) {
  KeyLock result;
  if (!enabled() || fs::create_directories(folder))
    return result;
  int fd = -1;
  if (fs::openFileForReadWrite(entryPath(key) + ".lock", fd,
                               fs::CD_OpenAlways, fs::OF_None))
    return result;
  if (fs::tryLockFile(fd, timeout)) {
    logAt(LogLevel::Info, "waited {} ms for another process compiling the "
                          "same kernel; compiling it here too",
          timeout.count());
    fs::file_t file = fd;
    fs::closeFile(file);
    return result;
  }
  result.fd = fd;
  return result;
}
