#pragma once
// What loom's own CLI and tests include: the public API (<loom/loom.h>) with the internal
// headers behind it (the IR, the parser and built-ins, the reference evaluator's internals,
// the runtime's), whose symbols only loom_static exports.
#include <loom/loom.h>

#include "frontend/builder.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "frontend/examples.h"
#include "frontend/parser.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/printer.h"
#include "reference/compare.h"
#include "reference/reference.h"
#include "runtime/bind_sizes.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_tensor.h"
#include "runtime/executor.h"
#include "runtime/host_tensor.h"
