//===- CompilerId.cpp - Which compiler build made a cached kernel ---------===//
//
// A cache entry must never outlive the compiler that wrote it: a rebuilt
// attngen (new passes, a fixed bug) has to miss. The version string alone
// does not change on every rebuild, so the key also holds the GNU build id
// the linker stamps on this library (or executable), which changes with
// every change of its code.
//
//===----------------------------------------------------------------------===//
#include "Compile.h"

#include "llvm/Config/llvm-config.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>
#include <link.h>

#include <cstring>
#include <string>

#ifndef ATTNGEN_VERSION
#error "ATTNGEN_VERSION must be defined by the build"
#endif

namespace {

struct BuildIdSearch {
  const void *address; ///< a function of this object
  std::string id;      ///< hex of the NT_GNU_BUILD_ID note
};

int findBuildId(dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  auto address = reinterpret_cast<ElfW(Addr)>(search->address);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    ElfW(Addr) start = info->dlpi_addr + ph.p_vaddr;
    contains = ph.p_type == PT_LOAD && address >= start &&
               address < start + ph.p_memsz;
  }
  if (!contains)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const char *note = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
    const char *end = note + ph.p_memsz;
    while (note + sizeof(ElfW(Nhdr)) <= end) {
      const auto *header = reinterpret_cast<const ElfW(Nhdr) *>(note);
      const char *name = note + sizeof(ElfW(Nhdr));
      const char *desc = name + ((header->n_namesz + 3) & ~3u);
      if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        for (unsigned j = 0; j < header->n_descsz; ++j)
          search->id += fmt::format("{:02x}", static_cast<unsigned char>(desc[j]));
        return 1;
      }
      note = desc + ((header->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

} // namespace

const std::string &attngen::compilerId() {
  static const std::string id = [] {
    BuildIdSearch search{reinterpret_cast<const void *>(&findBuildId), {}};
    dl_iterate_phdr(findBuildId, &search);
    // Without a build id (linked with --build-id=none) fall back to the
    // library file's size and modification time: coarser, but a rebuild
    // still changes them.
    std::string build = "build." + search.id;
    if (search.id.empty()) {
      Dl_info info;
      struct stat st;
      if (dladdr(reinterpret_cast<const void *>(&findBuildId), &info) &&
          info.dli_fname && stat(info.dli_fname, &st) == 0)
        build = fmt::format("file.{}.{}", static_cast<long long>(st.st_size),
                            static_cast<long long>(st.st_mtime));
      else
        build = "unknown";
    }
    return fmt::format("{}+llvm{}+{}", ATTNGEN_VERSION, LLVM_VERSION_STRING,
                       build);
  }();
  return id;
}
