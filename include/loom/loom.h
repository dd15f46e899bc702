#pragma once
// The one header a loom user includes (`#include <loom/loom.h>`): the builder API, composite ops
// and their backward, the text format, the CPU reference evaluator and its comparison, and the
// GPU runtime (the executor, device tensors, whether a GPU is there), and loom's version.
#include <loom/version.h>

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
#include "runtime/executor.h"
#include "runtime/host_tensor.h"
