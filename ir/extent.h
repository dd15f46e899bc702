#pragma once
// Public: include/loom/extent.h.
#include <loom/extent.h>
