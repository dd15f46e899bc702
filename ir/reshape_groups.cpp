#include "ir/reshape_groups.h"

#include "ir/error.h"

namespace loom::ir {

namespace {
Extent product(const std::vector<Extent>& v) {
  Extent p(1);
  for (const auto& e : v) p = p * e;
  return p;
}
// `big` covers `small`: big/small has no negative powers and is >= 1 where decidable.
bool covers(const Extent& big, const Extent& small) {
  Extent q = big / small;
  bool has_sym = false;
  for (const auto& [s, p] : q.powers()) {
    if (p < 0) return false;
    has_sym = true;
  }
  return has_sym ? true : q.den() == 1 && q.num() >= 1;
}
}  // namespace

std::vector<ReshapeGroup> reshapeGroups(const std::vector<Extent>& in,
                                        const std::vector<Extent>& out) {
  LOOM_USER_CHECK(product(in) == product(out),
                  "reshape from {} ({} elements) to {} ({} elements) changes the number of "
                  "elements; the sizes must multiply out to the same total",
                  shapeStr(in), product(in).str(), shapeStr(out), product(out).str());
  auto not_view = [&] {
    fail("reshape from {} to {} is not a view: only splits and merges of neighbouring dims are "
         "supported (use permute to reorder dims)", shapeStr(in), shapeStr(out));
  };
  std::vector<ReshapeGroup> groups;
  int i = 0, j = 0;
  const int n = static_cast<int>(in.size()), m = static_cast<int>(out.size());
  while (i < n || j < m) {
    if (i < n && in[i].isOne()) {
      groups.push_back({i, i + 1, j, j});
      ++i;
      continue;
    }
    if (j < m && out[j].isOne()) {
      groups.push_back({i, i, j, j + 1});
      ++j;
      continue;
    }
    if (i >= n || j >= m) not_view();
    ReshapeGroup g{i, 0, j, 0};
    Extent p = in[i++], q = out[j++];
    while (!(p == q)) {
      if (covers(p, q) && j < m) {
        q = q * out[j++];
      } else if (covers(q, p) && i < n) {
        p = p * in[i++];
      } else {
        not_view();
      }
    }
    g.in_end = i;
    g.out_end = j;
    groups.push_back(g);
  }
  return groups;
}

}  // namespace loom::ir
