#include "compiler/kir/fingerprint.h"

#include <bit>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

namespace loom::kir {

namespace {

constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full, kP3 = 0x165667B19E3779F9ull,
                        kP4 = 0x85EBCA77C2B2AE63ull, kP5 = 0x27D4EB2F165667C5ull;

// The nodes are written out as 64-bit words (each field that differs from its default as a
// tag and its value, so a `let` costs a few words), then hashed at once: two digests of 64 bits
// over every word (xxh64's rounds, four lanes each, different seeds and word mixes).
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
  void field(std::uint64_t tag, int v, int dflt) { field<std::int64_t>(tag, v, dflt); }
  void field(std::uint64_t tag, double v) {  // (by its bits: -0 is not 0)
    field<std::int64_t>(tag, std::bit_cast<std::int64_t>(v), 0);
  }
  void field(std::uint64_t tag, const std::string& v) {
    if (v.empty()) return;
    word(tag << 48);
    str(v);
  }
  Fingerprint done() const { return {digest(0x243F6A8885A308D3ull, 0), digest(0x13198A2E03707344ull, 1)}; }

 private:
  static std::uint64_t round(std::uint64_t acc, std::uint64_t w) { return std::rotl(acc + w * kP2, 31) * kP1; }
  std::uint64_t digest(std::uint64_t seed, int variant) const {
    // The second digest hashes each word after a bijective mix of its own, so that no change of
    // the words keeps both digests by the rounds' shared structure.
    auto in = [&](size_t i) {
      std::uint64_t w = words_[i];
      return variant == 0 ? w : std::rotl(w * kP3, 23) ^ (w >> 29);
    };
    std::uint64_t v[4] = {seed + kP1 + kP2, seed + kP2, seed, seed - kP1};
    size_t i = 0;
    for (; i + 4 <= n_; i += 4)
      for (int l = 0; l < 4; ++l) v[l] = round(v[l], in(i + static_cast<size_t>(l)));
    std::uint64_t h = std::rotl(v[0], 1) + std::rotl(v[1], 7) + std::rotl(v[2], 12) + std::rotl(v[3], 18);
    for (std::uint64_t x : v) h = (h ^ round(0, x)) * kP1 + kP4;
    h += static_cast<std::uint64_t>(n_) * 8;
    for (; i < n_; ++i) h = std::rotl(h ^ round(0, in(i)), 27) * kP1 + kP4;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    return h ^ (h >> 32) ^ (variant ? kP5 : 0);
  }

  // One buffer a thread, kept between kernels (a kernel is tens of thousands of words).
  static std::vector<std::uint64_t>& buffer() {
    thread_local std::vector<std::uint64_t> words;
    return words;
  }
  std::vector<std::uint64_t>& words_ = buffer();
  size_t n_ = 0;
};

// Each node's fields are named by a structured binding of all of them: a field added to a node
// stops this file compiling until it is named (and hashed) here too.
void type(Hasher& h, const Type& t) {
  const auto& [index, dtype, lanes, address, packed] = t;
  h.word(static_cast<std::uint64_t>(index) | static_cast<std::uint64_t>(address) << 1 |
         static_cast<std::uint64_t>(packed) << 2 | static_cast<std::uint64_t>(dtype) << 8 |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(lanes)) << 16);
}

void expr(Hasher& h, const ExprP& p);

void field(Hasher& h, std::uint64_t tag, const ExprP& e) {
  if (!e) return;
  h.word(tag << 48);
  expr(h, e);
}

void expr(Hasher& h, const ExprP& p) {
  static const Expr d;
  const auto& [kind, type_, ivalue, fvalue, name, special, iop, op, args, param, access, inner_stride, align, cache,
               intrinsic, buffer] = *p;
  h.word(0x4558ull << 48 | static_cast<std::uint64_t>(kind));
  type(h, type_);
  h.field(1, ivalue, d.ivalue);
  h.field(2, fvalue);
  h.field(3, name);
  h.field(4, special, d.special);
  h.field(5, iop, d.iop);
  h.field(6, op, d.op);
  h.field(7, param, d.param);
  h.field(8, access, d.access);
  h.field(9, inner_stride, d.inner_stride);
  h.field(10, align, d.align);
  h.field(11, cache, d.cache);
  h.field(12, intrinsic, d.intrinsic);
  h.field(13, buffer);
  h.num(static_cast<std::int64_t>(args.size()));
  for (const ExprP& a : args) expr(h, a);
}

