// Recursive descent over the text format: a file holds one `fusion NAME { statement* }`, each
// statement an input, an op line or an output. Values must be defined before they are used.
#include "frontend/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include "frontend/parse_values.h"
#include "frontend/text_composites.h"

namespace loom {

namespace {

using text::Loc;
using text::Token;
using text::TokenStream;
using text::TypeDecl;

// ---- Attributes: which keys each family takes, and turning them into ir::Attrs ----------

enum class AttrKind { DType, Bool, Int, Number, IntList, BoolList, ExtentList, ReshapeList };

struct AttrSpec {
  std::string_view key;
  AttrKind kind;
  bool required = true;
};

std::vector<AttrSpec> attrSpecs(ir::OpFamily f) {
  using F = ir::OpFamily;
  using K = AttrKind;
  switch (f) {
    case F::Cast:
    case F::Bitcast: return {{"to", K::DType}};
    case F::Reduce: return {{"dims", K::IntList}, {"keepdim", K::Bool, false}};
    case F::VarMean:
      return {{"dims", K::IntList}, {"correction", K::Number, false}, {"keepdim", K::Bool, false}};
    case F::ArgReduce: return {{"dim", K::Int}, {"keepdim", K::Bool, false}};
    case F::Broadcast: return {{"new", K::BoolList}};
    case F::Reshape: return {{"shape", K::ReshapeList}};
    case F::Permute: return {{"order", K::IntList}};
    case F::Squeeze: return {{"dims", K::IntList}};
    case F::Unsqueeze:
    case F::Gather:
    case F::Concat: return {{"dim", K::Int}};
    case F::Slice: return {{"starts", K::ExtentList}, {"stops", K::ExtentList}};
    case F::Constant: return {{"value", K::Number}, {"dtype", K::DType}};
    case F::Full: return {{"value", K::Number}, {"dtype", K::DType}, {"shape", K::ExtentList}};
    case F::Iota: return {{"dtype", K::DType}, {"shape", K::ExtentList}, {"dim", K::Int}};
    case F::Random: return {{"dtype", K::DType}, {"shape", K::ExtentList}};
    default: return {};
  }
}

// A reshape's target shape: nullopt for its one `-1` (the size the others leave).
using ReshapeShape = std::vector<std::optional<Extent>>;
using AttrValue = std::variant<DType, bool, int, double, std::vector<int>, std::vector<bool>,
                               std::vector<Extent>, ReshapeShape>;

class AttrBag {
 public:
  bool has(std::string_view key) const { return values_.count(std::string(key)) != 0; }
  void set(std::string_view key, AttrValue v) { values_[std::string(key)] = std::move(v); }
  template <typename T>
  T get(const std::string& key, T fallback = T()) const {
    auto it = values_.find(key);
    return it == values_.end() ? fallback : std::get<T>(it->second);
  }

