#pragma once
// Public: include/loom/tuning.h.
#include <loom/tuning.h>
