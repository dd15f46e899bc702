#pragma once
// Public: include/loom/host_tensor.h.
#include <loom/host_tensor.h>
