#include "runtime/memory_order.h"

#include <algorithm>
#include <charconv>

#include "ir/error.h"
#include "runtime/host_tensor.h"

namespace loom {

std::vector<int> parseMemoryOrder(const ir::Fusion& f, const std::string& input, const std::string& layout,
                                  const std::string& where) {
  const ir::Value* v = f.input(input);
  std::vector<int> order;
  if (layout == "nchw" || layout == "contiguous") {
    for (int i = 0; i < v->rank(); ++i) order.push_back(i);
    return order;
  }
  if (layout == "nhwc" || layout == "channels_last") {
    LOOM_USER_CHECK(v->rank() >= 3, "{}: `{}` has rank {}, channels-last needs >= 3", where, input, v->rank());
    return channelsLastOrder(v->rank());
  }
  bool ok = true;
  size_t p = 0;
  while (ok && p <= layout.size()) {
    size_t c = layout.find(',', p);
    if (c == std::string::npos) c = layout.size();
    int d = -1;
    const char* b = layout.data() + p;
    const char* e = layout.data() + c;
    auto [q, ec] = std::from_chars(b, e, d);
    ok = b != e && ec == std::errc() && q == e;
    order.push_back(d);
    p = c + 1;
  }
  std::vector<int> s = order;
  std::sort(s.begin(), s.end());
  ok = ok && static_cast<int>(s.size()) == v->rank();
  for (int i = 0; ok && i < v->rank(); ++i) ok = s[static_cast<size_t>(i)] == i;
  LOOM_USER_CHECK(ok, "{}: give nchw, nhwc, or a permutation of 0..{} listing dims from outermost to innermost",
                  where, v->rank() - 1);
  return order;
}

}  // namespace loom
