// CPU-only: the disk kernel cache round-trips entries and never loads a corrupt, truncated or
// foreign one.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>

#include "compiler/compile.h"
#include "frontend/internal_api.h"
#include "runtime/kernel_cache.h"
#include "tests/compile_test_util.h"

using namespace loom;

namespace {
CompiledKernel sample() {
  CompiledKernel k;
  k.name = "loom_test";
  k.ptx = "//\n// PTX text\n.version 8.5\n.target sm_90\n";
  k.block = 256;
  k.grid = 132;
  k.shared_bytes = 1024;
  k.cluster = 4;
  k.cooperative = true;
  k.workspace_bytes = 123456;
  k.outputs = {TensorDesc{DType::F16, {2, 3}, {3, 1}, 16}, TensorDesc{DType::F32, {3}, {1}, 16}};
  k.output_alias = {-1, 1};
  return k;
}
}  // namespace

TEST_CASE("a cache entry round-trips", "[cache]") {
  CompiledKernel k = sample();
  std::string why;
  auto back = runtime::deserializeKernel(runtime::serializeKernel("key-1", k), "key-1", &why);
  INFO(why);
  REQUIRE(back.has_value());
  CHECK(back->name == k.name);
  CHECK(back->ptx == k.ptx);
  CHECK(back->block == 256);
  CHECK(back->grid == 132);
  CHECK(back->shared_bytes == 1024);
  CHECK(back->cluster == 4);
  CHECK(back->cooperative);
  CHECK(back->workspace_bytes == 123456);
  CHECK(back->outputs == k.outputs);
  CHECK(back->output_alias == k.output_alias);
  CHECK(back->cubin.empty());
  CHECK(back->cubin_sm == 0);
  // With a cubin: its raw bytes (NULs, newlines, "checksum" among them) come back exactly.
  k.cubin = std::string("\x7f" "ELF\0\n\nchecksum 0\n\xff", 18);
  k.cubin_sm = 90;
  back = runtime::deserializeKernel(runtime::serializeKernel("key-1", k), "key-1", &why);
  INFO(why);
  REQUIRE(back.has_value());
  CHECK(back->cubin == k.cubin);
  CHECK(back->cubin_sm == 90);
  CHECK(back->ptx == k.ptx);
}

TEST_CASE("a cache entry's cubin is checked like the rest", "[cache]") {
  CompiledKernel k = sample();
  k.cubin = std::string("\x7f" "ELF-image", 10);
  k.cubin_sm = 90;
  const std::string good = runtime::serializeKernel("key-1", k);
  auto resealed = [](std::string body) {
    body = body.substr(0, body.rfind("\nchecksum "));
    return body + fmt::format("\nchecksum {:016x}\n", runtime::fnv1a(body));
  };
  std::string why;
  std::string notelf = good;
  notelf.replace(notelf.find("\x7f" "ELF"), 4, "PTX!");
  CHECK_FALSE(runtime::deserializeKernel(resealed(notelf), "key-1", &why));
  CHECK(why == "a cubin that is not an ELF image");
  std::string nosm = good;
  nosm.replace(nosm.find("\ncubin 90 "), 10, "\ncubin 0 ");
  CHECK_FALSE(runtime::deserializeKernel(resealed(nosm), "key-1", &why));
  CHECK(why == "a cubin line that does not fit the file");
  std::string longer = good;
  longer.replace(longer.find("\ncubin 90 10"), 13, "\ncubin 90 99999");
  CHECK_FALSE(runtime::deserializeKernel(resealed(longer), "key-1", &why));
  std::string extra = good;
  extra.insert(extra.rfind("\nchecksum "), "tail");
  CHECK_FALSE(runtime::deserializeKernel(resealed(extra), "key-1", &why));
  CHECK(why == "bytes after the cubin");
  // A v4 entry (no cubin line) is another version's file: refused, then rebuilt.
  std::string v4 = good.substr(0, good.find("\ncubin "));
  v4.replace(0, std::string("loom-kernel-cache v5").size(), "loom-kernel-cache v4");
  CHECK_FALSE(runtime::deserializeKernel(resealed(v4), "key-1", &why));
  CHECK(why == "not a loom cache file of this version");
}

