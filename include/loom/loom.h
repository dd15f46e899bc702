#pragma once
// The one header a loom user includes (`#include <loom/loom.h>`): the builder API, composite ops
// and their backward, fusions (the text format, built-ins, printing), the CPU reference
// evaluator and its comparison, the GPU runtime (the executor, device tensors, whether a GPU is
// there), errors, tuning options and loom's version. It and the headers it includes need only
// the C++20 standard library: nothing of LLVM, CUDA or loom's internals.
#include <loom/builder.h>
#include <loom/composites.h>
#include <loom/composites_backward.h>
#include <loom/device_tensor.h>
#include <loom/dtype.h>
#include <loom/error.h>
#include <loom/executor.h>
#include <loom/extent.h>
#include <loom/fusion.h>
#include <loom/host_tensor.h>
#include <loom/reference.h>
#include <loom/tensor_desc.h>
#include <loom/tuning.h>
#include <loom/version.h>
