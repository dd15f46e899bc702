#pragma once
// A fusion: a graph of ops over tensor values, with named inputs and outputs. It owns its
// values and ops. Every factory checks its arguments (ir/infer.cpp) and throws loom::Error with
// what was wrong; a Fusion that exists is well-formed.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ir/op.h"
#include "ir/value.h"

namespace loom::ir {

struct Output {
  std::string name;
  const Value* value;
  const Value* alias = nullptr;  // an input this output is written back into, in place
};

class Fusion {
 public:
  explicit Fusion(std::string name = "fusion");
  Fusion(const Fusion&) = delete;
  Fusion& operator=(const Fusion&) = delete;

  const std::string& name() const { return name_; }

  const Value* addInput(const std::string& name, DType dtype, std::vector<Axis> axes);
  // Checks and types the op; names its outputs (given or fresh `tN` names).
  const Op* addOp(OpKind kind, std::vector<const Value*> inputs, Attrs attrs = NoAttrs{},
                  std::vector<std::string> output_names = {});
  void addOutput(const std::string& name, const Value* v, const Value* alias = nullptr);
  // Gives an op's output `v` the unused `name` (the text format names a composite call's results
  // so); only while the fusion is open, never an input.
  void renameValue(const Value* v, const std::string& name);

  const std::vector<const Value*>& inputs() const { return inputs_; }
  const std::vector<Output>& outputs() const { return outputs_; }
  // Ops in creation order, which is a topological order.
  std::vector<const Op*> ops() const;
  std::vector<const Value*> values() const;
  const Value* findValue(const std::string& name) const;  // null if none
  const Value* input(const std::string& name) const;      // throws if none
  // `v`'s index among the inputs, or -1 (also for null: an output's absent alias).
  int inputIndex(const Value* v) const;
  // Every symbol used by input shapes, sorted.
  std::vector<std::string> symbols() const;
  // Ops that consume `v`, in creation order.
  std::vector<const Op*> uses(const Value* v) const;

  // Whole-graph checks the factories cannot make alone (outputs present, names unique,
  // aliases well-typed). Throws loom::Error.
  void verify() const;

  // Set by FusionBuilder::finish: from then on the fusion is immutable, and adding an input, an
  // op or an output (through a tensor handle kept from building) is a loom::Error.
  void markFinished() { finished_ = true; }

  // A fact derived from this fusion alone (its domain analysis, its text): `make`'s result, kept
  // under `what` once the fusion is finished (it then never changes), so that scheduling it at
  // another size does not derive it again; made afresh each time before. Thread-safe.
  std::shared_ptr<const void> derived(const std::string& what,
                                      const std::function<std::shared_ptr<const void>()>& make) const;

 private:
  void checkOpen(std::string_view what) const;
  const Value* newValue(std::string name, DType t, std::vector<Axis> axes, const Op* def);
  std::string freshName();
  void checkOwned(const Value* v, std::string_view what) const;

  std::string name_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<const Value*> inputs_;
  std::vector<Output> outputs_;
  int next_temp_ = 0;
  bool finished_ = false;
  mutable std::mutex derived_mu_;
  mutable std::map<std::string, std::shared_ptr<const void>> derived_;
};

// Structural equality: same inputs, ops (kinds, attributes, operands), value names and outputs.
// Without `value_names`, the values of ops are matched by their place instead of their names.
bool structurallyEqual(const Fusion& a, const Fusion& b, bool value_names = true);

// Output types of an op (the checking half of addOp); throws loom::Error.
struct TypedOutput {
  DType dtype;
  std::vector<Axis> axes;
};
std::vector<TypedOutput> inferOutputs(OpKind kind, const std::vector<const Value*>& inputs,
                                      const Attrs& attrs);

}  // namespace loom::ir
