#pragma once
// Public: include/loom/tensor_desc.h.
#include <loom/tensor_desc.h>
