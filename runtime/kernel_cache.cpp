#include "runtime/kernel_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "runtime/environment_options.h"

namespace loom::runtime {

namespace {
constexpr const char* kMagic = "loom-kernel-cache v5";

std::string descLine(const TensorDesc& d, int alias) {
  return fmt::format("{} {} | {} | {} {}", dtypeName(d.dtype), fmt::join(d.shape, " "),
                     fmt::join(d.strides, " "), d.align_bytes, alias);
}

std::vector<int64_t> ints(std::istringstream& is) {
  std::vector<int64_t> v;
  std::string tok;
  while (is >> tok && tok != "|") v.push_back(std::stoll(tok));
  return v;
}
}  // namespace

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool diskCacheEnabled() {
  return environmentValue("LOOM_DISK_CACHE") != "0";
}

std::string diskCacheDir() {
  if (auto d = environmentValue("LOOM_CACHE_DIR")) return *d;
  if (auto x = environmentValue("XDG_CACHE_HOME")) return *x + "/loom";
  if (auto h = environmentValue("HOME")) return *h + "/.cache/loom";
  return "/tmp/loom-cache";
}

std::string serializeKernel(const std::string& key, const CompiledKernel& k) {
  std::string body = fmt::format("{}\nkey {}\n{}", kMagic, key.size(), key);
  body += fmt::format("\nkernel {} {} {} {} {} {} {} {}\n", k.name, k.block, k.grid, k.shared_bytes, k.cluster,
                      k.cooperative ? 1 : 0, k.workspace_bytes, k.outputs.size());
  for (size_t i = 0; i < k.outputs.size(); ++i)
    body += "out " + descLine(k.outputs[i], k.output_alias[i]) + "\n";
  body += fmt::format("sizes {}", k.size_args.size());
  for (const std::string& s : k.size_args) body += " " + s;
  body += "\n";
  body += fmt::format("ptx {}\n{}", k.ptx.size(), k.ptx);
  // The cubin made from that PTX, raw bytes after its length (0 bytes: none made, or -sm: the
  // one made for that SM was refused, so no process makes it again).
  body += fmt::format("\ncubin {} {}\n", k.cubin_sm, k.cubin.size());
  body += k.cubin;
  return body + fmt::format("\nchecksum {:016x}\n", fnv1a(body));
}

namespace {
std::optional<CompiledKernel> parseEntry(const std::string& text, const std::string& key, std::string* why) {
  auto bad = [&](std::string w) -> std::optional<CompiledKernel> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  size_t cs = text.rfind("\nchecksum ");
  if (cs == std::string::npos) return bad("no checksum line (truncated?)");
  std::string body = text.substr(0, cs);
  std::string want = fmt::format("{:016x}", fnv1a(body));
  if (text.compare(cs + 10, 16, want) != 0) return bad("checksum mismatch (corrupt file)");
  if (body.rfind(kMagic, 0) != 0) return bad("not a loom cache file of this version");
  size_t p = std::string(kMagic).size() + 1;
  size_t nl = body.find('\n', p);
  if (nl == std::string::npos || body.compare(p, 4, "key ") != 0) return bad("malformed key");
  size_t klen = std::stoull(body.substr(p + 4, nl - p - 4));
  if (body.compare(nl + 1, klen, key) != 0 || klen != key.size())
    return bad("written for another kernel (hash collision)");
  std::istringstream is(body.substr(nl + 1 + klen));
  CompiledKernel k;
  std::string tag;
  size_t nout = 0;
  int coop = 0;
  if (!(is >> tag >> k.name >> k.block >> k.grid >> k.shared_bytes >> k.cluster >> coop >> k.workspace_bytes >> nout) || tag != "kernel")
    return bad("malformed kernel line");
  if (k.cluster < 1 || k.block < 1 || k.grid < 1 || (coop != 0 && coop != 1))
    return bad("kernel line with an empty block, grid or cluster");
  k.cooperative = coop == 1;
  for (size_t i = 0; i < nout; ++i) {
    std::string line;
    if (i == 0) std::getline(is, line);
    if (!std::getline(is, line) || line.rfind("out ", 0) != 0) return bad("malformed output line");
    std::istringstream ls(line.substr(4));
    std::string dt;
    ls >> dt;
    TensorDesc d;
    auto parsed = parseDType(dt);
    if (!parsed) return bad("unknown dtype " + dt);
    d.dtype = *parsed;
    d.shape = ints(ls);
    d.strides = ints(ls);
    int alias = -1;
    ls >> d.align_bytes >> alias;
    k.outputs.push_back(d);
    k.output_alias.push_back(alias);
  }
  size_t nsizes = 0;
  if (!(is >> tag >> nsizes) || tag != "sizes" || nsizes > 64) return bad("malformed sizes line");
  for (size_t i = 0; i < nsizes; ++i) {
    std::string s;
    if (!(is >> s)) return bad("malformed sizes line");
    k.size_args.push_back(s);
  }
  size_t plen = 0;
  if (!(is >> tag >> plen) || tag != "ptx") return bad("malformed ptx line");
  if (plen > body.size()) return bad("a PTX length longer than the file");
  is.get();
  k.ptx.resize(plen);
  if (!is.read(k.ptx.data(), static_cast<std::streamsize>(plen))) return bad("truncated PTX");
  size_t clen = 0;
  if (!(is >> tag >> k.cubin_sm >> clen) || tag != "cubin") return bad("malformed cubin line");
  // No cubin (sm 0), a cubin for sm_N, or -N: the one made for sm_N was refused (no bytes).
  if (clen > body.size() || (clen == 0) != (k.cubin_sm <= 0)) return bad("a cubin line that does not fit the file");
  is.get();
  k.cubin.resize(clen);
  if (!is.read(k.cubin.data(), static_cast<std::streamsize>(clen))) return bad("truncated cubin");
  if (clen && k.cubin.compare(0, 4, "\x7f" "ELF") != 0) return bad("a cubin that is not an ELF image");
  if (is.peek() != std::char_traits<char>::eof()) return bad("bytes after the cubin");
  return k;
}
}  // namespace

std::optional<CompiledKernel> deserializeKernel(const std::string& text, const std::string& key,
                                                std::string* why) {
  // A well-formed checksum over malformed numbers (a file written by hand, or by a broken
  // writer) is refused like any other bad entry, never thrown past the cache.
  try {
    return parseEntry(text, key, why);
  } catch (const std::exception& e) {
    if (why) *why = fmt::format("malformed entry ({})", e.what());
    return std::nullopt;
  }
}

static std::string entryPath(const std::string& key) {
  return fmt::format("{}/{:016x}.loomk", diskCacheDir(), fnv1a(key));
}

std::optional<CompiledKernel> diskCacheLoad(const std::string& key) {
  if (!diskCacheEnabled()) return std::nullopt;
  std::string path = entryPath(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string why;
  auto k = deserializeKernel(ss.str(), key, &why);
  if (!k) {
    std::fprintf(stderr, "loom: warning: kernel cache entry %s is bad (%s); rebuilding it\n",
                 path.c_str(), why.c_str());
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  return k;
}

void diskCacheStore(const std::string& key, const CompiledKernel& k) {
  if (!diskCacheEnabled()) return;
  static bool warned = false;
  std::error_code ec;
  std::filesystem::create_directories(diskCacheDir(), ec);
  std::string path = entryPath(key);
  std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << serializeKernel(key, k);
    if (!out.flush()) {
      if (!warned) std::fprintf(stderr, "loom: warning: cannot write kernel cache under %s\n", diskCacheDir().c_str());
      warned = true;
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace loom::runtime