void grid(Hasher& h, const GridLevel& g) {
  static const GridLevel d;
  const auto& [region, blocks, barrier, barriers_per_set, rank, parity, set, group_ws, tid, row_chunks, chunks, vec] = g;
  h.field(30, region, d.region);
  h.field(31, blocks, d.blocks);
  h.field(32, barrier, d.barrier);
  h.field(33, barriers_per_set, d.barriers_per_set);
  h.field(34, chunks, d.chunks);
  h.field(35, vec, d.vec);
  h.field(36, rank);
  h.field(37, parity);
  h.field(38, set);
  h.field(39, group_ws);
  h.field(40, tid);
  h.field(41, row_chunks, d.row_chunks);
}

void body(Hasher& h, const Body& b);

void stmt(Hasher& h, const Stmt& s) {
  static const Stmt d;
  const auto& [kind, name, value, init, cond, step, mapping, unroll, body_, exit, param, offset, access, inner_stride,
               align, barrier, combine, domain, threads, rows, cluster, grid_, threads_merged, thread_in_row,
               row_in_block, lane, count, trips, carried, yields, results, uniform, src, bytes, copy_dtype] = s;
  h.word(0x5354ull << 48 | static_cast<std::uint64_t>(kind));
  h.field(1, name);
  field(h, 2, value);
  field(h, 3, init);
  field(h, 4, cond);
  field(h, 5, step);
  field(h, 6, offset);
  field(h, 7, trips);
  field(h, 8, src);
  h.field(9, mapping, d.mapping);
  h.field(10, unroll, d.unroll);
  h.field(11, param, d.param);
  h.field(12, align, d.align);
  h.field(13, threads, d.threads);
  h.field(14, rows, d.rows);
  h.field(15, cluster, d.cluster);
  h.field(16, bytes, d.bytes);
  h.field(17, exit);
  h.field(18, access, d.access);
  h.field(19, inner_stride, d.inner_stride);
  h.field(20, barrier, d.barrier);
  h.field(21, combine, d.combine);
  h.field(22, domain);
  h.field(23, threads_merged, d.threads_merged);
  h.field(24, thread_in_row);
  h.field(25, row_in_block);
  h.field(26, lane);
  h.field(27, count, d.count);
  h.field(28, uniform, d.uniform);
  h.field(29, copy_dtype, d.copy_dtype);
  grid(h, grid_);
  if (!carried.empty()) {
    h.word(42ull << 48 | carried.size());
    for (const auto& [n, e] : carried) {
      h.str(n);
      expr(h, e);
    }
  }
  if (!yields.empty()) {
    h.word(43ull << 48 | yields.size());
    for (const ExprP& e : yields) expr(h, e);
  }
  if (!results.empty()) {
    h.word(44ull << 48 | results.size());
    for (const std::string& r : results) h.str(r);
  }
  if (!body_.empty()) {
    h.word(45ull << 48);
    body(h, body_);
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
  const auto& [name, scheduler, params, sizes, noalias, index_bits, launch, buffers, min_blocks_per_sm, body_] = k;
  h.str(name);
  h.str(scheduler);
  h.num(static_cast<std::int64_t>(params.size()));
  for (const Param& p : params) {
    const auto& [pname, dtype, output, extent, workspace] = p;
    h.str(pname);
    h.num(dtype);
    h.num(output);
    h.num(extent);
    h.num(workspace);
  }
  h.num(static_cast<std::int64_t>(sizes.size()));
  for (const SizeParam& s : sizes) {
    const auto& [sname, max] = s;
    h.str(sname);
    h.num(max);
  }
  h.num(noalias);
  h.num(std::int64_t{index_bits});
  const auto& [grid_size, block] = launch;
  h.num(grid_size);
  h.num(std::int64_t{block});
  h.num(static_cast<std::int64_t>(buffers.size()));
  for (const Buffer& b : buffers) {
    const auto& [bname, symbol, place, elem, count, align, any_type] = b;
    h.str(bname);
    h.str(symbol);
    h.num(place);
    h.num(elem);
    h.num(count);
    h.num(std::int64_t{align});
    h.num(any_type);
  }
  h.num(std::int64_t{min_blocks_per_sm});
  body(h, body_);
  return h.done();
}

}  // namespace loom::kir