 private:
  std::map<std::string, AttrValue> values_;
};

AttrValue parseAttrValue(TokenStream& ts, AttrKind kind) {
  switch (kind) {
    case AttrKind::DType: return text::parseDType(ts);
    case AttrKind::Bool: return text::parseBool(ts);
    case AttrKind::Int: return text::parseInt(ts);
    case AttrKind::Number: return text::parseNumber(ts);
    case AttrKind::IntList: return text::parseList(ts, [&] { return text::parseInt(ts); });
    case AttrKind::BoolList: return text::parseList(ts, [&] { return text::parseBool(ts); });
    case AttrKind::ExtentList: return text::parseList(ts, [&] { return text::parseExtent(ts); });
    case AttrKind::ReshapeList: {
      bool inferred = false;
      return text::parseList(ts, [&]() -> std::optional<Extent> {
        const Loc at = ts.peek().loc;
        if (!ts.accept('-')) return text::parseExtent(ts);
        if (!(ts.peek().kind == text::TokKind::Number && ts.peek().text == "1"))
          ts.error(at, "a reshape's shape takes sizes, and -1 once for the size the others leave");
        ts.next();
        if (inferred) ts.error(at, "-1 may appear only once in a reshape's shape");
        inferred = true;
        return std::nullopt;
      });
    }
  }
  return {};
}

// A reshape's shape with its -1 resolved: the operand's elements over the other sizes' (as the
// builder's reshape does; whole sizes are checked when the fusion's sizes are bound).
std::vector<Extent> resolveShape(const ReshapeShape& shape, const std::vector<const ir::Value*>& operands) {
  Extent known(1);
  for (const auto& e : shape)
    if (e) known = known * *e;
  std::vector<Extent> out;
  for (const auto& e : shape) {
    if (e) {
      out.push_back(*e);
    } else if (operands.size() != 1) {
      out.push_back(Extent(1));  // the op's own check names the operand count
    } else {
      Extent total(1);
      for (const auto& d : operands[0]->shape()) total = total * d;
      out.push_back(total / known);
    }
  }
  return out;
}

ir::Attrs buildAttrs(ir::OpFamily f, const AttrBag& b, const std::vector<const ir::Value*>& operands) {
  using F = ir::OpFamily;
  using Ints = std::vector<int>;
  using Extents = std::vector<Extent>;
  switch (f) {
    case F::Cast:
    case F::Bitcast: return ir::CastAttrs{b.get<DType>("to")};
    case F::Reduce:
    case F::VarMean:
      return ir::ReduceAttrs{b.get<Ints>("dims"), b.get<bool>("keepdim", false),
                             b.get<double>("correction", 0.0)};
    case F::ArgReduce: return ir::ReduceAttrs{{b.get<int>("dim")}, b.get<bool>("keepdim", false), 0.0};
    case F::Broadcast: return ir::BroadcastAttrs{b.get<std::vector<bool>>("new")};
    case F::Reshape: return ir::ShapeAttrs{resolveShape(b.get<ReshapeShape>("shape"), operands)};
    case F::Permute: return ir::DimsAttrs{b.get<Ints>("order")};
    case F::Squeeze: return ir::DimsAttrs{b.get<Ints>("dims")};
    case F::Unsqueeze:
    case F::Gather:
    case F::Concat: return ir::DimsAttrs{{b.get<int>("dim")}};
    case F::Slice: return ir::SliceAttrs{b.get<Extents>("starts"), b.get<Extents>("stops")};
    case F::Constant: return ir::ScalarAttrs{b.get<double>("value"), b.get<DType>("dtype"), {}};
    case F::Full:
      return ir::ScalarAttrs{b.get<double>("value"), b.get<DType>("dtype"), b.get<Extents>("shape")};
    case F::Iota: return ir::ScalarAttrs{0, b.get<DType>("dtype"), b.get<Extents>("shape"), b.get<int>("dim")};
    case F::Random: return ir::ScalarAttrs{0, b.get<DType>("dtype"), b.get<Extents>("shape")};
    default: return ir::NoAttrs{};
  }
}

// ---- Suggestions for misspelt names ----------------------------------------------------

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// `; did you mean `x`?` when some candidate is close to `name`, else "".
std::string suggest(std::string_view name, const std::vector<std::string>& candidates) {
  size_t best = std::max<size_t>(1, name.size() / 3) + 1;
  std::string pick;
  for (const auto& c : candidates) {
    size_t d = editDistance(name, c);
    if (d < best) {
      best = d;
      pick = c;
    }
  }
  return pick.empty() ? "" : fmt::format("; did you mean `{}`?", pick);
}

// ---- The parser ------------------------------------------------------------------------

struct Call {
  ir::OpKind kind;
  Loc loc;  // of the op name
  std::vector<const ir::Value*> operands;
  AttrBag attrs;
};

struct Target {  // one `name[: type]` left of `=`
  std::string name;
  Loc loc;
  std::optional<TypeDecl> type;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view source_name) : ts_(text, source_name) {}
  std::unique_ptr<ir::Fusion> parseFile();

 private:
  std::string parseFusionName();
  void parseStatement();
  void parseInput();
  void parseOutput();
  void parseOpLine();
  void parseCompositeCall(const std::vector<Target>& targets);
  void parseCompositeArgument(const text::CompositeSpec& spec, text::CompositeArgs& args, bool* keywords);
  void bindResult(const std::string& name, const ir::Value* v, size_t made_from);
  Target parseTarget();
  Call parseCall();
  void parseArgument(Call& c, bool* keywords);
  void parseKeyword(Call& c);
  void checkTypes(const std::vector<Target>& targets, const ir::Op& op);
  const Token& newName(std::string_view what);
  const ir::Value* parseValueRef(std::string_view what);

