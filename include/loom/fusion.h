#pragma once
// A fusion: a small graph of pointwise, reduction, reshape and broadcast ops over named input
// tensors, with named outputs. Made by a FusionBuilder (loom/builder.h), parsed from the text
// format, or one of loom's built-ins; printed in the text format. A move-only handle.
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <loom/dtype.h>
#include <loom/export.h>
#include <loom/extent.h>

// Declared outside the exported region: these types stay hidden.
namespace loom {
namespace ir {
class Fusion;  // loom's IR: opaque outside loom
}
}  // namespace loom

#pragma GCC visibility push(default)
namespace loom {

class Fusion {
 public:
  // The text format (`loom print` prints any fusion in it); an error names the
  // line and column.
  static Fusion parse(std::string_view text, std::string_view source_name = "<input>");
  static Fusion parseFile(const std::string& path);
  // A built-in (`loom examples`: layer_norm, group_norm, ...) with its main tensors in `dtype`
  // (default: the built-in's own); its example sizes, what `loom run NAME` uses.
  static Fusion builtin(const std::string& name, std::optional<DType> dtype = std::nullopt);
  static Bindings builtinSizes(const std::string& name);
  // A framework op (loom_builtins_json lists them: a norm's forward with the statistics its backward reads, or that
  // backward) with its parameters as "key=value,..." text, e.g. ("layer_norm", "x=f16,w=f32"):
  // what a framework integration runs for a module (the C ABI's loom_fusion_op).
  static Fusion frameworkOp(const std::string& op, const std::string& params);
  static std::vector<std::string> builtinNames();

  Fusion(Fusion&&) noexcept;
  Fusion& operator=(Fusion&&) noexcept;
  ~Fusion();

  const std::string& name() const;
  std::vector<std::string> inputNames() const;
  std::vector<std::string> outputNames() const;
  // Per output, the index of the input it is written back into in place (batch norm's running
  // statistics), or -1.
  std::vector<int> outputAliases() const;
  // The text format: parse(str()) gives the same fusion.
  std::string str() const;

  // False once moved from.
  explicit operator bool() const { return f_ != nullptr; }

#ifdef LOOM_INTERNAL_API
  // loom's own code: the IR behind the handle, and the handle over one.
  LOOM_HIDDEN explicit Fusion(std::unique_ptr<ir::Fusion> f);
  ir::Fusion& operator*() const { return *f_; }
  ir::Fusion* operator->() const { return f_.get(); }
  ir::Fusion* get() const { return f_.get(); }
  // The IR, or a loom::Error where the handle was moved from (every public entry point's check).
  LOOM_HIDDEN const ir::Fusion& held() const;
  LOOM_HIDDEN operator std::unique_ptr<ir::Fusion>() &&;  // NOLINT: hands the IR over
#endif

 private:
  std::unique_ptr<ir::Fusion> f_;
};

std::ostream& operator<<(std::ostream& os, const Fusion& f);

}  // namespace loom
#pragma GCC visibility pop