TEST_CASE("corrupt, truncated or foreign cache entries are refused with a reason", "[cache]") {
  std::string good = runtime::serializeKernel("key-1", sample());
  std::string why;
  std::string flipped = good;
  flipped[flipped.find("PTX text")] = 'Q';
  CHECK_FALSE(runtime::deserializeKernel(flipped, "key-1", &why));
  CHECK(why.find("checksum") != std::string::npos);
  CHECK_FALSE(runtime::deserializeKernel(good.substr(0, good.size() / 2), "key-1", &why));
  CHECK_FALSE(why.empty());
  CHECK_FALSE(runtime::deserializeKernel(good, "key-2", &why));
  CHECK(why.find("another kernel") != std::string::npos);
  CHECK_FALSE(runtime::deserializeKernel("", "key-1", &why));
  // Malformed numbers under a valid checksum (a hand-written or broken writer's file): refused
  // with a reason, not thrown.
  auto resealed = [](std::string body) {
    body = body.substr(0, body.rfind("\nchecksum "));
    return body + fmt::format("\nchecksum {:016x}\n", runtime::fnv1a(body));
  };
  std::string nokey = good;
  nokey.replace(nokey.find("key 5"), 5, "key x");
  CHECK_FALSE(runtime::deserializeKernel(resealed(nokey), "key-1", &why));
  CHECK_THAT(why, Catch::StartsWith("malformed"));
  std::string badshape = resealed(runtime::serializeKernel("key-1", sample()));
  CHECK(runtime::deserializeKernel(badshape, "key-1", &why));  // resealing alone changes nothing
  const auto out = badshape.find("\nout ");
  REQUIRE(out != std::string::npos);
  badshape.replace(badshape.find(' ', out + 5) + 1, 1, "z");
  CHECK_FALSE(runtime::deserializeKernel(resealed(badshape), "key-1", &why));
  CHECK_THAT(why, Catch::StartsWith("malformed"));
  std::string longptx = good;
  longptx.replace(longptx.find("\nptx ") + 5, 2, "999999999");
  CHECK_FALSE(runtime::deserializeKernel(resealed(longptx), "key-1", &why));
  CHECK(why == "a PTX length longer than the file");
}

TEST_CASE("the disk cache stores atomically and drops a corrupt file", "[cache]") {
  std::string dir = std::filesystem::temp_directory_path() / "loom_cache_test";
  std::filesystem::remove_all(dir);
  test::ScopedEnv cache_dir("LOOM_CACHE_DIR", dir);
  runtime::diskCacheStore("key-1", sample());
  auto hit = runtime::diskCacheLoad("key-1");
  REQUIRE(hit.has_value());
  CHECK(hit->ptx == sample().ptx);
  CHECK_FALSE(runtime::diskCacheLoad("key-other").has_value());
  // Corrupt the file on disk: it is reported, removed, and treated as a miss.
  std::string path;
  for (const auto& e : std::filesystem::directory_iterator(dir)) path = e.path();
  REQUIRE_FALSE(path.empty());
  CHECK(path.find(".tmp") == std::string::npos);  // the temp file was renamed into place
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('#');
  }
  CHECK_FALSE(runtime::diskCacheLoad("key-1").has_value());
  CHECK_FALSE(std::filesystem::exists(path));
  // LOOM_DISK_CACHE=0 turns it off.
  {
    test::ScopedEnv off("LOOM_DISK_CACHE", "0");
    runtime::diskCacheStore("key-1", sample());
    CHECK_FALSE(runtime::diskCacheLoad("key-1").has_value());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("the cache key names the compiler build, so a rebuilt loom never reuses old kernels", "[cache]") {
  auto f = findExample("add")->buildDefault();
  const std::vector<TensorDesc> in = loom::test::descsFor(*f, findExample("add")->default_sizes);
  const std::string key = compileKey(*f, in, {}, CompileOptions{{90, 132}});
  const auto at = key.find("loom build ");
  REQUIRE(at != std::string::npos);
  const std::string id = key.substr(at + 11, key.find('\n', at) - at - 11);
  CHECK(id.size() == 16);
  CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("the cache key holds the sizes the inputs do not determine", "[cache]") {
  // x is [N*D]: 16 elements are 2 rows of 8 or 4 rows of 4, two kernels with other outputs.
  auto f = parseFusion(
      "fusion rows {\n  in x: f32[N*D]\n  y: f32[N, D] = reshape(x, shape=[N, D])\n"
      "  s: f32[N] = sum(y, dims=[1], keepdim=false)\n  out s = s\n}\n");
  const Bindings a{{"N", 2}, {"D", 8}}, b{{"N", 4}, {"D", 4}};
  const std::vector<TensorDesc> in = loom::test::descsFor(*f, a);
  REQUIRE(in == loom::test::descsFor(*f, b));
  const CompileOptions opts{{90, 132}};
  CHECK(compileKey(*f, in, a, opts) != compileKey(*f, in, b, opts));
  CHECK(compileKey(*f, in, a, opts).find("size D=8\nsize N=2\n") != std::string::npos);
  // Through one memory cache, as the Executor's: the second sizes compile their own kernel.
  std::map<std::string, CompiledKernel> cache;
  int compiled = 0;
  auto plan = [&](const Bindings& sizes) {
    CompiledPlan p = compilePlan(*f, sizes, in, opts, nullptr, [&](const std::string& key) -> std::optional<CompiledKernel> {
      auto it = cache.find(key);
      if (it == cache.end()) return std::nullopt;
      return it->second;
    });
    for (const auto& pk : p.kernels) compiled += cache.emplace(pk.key, pk.kernel).second;
    return p;
  };
  CHECK(plan(a).outputs[0].shape == std::vector<int64_t>{2});
  CHECK(plan(b).outputs[0].shape == std::vector<int64_t>{4});
  CHECK(compiled == 2);
  CHECK(plan(a).outputs[0].shape == std::vector<int64_t>{2});
  CHECK(compiled == 2);
}