  TokenStream ts_;
  std::unique_ptr<ir::Fusion> f_;
  std::map<std::string, Loc> defined_;
  std::map<std::string, const ir::Value*> bound_;  // names of composite results not renamed to them
  std::set<const ir::Value*> renamed_;              // composite results named by the text
};

std::unique_ptr<ir::Fusion> Parser::parseFile() {
  if (!ts_.peek().isIdent("fusion")) ts_.expected("`fusion`");
  ts_.next();
  f_ = std::make_unique<ir::Fusion>(parseFusionName());
  ts_.expect('{');
  while (!ts_.accept('}')) {
    if (ts_.peek().kind == text::TokKind::End) ts_.expected("`}`");
    parseStatement();
  }
  if (ts_.peek().kind != text::TokKind::End)
    ts_.expected("end of input after the fusion's closing `}` (a file holds one fusion)");
  f_->markFinished();  // (as FusionBuilder::finish: complete, never changed from here)
  return std::move(f_);
}

std::string Parser::parseFusionName() {
  const Token& t = ts_.peek();
  if (!t.isIdent() && t.kind != text::TokKind::String) ts_.expected("a fusion name");
  return ts_.next().text;
}

void Parser::parseStatement() {
  const Token& t = ts_.peek();
  bool keyword = ts_.peek(1).isIdent();  // `in x: ...` / `out y = ...`, not a value named `in`
  if (t.isIdent("in") && keyword) return parseInput();
  if (t.isIdent("out") && keyword) return parseOutput();
  if (t.isIdent()) return parseOpLine();
  ts_.expected("a statement (`in`, `out` or `name: type = op(...)`) or `}`");
}

// A name for a new value: unused so far.
const Token& Parser::newName(std::string_view what) {
  const Token& t = ts_.expectIdent(what);
  auto it = defined_.find(t.text);
  if (it != defined_.end())
    ts_.error(t.loc, fmt::format("`{}` is already defined at line {}, column {}", t.text,
                                 it->second.line, it->second.col));
  if (f_->findValue(t.text))
    ts_.error(t.loc, fmt::format("`{}` is already the name of a value a composite call made; choose another name",
                                 t.text));
  defined_[t.text] = t.loc;
  return t;
}

const ir::Value* Parser::parseValueRef(std::string_view what) {
  const Token& t = ts_.expectIdent(what);
  if (auto it = bound_.find(t.text); it != bound_.end()) return it->second;
  if (const ir::Value* v = f_->findValue(t.text)) return v;
  std::vector<std::string> names;
  for (const ir::Value* v : f_->values()) names.push_back(v->name());
  for (const auto& [name, v] : bound_) names.push_back(name);
  ts_.error(t.loc, fmt::format("unknown value `{}`{}", t.text, suggest(t.text, names)));
}

void Parser::parseInput() {
  ts_.next();  // `in`
  const Token& name = newName("an input name");
  ts_.expect(':');
  TypeDecl type = text::parseType(ts_);
  ts_.located(name.loc, [&] { f_->addInput(name.text, type.dtype, type.axes); });
}

void Parser::parseOutput() {
  ts_.next();  // `out`
  const Token& name = ts_.expectIdent("an output name");
  ts_.expect('=');
  const ir::Value* v = parseValueRef("a value name");
  const ir::Value* alias = nullptr;
  if (ts_.peek().isIdent("alias") && ts_.peek(1).isIdent()) {
    ts_.next();
    alias = parseValueRef("an input name");
  }
  ts_.located(name.loc, [&] { f_->addOutput(name.text, v, alias); });
}

Target Parser::parseTarget() {
  const Token& name = newName("a value name");
  Target t{name.text, name.loc, std::nullopt};
  if (ts_.accept(':')) t.type = text::parseType(ts_);
  return t;
}

void Parser::parseOpLine() {
  std::vector<Target> targets{parseTarget()};
  while (ts_.accept(',')) targets.push_back(parseTarget());
  if (!ts_.peek().is('=')) ts_.expected(targets.back().type ? "`=`" : "`:` or `=`");
  ts_.next();
  ir::OpKind primitive;
  if (ts_.peek().isIdent() && !ir::parseOpKind(ts_.peek().text, &primitive) && text::findComposite(ts_.peek().text))
    return parseCompositeCall(targets);
  Call c = parseCall();
  std::vector<std::string> names;
  for (const auto& t : targets) names.push_back(t.name);
  ir::Attrs attrs = ts_.located(c.loc, [&] { return buildAttrs(ir::opFamily(c.kind), c.attrs, c.operands); });
  const ir::Op* op = ts_.located(c.loc, [&] {
    return f_->addOp(c.kind, c.operands, std::move(attrs), names);
  });
  checkTypes(targets, *op);
}

void Parser::checkTypes(const std::vector<Target>& targets, const ir::Op& op) {
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& decl = targets[i].type;
    const ir::Value* v = op.output(i);
    if (!decl || (decl->dtype == v->dtype() && decl->axes == v->axes())) continue;
    ts_.error(decl->loc, fmt::format("`{}` is declared as {} but `{}` gives it type {}", v->name(),
                                     ir::typeStr(decl->dtype, decl->axes), op.name(),
                                     v->typeString()));
  }
}

