#pragma once
// libloom exports only what the public headers declare: they wrap their declarations in
// `#pragma GCC visibility push(default)` (loom is compiled with hidden visibility), and mark
// the few members only loom's own code may call LOOM_HIDDEN.
#define LOOM_HIDDEN __attribute__((visibility("hidden")))
// Members over loom's internal types (ir::Fusion, ir::Value, CompiledPlan) exist only where
// loom's own code is compiled (LOOM_INTERNAL_API, set for the library's objects and for what
// links loom_static): elsewhere they are not declared at all, so a user's call to one fails to
// compile instead of failing to link. They add no data: a class's layout is the same either way.
