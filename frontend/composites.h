#pragma once
// Public: include/loom/composites.h.
#include <loom/composites.h>

#include "frontend/builder.h"