Call Parser::parseCall() {
  const Token& name = ts_.expectIdent("an op name");
  Call c{ir::OpKind{}, name.loc, {}, {}};
  if (!ir::parseOpKind(name.text, &c.kind)) {
    std::vector<std::string> ops;
    for (ir::OpKind k : ir::allOpKinds()) ops.emplace_back(ir::opName(k));
    for (const auto& spec : text::composites()) ops.emplace_back(spec.name);
    ts_.error(name.loc, fmt::format("unknown op `{}`{}", name.text, suggest(name.text, ops)));
  }
  ts_.expect('(');
  bool keywords = false;
  if (!ts_.peek().is(')')) {
    do parseArgument(c, &keywords);
    while (ts_.accept(','));
  }
  const Token& close = ts_.peek();
  if (!close.is(')')) ts_.expected("`,` or `)`");
  for (const AttrSpec& s : attrSpecs(ir::opFamily(c.kind)))
    if (s.required && !c.attrs.has(s.key))
      ts_.error(close.loc, fmt::format("`{}` needs the attribute `{}`", ir::opName(c.kind), s.key));
  ts_.next();
  return c;
}

// A composite's call (text_composites.h): its ops are added here, its results bound to the names.
void Parser::parseCompositeCall(const std::vector<Target>& targets) {
  const Token& name = ts_.next();
  const text::CompositeSpec& spec = *text::findComposite(name.text);
  text::CompositeArgs args{spec.name, {}, {}, targets.size()};
  ts_.expect('(');
  bool keywords = false;
  if (!ts_.peek().is(')')) {
    do parseCompositeArgument(spec, args, &keywords);
    while (ts_.accept(','));
  }
  const Token& close = ts_.peek();
  if (!close.is(')')) ts_.expected("`,` or `)`");
  args.operands.resize(spec.operands.size());
  for (size_t i = 0; i < spec.operands.size(); ++i)
    if (spec.operands[i].back() != '?' && !args.operands[i])
      ts_.error(close.loc, fmt::format("`{}` needs its operand `{}`; its operands are {} (? marks optional ones)",
                                       spec.name, spec.operands[i], fmt::join(spec.operands, ", ")));
  for (const auto& p : spec.params)
    if (p.required && !args.params.count(p.key))
      ts_.error(close.loc, fmt::format("`{}` needs the parameter `{}`", spec.name, p.key));
  ts_.next();
  const size_t made_from = f_->values().size();  // values with ids from here on are this call's
  auto results = ts_.located(name.loc, [&] { return spec.build(args); });
  if (results.size() != targets.size()) {
    std::vector<std::string_view> got;
    for (const auto& r : results) got.push_back(r.name);
    ts_.error(name.loc, fmt::format("`{}` gives {} value{} here ({}) but {} name{} given; its results: {}",
                                    spec.name, results.size(), results.size() == 1 ? "" : "s", fmt::join(got, ", "),
                                    targets.size(), targets.size() == 1 ? " is" : "s are", spec.results));
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    const ir::Value* v = results[i].value.value();
    const auto& decl = targets[i].type;
    if (decl && (decl->dtype != v->dtype() || decl->axes != v->axes()))
      ts_.error(decl->loc, fmt::format("`{}` is declared as {} but `{}` gives its {} type {}", targets[i].name,
                                       ir::typeStr(decl->dtype, decl->axes), spec.name, results[i].name,
                                       v->typeString()));
    bindResult(targets[i].name, v, made_from);
  }
}

// A composite call's result takes the name on the left where the call made it (a value of its
// own, named once); an operand it returns unchanged, or a value named already, is bound to it.
void Parser::bindResult(const std::string& name, const ir::Value* v, size_t made_from) {
  if (v->isInput() || static_cast<size_t>(v->id()) < made_from || v->name() == name || renamed_.count(v)) {
    bound_[name] = v;
    return;
  }
  if (const ir::Value* clash = f_->findValue(name)) {  // a value of this call took the name: another
    std::string other = name;
    for (int k = 2; f_->findValue(other) || defined_.count(other); ++k) other = fmt::format("{}_{}", name, k);
    f_->renameValue(clash, other);
  }
  f_->renameValue(v, name);
  renamed_.insert(v);
}

