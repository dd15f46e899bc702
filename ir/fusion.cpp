#include "ir/fusion.h"

#include <algorithm>
#include <set>

#include "ir/error.h"

namespace loom::ir {

std::vector<Extent> Value::shape() const {
  std::vector<Extent> s;
  for (const auto& a : axes_) s.push_back(a.extent);
  return s;
}

std::string typeStr(DType dtype, const std::vector<Axis>& axes) {
  std::string s = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? ", " : "") + (axes[i].broadcast ? std::string("1b") : axes[i].extent.str());
  return s + "]";
}

Fusion::Fusion(std::string name) : name_(std::move(name)) {}

std::shared_ptr<const void> Fusion::derived(const std::string& what,
                                            const std::function<std::shared_ptr<const void>()>& make) const {
  if (!finished_) return make();
  {
    std::lock_guard<std::mutex> lock(derived_mu_);
    if (auto it = derived_.find(what); it != derived_.end()) return it->second;
  }
  std::shared_ptr<const void> made = make();  // (unlocked: `make` may ask for other facts)
  std::lock_guard<std::mutex> lock(derived_mu_);
  return derived_.emplace(what, std::move(made)).first->second;  // a racing thread's, if first
}

static bool isIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

const Value* Fusion::newValue(std::string name, DType t, std::vector<Axis> axes, const Op* def) {
  LOOM_USER_CHECK(isIdentifier(name),
                  "`{}` is not a valid value name: use letters, digits and `_`, not starting "
                  "with a digit", name);
  LOOM_USER_CHECK(findValue(name) == nullptr, "fusion `{}` already has a value named `{}`", name_,
                  name);
  auto v = std::unique_ptr<Value>(
      new Value(this, static_cast<int>(values_.size()), std::move(name), t, std::move(axes)));
  v->def_ = def;
  values_.push_back(std::move(v));
  return values_.back().get();
}

std::string Fusion::freshName() {
  for (;;) {
    std::string n = std::string("t").append(std::to_string(next_temp_++));
    if (!findValue(n)) return n;
  }
}

void Fusion::checkOwned(const Value* v, std::string_view what) const {
  LOOM_USER_CHECK(v != nullptr, "{} of fusion `{}` is a null value", what, name_);
  LOOM_USER_CHECK(v->fusion() == this,
                  "{} `{}` belongs to fusion `{}`, not to `{}`: values cannot cross fusions",
                  what, v->name(), v->fusion()->name(), name_);
}

void Fusion::checkOpen(std::string_view what) const {
  LOOM_USER_CHECK(!finished_, "fusion `{}` is finished (FusionBuilder::finish handed it over): {} cannot be added to "
                  "it through a tensor handle kept from building; build a new fusion", name_, what);
}

const Value* Fusion::addInput(const std::string& name, DType dtype, std::vector<Axis> axes) {
  checkOpen("an input");
  for (const auto& a : axes)
    LOOM_USER_CHECK(!a.broadcast || a.extent.isOne(), "input `{}`: a broadcast axis has extent 1",
                    name);
  const Value* v = newValue(name, dtype, std::move(axes), nullptr);
  inputs_.push_back(v);
  return v;
}

const Op* Fusion::addOp(OpKind kind, std::vector<const Value*> inputs, Attrs attrs,
                        std::vector<std::string> output_names) {
  checkOpen("an op");
  for (size_t i = 0; i < inputs.size(); ++i)
    checkOwned(inputs[i], fmt::format("operand {} of `{}`", i, opName(kind)));
  std::vector<TypedOutput> outs = inferOutputs(kind, inputs, attrs);
  LOOM_USER_CHECK(output_names.empty() || output_names.size() == outs.size(),
                  "`{}` has {} outputs but {} names were given", opName(kind), outs.size(),
                  output_names.size());
  auto op = std::unique_ptr<Op>(
      new Op(static_cast<int>(ops_.size()), kind, std::move(inputs), std::move(attrs)));
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string n = output_names.empty() ? freshName() : output_names[i];
    op->outputs_.push_back(newValue(n, outs[i].dtype, std::move(outs[i].axes), op.get()));
  }
  ops_.push_back(std::move(op));
  return ops_.back().get();
}

void Fusion::renameValue(const Value* v, const std::string& name) {
  checkOpen("a value's new name");
  checkOwned(v, fmt::format("value renamed `{}`", name));
  LOOM_USER_CHECK(!v->isInput(), "input `{}` cannot be renamed `{}`", v->name(), name);
  LOOM_USER_CHECK(isIdentifier(name), "`{}` is not a valid value name", name);
  const Value* other = findValue(name);
  LOOM_USER_CHECK(other == nullptr || other == v, "fusion `{}` already has a value named `{}`", name_, name);
  values_[static_cast<size_t>(v->id())]->name_ = name;
}

