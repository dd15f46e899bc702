#include "compiler/kir/fingerprint.h"

#include <bit>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

namespace loom::kir {

// Every field of the nodes below goes into the digest. A field added to one of them must be
// added here too: these sizes (of this platform's layout) fail to compile until it is.
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(Type) == 12 && sizeof(Expr) == 168 && sizeof(GridLevel) == 192 && sizeof(Stmt) == 696 &&
                  sizeof(Buffer) == 88 && sizeof(Param) == 56 && sizeof(SizeParam) == 40 && sizeof(Kernel) == 192,
              "a kernel IR node changed: add its new fields to the fingerprint (compiler/kir/fingerprint.cpp)");
#endif

namespace {

// The nodes are written out as 64-bit words (each field that differs from its default as a
// tag and its value, so a `let` costs a few words), then hashed at once over four lanes.
class Hasher {
 public:
  void word(std::uint64_t w) {
    if (n_ == words_.size()) words_.resize(std::max<size_t>(4096, 2 * n_));
    words_[n_++] = w;
  }
  void num(std::int64_t v) { word(static_cast<std::uint64_t>(v)); }
  template <typename E>
    requires std::is_enum_v<E>
  void num(E e) {
    word(static_cast<std::uint64_t>(e));
  }
  void num(bool v) { word(v ? 1 : 2); }
  void num(double v) { word(std::bit_cast<std::uint64_t>(v)); }
  void str(const std::string& s) {
    word(s.size() ^ 0x5354520000000000ull);
    for (size_t i = 0; i < s.size(); i += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.data() + i, std::min<size_t>(8, s.size() - i));
      word(w);
    }
  }
  // Field `tag` where it differs from its default.
  template <typename T>
  void field(std::uint64_t tag, const T& v, const T& dflt) {
    if (v == dflt) return;
    word(tag << 48);
    num(v);
  }
  void field(std::uint64_t tag, const std::string& v) {
    if (v.empty()) return;
    word(tag << 48);
    str(v);
  }
  Fingerprint done() const {
    std::uint64_t lane[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull,
                             0x082EFA98EC4E6C89ull};
    size_t i = 0;
    for (; i + 4 <= n_; i += 4)
      for (int l = 0; l < 4; ++l) lane[l] = std::rotl((lane[l] ^ words_[i + l]) * 0x9E3779B97F4A7C15ull, 29);
    for (int l = 0; i < n_; ++i, ++l) lane[l] = std::rotl((lane[l] ^ words_[i]) * 0x9E3779B97F4A7C15ull, 29);
    auto fin = [](std::uint64_t x) {
      x ^= x >> 33;
      x *= 0xFF51AFD7ED558CCDull;
      x ^= x >> 33;
      x *= 0xC4CEB9FE1A85EC53ull;
      return x ^ (x >> 33);
    };
    const std::uint64_t n = n_;
    return {fin(lane[0] ^ std::rotl(lane[1], 21) ^ n), fin(lane[2] ^ std::rotl(lane[3], 43) ^ (n * 0xC2B2AE3D27D4EB4Full))};
  }

 private:
  // One buffer a thread, kept between kernels (a kernel is tens of thousands of words).
  static std::vector<std::uint64_t>& buffer() {
    thread_local std::vector<std::uint64_t> words;
    return words;
  }
  std::vector<std::uint64_t>& words_ = buffer();
  size_t n_ = 0;
};

void type(Hasher& h, const Type& t) {
  h.word(static_cast<std::uint64_t>(t.index) | static_cast<std::uint64_t>(t.address) << 1 |
         static_cast<std::uint64_t>(t.packed) << 2 | static_cast<std::uint64_t>(t.dtype) << 8 |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.lanes)) << 16);
}

void expr(Hasher& h, const ExprP& p);

void field(Hasher& h, std::uint64_t tag, const ExprP& e) {
  if (!e) return;
  h.word(tag << 48);
  expr(h, e);
}

void expr(Hasher& h, const ExprP& p) {
  const Expr& e = *p;
  static const Expr d;
  h.word(0x4558ull << 48 | static_cast<std::uint64_t>(e.kind));
  type(h, e.type);
  h.field(1, e.ivalue, d.ivalue);
  h.field(2, std::bit_cast<std::int64_t>(e.fvalue), std::int64_t{0});  // (bits: -0 is not 0)
  h.field(3, e.name);
  h.field(4, e.special, d.special);
  h.field(5, e.iop, d.iop);
  h.field(6, e.op, d.op);
  h.field(7, static_cast<std::int64_t>(e.param), std::int64_t{d.param});
  h.field(8, e.access, d.access);
  h.field(9, e.inner_stride, d.inner_stride);
  h.field(10, static_cast<std::int64_t>(e.align), std::int64_t{d.align});
  h.field(11, e.cache, d.cache);
  h.field(12, e.intrinsic, d.intrinsic);
  h.field(13, e.buffer);
  h.num(static_cast<std::int64_t>(e.args.size()));
  for (const ExprP& a : e.args) expr(h, a);
}

