#include "runtime/ptx_compiler.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "runtime/environment_options.h"

namespace loom::runtime {
namespace {

// nvJitLink's entry points by their exported names (nvJitLink.h maps its names to versioned
// inline wrappers; the plain names are exported by every release since 12.0).
using Handle = void*;
struct JitLinkApi {
  int (*create)(Handle*, uint32_t, const char**) = nullptr;
  int (*destroy)(Handle*) = nullptr;
  int (*addData)(Handle, int, const void*, size_t, const char*) = nullptr;
  int (*complete)(Handle) = nullptr;
  int (*cubinSize)(Handle, size_t*) = nullptr;
  int (*cubin)(Handle, void*) = nullptr;
  int (*errorLogSize)(Handle, size_t*) = nullptr;
  int (*errorLog)(Handle, char*) = nullptr;
  int (*infoLogSize)(Handle, size_t*) = nullptr;
  int (*infoLog)(Handle, char*) = nullptr;
  int (*version)(unsigned*, unsigned*) = nullptr;
};
constexpr int kInputPtx = 2;  // NVJITLINK_INPUT_PTX

struct Loaded {
  JitLinkApi api;
  std::string found;  // the library's path or name
  std::string error;  // empty when usable
  unsigned major = 0, minor = 0;
};

std::vector<std::string> candidates() {
  std::vector<std::string> c;
  if (auto p = environmentValue("LOOM_NVJITLINK")) c.push_back(*p);
  for (const char* so : {"libnvJitLink.so.13", "libnvJitLink.so.12"}) c.emplace_back(so);
  for (const char* root : {LOOM_CUDA_ROOT_DEFAULT, "/usr/local/cuda"})
    for (const char* so : {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"})
      c.push_back(fmt::format("{}/lib64/{}", root, so));
  return c;
}

void load(Loaded& l) {
  void* lib = nullptr;
  std::string tried;
  for (const std::string& c : candidates()) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      l.found = c;
      break;
    }
    tried += tried.empty() ? c : ", " + c;
  }
  if (!lib) {
    l.error = fmt::format("no nvJitLink found (tried {})", tried);
    return;
  }
  std::string missing;
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn) missing += missing.empty() ? name : fmt::format(", {}", name);
  };
  sym(l.api.create, "nvJitLinkCreate");
  sym(l.api.destroy, "nvJitLinkDestroy");
  sym(l.api.addData, "nvJitLinkAddData");
  sym(l.api.complete, "nvJitLinkComplete");
  sym(l.api.cubinSize, "nvJitLinkGetLinkedCubinSize");
  sym(l.api.cubin, "nvJitLinkGetLinkedCubin");
  sym(l.api.errorLogSize, "nvJitLinkGetErrorLogSize");
  sym(l.api.errorLog, "nvJitLinkGetErrorLog");
  sym(l.api.infoLogSize, "nvJitLinkGetInfoLogSize");
  sym(l.api.infoLog, "nvJitLinkGetInfoLog");
  sym(l.api.version, "nvJitLinkVersion");
  if (!missing.empty()) {
    l.error = fmt::format("{} lacks {}", l.found, missing);
    return;
  }
  l.api.version(&l.major, &l.minor);
}

const Loaded& loaded() {
  static Loaded* l = [] {
    auto* p = new Loaded();  // never freed, like the driver's table
    load(*p);
    return p;
  }();
  return *l;
}

std::string errorLog(const JitLinkApi& api, Handle h) {
  size_t n = 0;
  if (api.errorLogSize(h, &n) != 0 || n == 0) return "(no log)";
  std::string log(n, '\0');
  if (api.errorLog(h, log.data()) != 0) return "(no log)";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log.size() > 600 ? log.substr(0, 600) + " ..." : log;
}

std::string infoLog(const JitLinkApi& api, Handle h) {
  size_t n = 0;
  if (api.infoLogSize(h, &n) != 0 || n == 0) return "";
  std::string log(n, '\0');
  if (api.infoLog(h, log.data()) != 0) return "";
  return log;
}

}  // namespace

bool ptxCompilerAvailable(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.error.empty() ? l.found : l.error;
  return l.error.empty();
}

std::string ptxCompilerVersion() {
  const Loaded& l = loaded();
  return l.error.empty() ? fmt::format("nvJitLink {}.{}", l.major, l.minor) : "";
}

std::string withMaxRegisters(const std::string& ptx, int n) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t entry = ptx.find(".entry ", at);
    if (entry == std::string::npos) break;
    const size_t body = ptx.find("\n{", entry);
    if (body == std::string::npos) break;
    out.append(ptx, at, body - at);
    if (ptx.substr(entry, body - entry).find(".maxnreg") == std::string::npos) out += fmt::format("\n.maxnreg {}", n);
    at = body;
  }
  out.append(ptx, at, std::string::npos);
  return out;
}

void readResourceLog(const std::string& log, Cubin& c) {
  auto largest = [&](const char* pattern) {
    int most = 0;
    const std::regex re(pattern);
    for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it)
      most = std::max(most, std::atoi((*it)[1].str().c_str()));
    return most;
  };
  c.registers = largest(R"([Uu]sed (\d+) registers)");
  c.stack_bytes = std::max(largest(R"((\d+) bytes stack frame)"), largest(R"((\d+) stack\b)"));
  c.spill_bytes = largest(R"((\d+) bytes spill stores)");
}

std::optional<Cubin> compileCubin(const std::string& ptx, int sm, const std::string& label,
                                  std::string* why, int max_registers) {
  const Loaded& l = loaded();
  auto fail = [&](std::string w) -> std::optional<Cubin> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (!l.error.empty()) return fail(l.error);
  // nvJitLink prints "fatal" for an arch it has never heard of: only real SM versions go in.
  if (sm < 50 || sm > 199) return fail(fmt::format("sm_{} is no GPU's SM version", sm));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string arch = fmt::format("-arch=sm_{}", sm);
  const char* opts[] = {arch.c_str(), "-verbose"};
  Handle h = nullptr;
  if (int r = l.api.create(&h, 2, opts); r != 0)
    return fail(fmt::format("nvJitLinkCreate({}) failed with status {}", arch, r));
  Cubin out;
  std::string err;
  const std::string capped = max_registers > 0 ? withMaxRegisters(ptx, max_registers) : std::string();
  const std::string& input = max_registers > 0 ? capped : ptx;
  if (int r = l.api.addData(h, kInputPtx, input.data(), input.size(), label.c_str()); r != 0)
    err = fmt::format("nvJitLinkAddData of {}'s PTX failed with status {}: {}", label, r, errorLog(l.api, h));
  else if (int r2 = l.api.complete(h); r2 != 0)
    err = fmt::format("nvJitLink refused {}'s PTX for sm_{} (status {}): {}", label, sm, r2, errorLog(l.api, h));
  size_t n = 0;
  if (err.empty() && l.api.cubinSize(h, &n) == 0 && n > 0) {
    out.image.resize(n);
    if (l.api.cubin(h, out.image.data()) != 0) err = "nvJitLinkGetLinkedCubin failed";
  } else if (err.empty()) {
    err = "nvJitLink gave an empty cubin";
  }
  if (err.empty()) readResourceLog(infoLog(l.api, h), out);
  l.api.destroy(&h);
  if (!err.empty()) return fail(err);
  out.sm = sm;
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace loom::runtime
