// CPU-only: the Executor's signature index (runtime/signature_lru.h) finds entries by hash and
// equality, keeps the most recently used ones and drops the least recently used first.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "runtime/signature_lru.h"

using loom::runtime::SignatureLru;

namespace {
std::unique_ptr<std::string> item(const char* s) { return std::make_unique<std::string>(s); }
auto is(const char* want) {
  return [want](const std::string& s) { return s == want; };
}
}  // namespace

TEST_CASE("signature index: finds by hash and equality, drops the least recently used", "[runtime]") {
  SignatureLru<std::string> lru(3);
  CHECK(lru.insert(1, item("a")) == nullptr);
  CHECK(lru.insert(2, item("b")) == nullptr);
  CHECK(lru.insert(1, item("c")) == nullptr);  // the same hash as "a": told apart by equality
  CHECK(lru.size() == 3);
  REQUIRE(lru.find(1, is("a")) != nullptr);
  CHECK(*lru.find(1, is("c")) == "c");
  CHECK(lru.find(1, is("b")) == nullptr);  // "b" is under another hash
  CHECK(lru.find(3, is("a")) == nullptr);
  CHECK(*lru.mostRecent() == "c");
  // Use order now (most recent first): c, a, b. A fourth drops b.
  auto dropped = lru.insert(4, item("d"));
  REQUIRE(dropped != nullptr);
  CHECK(*dropped == "b");
  CHECK(lru.size() == 3);
  CHECK(lru.find(2, is("b")) == nullptr);
  // a, then c found again: d is the least recent.
  CHECK(lru.find(1, is("a")) != nullptr);
  CHECK(lru.find(1, is("c")) != nullptr);
  dropped = lru.insert(5, item("e"));
  REQUIRE(dropped != nullptr);
  CHECK(*dropped == "d");
  std::string order;
  lru.forEach([&](const std::string& s) { order += s; });
  CHECK(order == "eca");
  // The dropped hash's other entries stay findable.
  dropped = lru.insert(6, item("f"));
  REQUIRE(dropped != nullptr);
  CHECK(*dropped == "a");
  CHECK(lru.find(1, is("c")) != nullptr);
  CHECK(lru.find(1, is("a")) == nullptr);
}

TEST_CASE("signature index: a capacity of one keeps the newest", "[runtime]") {
  SignatureLru<std::string> lru(0);  // taken as 1
  CHECK(lru.capacity() == 1);
  CHECK(lru.insert(7, item("x")) == nullptr);
  auto dropped = lru.insert(7, item("y"));
  REQUIRE(dropped != nullptr);
  CHECK(*dropped == "x");
  CHECK(lru.find(7, is("y")) != nullptr);
  CHECK(lru.find(7, is("x")) == nullptr);
}
