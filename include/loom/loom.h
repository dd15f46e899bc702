#pragma once
// The one header a loom user includes: the builder API, composite ops and their backward, the
// text format, the CPU reference evaluator and the GPU runtime.
#include "frontend/builder.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "frontend/examples.h"
#include "frontend/parser.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/printer.h"
#include "reference/reference.h"
#include "runtime/bind_sizes.h"
#include "runtime/host_tensor.h"
