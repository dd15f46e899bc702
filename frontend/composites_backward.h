#pragma once
// Public: include/loom/composites_backward.h.
#include <loom/composites_backward.h>

#include "frontend/builder.h"
