#pragma once
// A tensor value of a fusion: dtype and axes. Each axis is an iteration axis with an extent, or
// a broadcast axis (extent 1, stretched to whatever it meets). Rank 0 is a scalar. Values are
// created only by Fusion (inputs, op outputs) and never change.
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/extent.h"

namespace loom::ir {

class Op;
class Fusion;

// The kind of an iteration domain. Tensor axes are Iteration or Broadcast; Reduction marks the
// input axes a reduction consumes (compiler/analysis).
enum class IterKind : uint8_t { Iteration, Reduction, Broadcast };

struct Axis {
  Extent extent;
  bool broadcast = false;
  bool operator==(const Axis&) const = default;
  static Axis iter(Extent e) { return {std::move(e), false}; }
  static Axis bcast() { return {Extent(1), true}; }
};

// `f16[N, 1024, 1b]`: `1b` is a broadcast axis.
std::string typeStr(DType dtype, const std::vector<Axis>& axes);

class Value {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  const std::vector<Axis>& axes() const { return axes_; }
  const Axis& axis(size_t i) const { return axes_.at(i); }
  int rank() const { return static_cast<int>(axes_.size()); }
  std::vector<Extent> shape() const;
  const Op* definition() const { return def_; }  // null for fusion inputs
  bool isInput() const { return def_ == nullptr; }
  const Fusion* fusion() const { return fusion_; }
  std::string typeString() const { return typeStr(dtype_, axes_); }

 private:
  friend class Fusion;
  Value(const Fusion* f, int id, std::string name, DType t, std::vector<Axis> axes)
      : fusion_(f), id_(id), name_(std::move(name)), dtype_(t), axes_(std::move(axes)) {}
  const Fusion* fusion_;
  int id_;
  std::string name_;
  DType dtype_;
  std::vector<Axis> axes_;
  const Op* def_ = nullptr;
};

}  // namespace loom::ir