void Fusion::addOutput(const std::string& name, const Value* v, const Value* alias) {
  checkOpen("an output");
  checkOwned(v, fmt::format("output `{}`", name));
  LOOM_USER_CHECK(isIdentifier(name), "`{}` is not a valid output name", name);
  for (const auto& o : outputs_)
    LOOM_USER_CHECK(o.name != name, "fusion `{}` already has an output named `{}`", name_, name);
  if (alias) {
    checkOwned(alias, fmt::format("alias of output `{}`", name));
    LOOM_USER_CHECK(alias->isInput(), "output `{}` aliases `{}`, which is not a fusion input",
                    name, alias->name());
    LOOM_USER_CHECK(alias->dtype() == v->dtype() && alias->shape() == v->shape(),
                    "output `{}` ({}) aliases input `{}` ({}): types must match", name,
                    v->typeString(), alias->name(), alias->typeString());
    for (const auto& o : outputs_)
      LOOM_USER_CHECK(o.alias != alias, "input `{}` is aliased by two outputs (`{}` and `{}`)",
                      alias->name(), o.name, name);
  }
  outputs_.push_back({name, v, alias});
}

std::vector<const Op*> Fusion::ops() const {
  std::vector<const Op*> out;
  for (const auto& o : ops_) out.push_back(o.get());
  return out;
}

std::vector<const Value*> Fusion::values() const {
  std::vector<const Value*> out;
  for (const auto& v : values_) out.push_back(v.get());
  return out;
}

const Value* Fusion::findValue(const std::string& name) const {
  for (const auto& v : values_)
    if (v->name() == name) return v.get();
  return nullptr;
}

const Value* Fusion::input(const std::string& name) const {
  for (const Value* v : inputs_)
    if (v->name() == name) return v;
  std::string names;
  for (const Value* v : inputs_) names += (names.empty() ? "" : ", ") + v->name();
  fail("fusion `{}` has no input `{}`; its inputs are: {}", name_, name, names);
}

int Fusion::inputIndex(const Value* v) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (v && inputs_[i] == v) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> Fusion::symbols() const {
  std::set<std::string> s;
  for (const Value* v : inputs_)
    for (const auto& a : v->axes())
      for (auto& sym : a.extent.symbols()) s.insert(sym);
  for (const auto& op : ops_)  // `full`, `iota` and random numbers may introduce sizes of their own
    if (isCreation(op->kind()))
      for (const auto& e : op->attr<ScalarAttrs>().shape)
        for (auto& sym : e.symbols()) s.insert(sym);
  return {s.begin(), s.end()};
}

std::vector<const Op*> Fusion::uses(const Value* v) const {
  std::vector<const Op*> out;
  for (const auto& op : ops_)
    if (std::find(op->inputs().begin(), op->inputs().end(), v) != op->inputs().end())
      out.push_back(op.get());
  return out;
}

void Fusion::verify() const {
  LOOM_USER_CHECK(!outputs_.empty(), "fusion `{}` has no outputs; declare at least one", name_);
  for (const auto& o : outputs_)
    LOOM_USER_CHECK(!o.value->isInput() || o.alias == nullptr,
                    "output `{}` is input `{}` itself; an aliased output must be computed",
                    o.name, o.value->name());
}

namespace {
// The same value in both: by name, or by position (id) where `names` is false, and by type.
bool sameValue(const Value* a, const Value* b, bool names) {
  if (!a || !b) return a == b;
  const bool same = names ? a->name() == b->name() : a->id() == b->id() && a->isInput() == b->isInput();
  return same && a->dtype() == b->dtype() && a->axes() == b->axes();
}
}  // namespace

bool structurallyEqual(const Fusion& a, const Fusion& b, bool value_names) {
  auto same = [&](const Value* x, const Value* y) { return sameValue(x, y, value_names); };
  if (a.name() != b.name() || a.inputs().size() != b.inputs().size()) return false;
  for (size_t i = 0; i < a.inputs().size(); ++i)
    if (!sameValue(a.inputs()[i], b.inputs()[i], true)) return false;
  auto oa = a.ops(), ob = b.ops();
  if (oa.size() != ob.size()) return false;
  for (size_t i = 0; i < oa.size(); ++i) {
    if (oa[i]->kind() != ob[i]->kind() || !(oa[i]->attrs() == ob[i]->attrs())) return false;
    if (oa[i]->inputs().size() != ob[i]->inputs().size()) return false;
    for (size_t j = 0; j < oa[i]->inputs().size(); ++j)
      if (!same(oa[i]->input(j), ob[i]->input(j))) return false;
    if (oa[i]->outputs().size() != ob[i]->outputs().size()) return false;
    for (size_t j = 0; j < oa[i]->outputs().size(); ++j)
      if (!same(oa[i]->output(j), ob[i]->output(j))) return false;
  }
  if (a.outputs().size() != b.outputs().size()) return false;
  for (size_t i = 0; i < a.outputs().size(); ++i) {
    const auto &x = a.outputs()[i], &y = b.outputs()[i];
    if (x.name != y.name || !same(x.value, y.value) || !same(x.alias, y.alias)) return false;
  }
  return true;
}

}  // namespace loom::ir
