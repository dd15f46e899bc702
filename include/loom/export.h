#pragma once
// libloom exports only what the public headers declare: they wrap their declarations in
// `#pragma GCC visibility push(default)` (loom is compiled with hidden visibility), and mark
// the few members only loom's own code may call LOOM_HIDDEN.
#define LOOM_HIDDEN __attribute__((visibility("hidden")))