void grid(Hasher& h, const GridLevel& g) {
  static const GridLevel d;
  h.field(30, static_cast<std::int64_t>(g.region), std::int64_t{d.region});
  h.field(31, static_cast<std::int64_t>(g.blocks), std::int64_t{d.blocks});
  h.field(32, static_cast<std::int64_t>(g.barrier), std::int64_t{d.barrier});
  h.field(33, static_cast<std::int64_t>(g.barriers_per_set), std::int64_t{d.barriers_per_set});
  h.field(34, static_cast<std::int64_t>(g.chunks), std::int64_t{d.chunks});
  h.field(35, static_cast<std::int64_t>(g.vec), std::int64_t{d.vec});
  h.field(36, g.rank);
  h.field(37, g.parity);
  h.field(38, g.set);
  h.field(39, g.group_ws);
  h.field(40, g.tid);
  h.field(41, g.row_chunks, d.row_chunks);
}

void body(Hasher& h, const Body& b);

void stmt(Hasher& h, const Stmt& s) {
  static const Stmt d;
  h.word(0x5354ull << 48 | static_cast<std::uint64_t>(s.kind));
  h.field(1, s.name);
  field(h, 2, s.value);
  field(h, 3, s.init);
  field(h, 4, s.cond);
  field(h, 5, s.step);
  field(h, 6, s.offset);
  field(h, 7, s.trips);
  field(h, 8, s.src);
  h.field(9, s.mapping, d.mapping);
  h.field(10, static_cast<std::int64_t>(s.unroll), std::int64_t{d.unroll});
  h.field(11, static_cast<std::int64_t>(s.param), std::int64_t{d.param});
  h.field(12, static_cast<std::int64_t>(s.align), std::int64_t{d.align});
  h.field(13, static_cast<std::int64_t>(s.threads), std::int64_t{d.threads});
  h.field(14, static_cast<std::int64_t>(s.rows), std::int64_t{d.rows});
  h.field(15, static_cast<std::int64_t>(s.cluster), std::int64_t{d.cluster});
  h.field(16, static_cast<std::int64_t>(s.bytes), std::int64_t{d.bytes});
  h.field(17, s.exit);
  h.field(18, s.access, d.access);
  h.field(19, s.inner_stride, d.inner_stride);
  h.field(20, s.barrier, d.barrier);
  h.field(21, s.combine, d.combine);
  h.field(22, s.domain);
  h.field(23, s.threads_merged, d.threads_merged);
  h.field(24, s.thread_in_row);
  h.field(25, s.row_in_block);
  h.field(26, s.lane);
  h.field(27, s.count, d.count);
  h.field(28, s.uniform, d.uniform);
  h.field(29, s.copy_dtype, d.copy_dtype);
  grid(h, s.grid);
  if (!s.carried.empty()) {
    h.word(42ull << 48 | s.carried.size());
    for (const auto& [name, e] : s.carried) {
      h.str(name);
      expr(h, e);
    }
  }
  if (!s.yields.empty()) {
    h.word(43ull << 48 | s.yields.size());
    for (const ExprP& e : s.yields) expr(h, e);
  }
  if (!s.results.empty()) {
    h.word(44ull << 48 | s.results.size());
    for (const std::string& r : s.results) h.str(r);
  }
  if (!s.body.empty()) {
    h.word(45ull << 48);
    body(h, s.body);
  }
}

void body(Hasher& h, const Body& b) {
  h.word(0x424Full << 48 | b.size());
  for (const StmtP& s : b) stmt(h, *s);
}

}  // namespace

std::string Fingerprint::hex() const { return fmt::format("{:016x}{:016x}", hi, lo); }

Fingerprint fingerprint(const Kernel& k) {
  Hasher h;
  h.str(k.name);
  h.str(k.scheduler);
  h.num(static_cast<std::int64_t>(k.params.size()));
  for (const Param& p : k.params) {
    h.str(p.name);
    h.num(p.dtype);
    h.num(p.output);
    h.num(p.extent);
    h.num(p.workspace);
  }
  h.num(static_cast<std::int64_t>(k.sizes.size()));
  for (const SizeParam& s : k.sizes) {
    h.str(s.name);
    h.num(s.max);
  }
  h.num(k.noalias);
  h.num(std::int64_t{k.index_bits});
  h.num(k.launch.grid);
  h.num(std::int64_t{k.launch.block});
  h.num(static_cast<std::int64_t>(k.buffers.size()));
  for (const Buffer& b : k.buffers) {
    h.str(b.name);
    h.str(b.symbol);
    h.num(b.place);
    h.num(b.elem);
    h.num(b.count);
    h.num(std::int64_t{b.align});
    h.num(b.any_type);
  }
  h.num(std::int64_t{k.min_blocks_per_sm});
  body(h, k.body);
  return h.done();
}

}  // namespace loom::kir
