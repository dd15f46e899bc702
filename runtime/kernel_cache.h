#pragma once
// The on-disk kernel cache: one file per compiled kernel (PTX plus launch metadata) under
// $LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else ~/.cache/loom. LOOM_DISK_CACHE=0 turns it
// off. Files are written atomically (temp file + rename) and checked on read: a corrupt or
// truncated entry, or one written for another key, is reported and rebuilt, never loaded.
#include <optional>
#include <string>

#include "compiler/compile.h"

namespace loom::runtime {

bool diskCacheEnabled();
std::string diskCacheDir();

// The file contents for a kernel, and back. `why` says what is wrong with a bad entry.
std::string serializeKernel(const std::string& key, const CompiledKernel& k);
std::optional<CompiledKernel> deserializeKernel(const std::string& text, const std::string& key,
                                                std::string* why);

// Reads the entry for `key`; nullopt on a miss. A bad entry is reported on stderr, removed,
// and treated as a miss.
std::optional<CompiledKernel> diskCacheLoad(const std::string& key);
// Best effort: a cache that cannot be written is reported once, never fatal.
void diskCacheStore(const std::string& key, const CompiledKernel& k);

// 64-bit FNV-1a, the file name and checksum.
uint64_t fnv1a(const std::string& s);

}  // namespace loom::runtime
