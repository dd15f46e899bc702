#pragma once
// Public: include/loom/dtype.h.
#include <loom/dtype.h>