// An operand (a value name, or `none` for an optional one left out) or a `key=value` parameter.
void Parser::parseCompositeArgument(const text::CompositeSpec& spec, text::CompositeArgs& args, bool* keywords) {
  if (ts_.peek().isIdent() && ts_.peek(1).is('=')) {
    *keywords = true;
    const Token& key = ts_.next();
    auto p = std::find_if(spec.params.begin(), spec.params.end(), [&](const auto& q) { return q.key == key.text; });
    if (p == spec.params.end()) {
      std::vector<std::string_view> keys;
      for (const auto& q : spec.params) keys.push_back(q.key);
      ts_.error(key.loc, keys.empty() ? fmt::format("`{}` takes no parameters", spec.name)
                                      : fmt::format("`{}` has no parameter `{}`; its parameters are {}", spec.name,
                                                    key.text, fmt::join(keys, ", ")));
    }
    if (args.params.count(key.text)) ts_.error(key.loc, fmt::format("`{}` is given twice", key.text));
    ts_.expect('=');
    switch (p->kind) {
      case text::ParamKind::Number: args.params[key.text] = text::parseNumber(ts_); break;
      case text::ParamKind::Int: args.params[key.text] = text::parseInt(ts_); break;
      case text::ParamKind::Bool: args.params[key.text] = text::parseBool(ts_); break;
      case text::ParamKind::Name:
        if (!ts_.peek().isIdent()) ts_.expected("a name");
        args.params[key.text] = std::string(ts_.next().text);
        break;
      case text::ParamKind::Extents:
        args.params[key.text] = text::parseList(ts_, [&] { return text::parseExtent(ts_); });
        break;
    }
    return;
  }
  if (*keywords) ts_.expected("`key=value` (operands come before parameters)");
  const size_t i = args.operands.size();
  if (i == spec.operands.size())
    ts_.error(ts_.peek().loc, fmt::format("`{}` takes {} operand{} ({})", spec.name, spec.operands.size(),
                                          spec.operands.size() == 1 ? "" : "s", fmt::join(spec.operands, ", ")));
  const Token& t = ts_.peek();
  if (t.isIdent("none") && !bound_.count("none") && !f_->findValue("none")) {
    if (spec.operands[i].back() != '?')
      ts_.error(t.loc, fmt::format("`{}`'s operand `{}` is required: `none` leaves out only an optional one",
                                   spec.name, spec.operands[i]));
    ts_.next();
    args.operands.emplace_back(std::nullopt);
    return;
  }
  args.operands.emplace_back(Tensor(f_.get(), parseValueRef("an operand name")));
}

// An operand (a value name; the number of a `const`) or a `key=value` attribute.
void Parser::parseArgument(Call& c, bool* keywords) {
  if (ts_.peek().isIdent() && ts_.peek(1).is('=')) {
    *keywords = true;
    return parseKeyword(c);
  }
  if (*keywords) ts_.expected("`key=value` (operands come before attributes)");
  if (ir::opFamily(c.kind) != ir::OpFamily::Constant) {
    c.operands.push_back(parseValueRef("an operand name"));
    return;
  }
  if (c.attrs.has("value")) ts_.expected("`dtype=` (`const` takes one value)");
  c.attrs.set("value", text::parseNumber(ts_));
}

void Parser::parseKeyword(Call& c) {
  const Token& key = ts_.next();
  auto specs = attrSpecs(ir::opFamily(c.kind));
  auto spec = std::find_if(specs.begin(), specs.end(),
                           [&](const AttrSpec& s) { return s.key == key.text; });
  if (spec == specs.end()) {
    std::string keys;
    for (const auto& s : specs) keys += fmt::format("{}`{}`", keys.empty() ? "" : ", ", s.key);
    ts_.error(key.loc, keys.empty()
                           ? fmt::format("`{}` takes no attributes", ir::opName(c.kind))
                           : fmt::format("`{}` has no attribute `{}`; its attributes are {}",
                                         ir::opName(c.kind), key.text, keys));
  }
  if (c.attrs.has(key.text)) ts_.error(key.loc, fmt::format("`{}` is given twice", key.text));
  ts_.expect('=');
  c.attrs.set(key.text, parseAttrValue(ts_, spec->kind));
}

}  // namespace

std::unique_ptr<ir::Fusion> parseFusion(std::string_view text, std::string_view source_name) {
  return Parser(text, source_name).parseFile();
}

std::unique_ptr<ir::Fusion> parseFusionFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("cannot read `{}`: {}", path, std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  bool failed = std::ferror(f) != 0;
  int err = errno;
  std::fclose(f);
  if (failed) fail("cannot read `{}`: {}", path, std::strerror(err));
  return parseFusion(text, path);
}

}  // namespace loom
