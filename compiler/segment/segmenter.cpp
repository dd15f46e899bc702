#include "compiler/segment/segmenter.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/analysis/domains.h"
#include "compiler/schedule/scheduler.h"
#include "compiler/segment/expand_ops.h"
#include "compiler/segment/split_reductions.h"
#include "ir/error.h"
#include "ir/json.h"

namespace loom::segment {

std::optional<Accepted> acceptFusion(const ir::Fusion& f, const Bindings& sizes,
                                     const std::vector<TensorDesc>& inputs,
                                     const CompileOptions& opts, std::vector<std::string>* why_not) {
  auto p = schedule::planSegment(f, sizes, inputs, opts, "loom_" + f.name(), why_not);
  if (!p) return std::nullopt;
  auto planned = std::make_shared<const schedule::Planned>(std::move(*p));
  return Accepted{planned->scheduler, planned->reason, planned->outputs, planned->two_pass_faster, planned};
}

namespace {

std::string valueList(const std::vector<const ir::Value*>& vs) {
  std::vector<std::string> s;
  for (const ir::Value* v : vs) s.push_back(fmt::format("{} {}", v->name(), v->typeString()));
  return fmt::format("{}", fmt::join(s, ", "));
}

std::string opLabel(const ir::Op* op) {
  std::vector<std::string> outs;
  for (const ir::Value* v : op->outputs()) outs.push_back(v->name());
  return fmt::format("{} ({})", op->name(), fmt::join(outs, ", "));
}

uint64_t descBytes(const std::vector<TensorDesc>& ds) {
  uint64_t b = 0;
  for (const auto& d : ds) b += d.bytes();
  return b;
}

}  // namespace

namespace {

uint64_t planBytes(const std::vector<Segment>& segments) {
  uint64_t b = 0;
  for (const auto& g : segments) b += descBytes(g.input_descs) + descBytes(g.output_descs);
  return b;
}

std::string megabytes(uint64_t b) { return fmt::format("{:.2f} MB", static_cast<double>(b) / 1e6); }

// One segmentation of a fusion: the whole as one kernel, or runs of its ops in an order, grown
// greedily (segmentFusion's steps, named).
class Segmenter {
 public:
  Segmenter(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
            const CompileOptions& opts)
      : f_(f), sizes_(sizes), inputs_(inputs), opts_(opts) {}

  SegmentPlan run();

 private:
  // A run of ops as a segment: with the cheap ops it computes again for them (`pulled`).
  struct Candidate {
    std::vector<const ir::Op*> ops;
    std::set<const ir::Op*> pulled;
    SubFusion sub;
  };
  void findLive();
  std::vector<TensorDesc> descsOf(const SubFusion& s) const;
  std::vector<const ir::Op*> withRecomputed(const std::vector<const ir::Op*>& ops) const;
  Candidate tryOps(const std::vector<const ir::Op*>& ops, const std::set<const ir::Op*>& pending,
                   std::vector<std::string>* why, std::optional<Accepted>* acc);
  void close(Candidate c, const Accepted& acc, std::vector<std::string> rejections);
  bool ofInputs(const ir::Op* op) const;
  void findCheap();
  std::vector<const ir::Op*> withoutCheap(std::vector<const ir::Op*> order) const;
  bool greedy(const std::vector<const ir::Op*>& order, bool must);
  std::vector<const ir::Op*> reductionsFirst(const std::vector<const ir::Op*>& order) const;
  void tryReductionsFirst(const std::vector<const ir::Op*>& order);
  bool twoPassInstead(const std::vector<const ir::Op*>& order, const std::string& why);
  SegmentPlan withBytes();

  const ir::Fusion& f_;
  const Bindings& sizes_;
  const std::vector<TensorDesc>& inputs_;
  const CompileOptions& opts_;
  SegmentPlan plan_;
  std::set<const ir::Op*> live_, defines_output_;
  std::map<const ir::Value*, TensorDesc> known_, known_inputs_;
  // Ops that are cheap functions of the fusion's inputs (no reduction on the way): computed
  // again by every segment that reads them, never written between kernels. Empty until the
  // whole fusion is found not to be one kernel.
  std::set<const ir::Op*> cheap_;
  bool two_pass_ = false;  // building the two-pass plan: kernels the scheduler says are slower refused
};

// Only ops some output needs: a value nothing reads would otherwise join a kernel's iteration
// space (an unused slice of a gate matrix gave a reduction 2.5e15 rows), and a value only
// those read is no kernel's output.
void Segmenter::findLive() {
  std::vector<const ir::Value*> todo;
  for (const auto& o : f_.outputs()) todo.push_back(o.value);
  while (!todo.empty()) {
    const ir::Value* v = todo.back();
    todo.pop_back();
    if (v->isInput() || !live_.insert(v->definition()).second) continue;
    for (const ir::Value* in : v->definition()->inputs()) todo.push_back(in);
  }
}

// What one kernel would move: the fusion's inputs and outputs (their descriptions once the
// segments have placed them).
SegmentPlan Segmenter::withBytes() {
  std::vector<TensorDesc> ends = inputs_;
  for (const auto& o : f_.outputs()) ends.push_back(known_.at(o.value));
  plan_.one_kernel_bytes = descBytes(ends);
  return std::move(plan_);
}

std::vector<TensorDesc> Segmenter::descsOf(const SubFusion& s) const {
  std::vector<TensorDesc> d;
  for (const ir::Value* v : s.inputs) d.push_back(known_.at(v));
  return d;
}

std::vector<const ir::Op*> Segmenter::withRecomputed(const std::vector<const ir::Op*>& ops) const {
  std::set<const ir::Op*> in(ops.begin(), ops.end());
  std::vector<const ir::Op*> todo(ops.begin(), ops.end());
  while (!todo.empty()) {
    const ir::Op* op = todo.back();
    todo.pop_back();
    for (const ir::Value* v : op->inputs()) {
      const ir::Op* d = v->definition();
      if (d && cheap_.count(d) && in.insert(d).second) todo.push_back(d);
    }
  }
  std::vector<const ir::Op*> out;
  for (const ir::Op* op : f_.ops())
    if (in.count(op)) out.push_back(op);
  return out;
}

Segmenter::Candidate Segmenter::tryOps(const std::vector<const ir::Op*>& ops, const std::set<const ir::Op*>& pending,
                                       std::vector<std::string>* why, std::optional<Accepted>* acc) {
  Candidate c;
  c.ops = cheap_.empty() ? ops : withRecomputed(ops);
  c.pulled.insert(c.ops.begin(), c.ops.end());
  for (const ir::Op* op : ops) c.pulled.erase(op);
  c.sub = extractSegment(f_, c.ops, fmt::format("{}_s{}", f_.name(), plan_.segments.size() + 1), pending, c.pulled, &live_);
  *acc = acceptFusion(*c.sub.fusion, sizes_, descsOf(c.sub), opts_, why);
  if (*acc && two_pass_ && !(*acc)->two_pass_faster.empty()) {
    if (why) why->push_back((*acc)->scheduler + ": " + (*acc)->two_pass_faster);
    acc->reset();
  }
  return c;
}

void Segmenter::close(Candidate c, const Accepted& acc, std::vector<std::string> rejections) {
  Segment seg;
  for (const ir::Op* op : c.ops)
    if (c.pulled.count(op) && !op->inputs().empty()) seg.recomputed.push_back(op);
  seg.ops = std::move(c.ops);
  seg.input_descs = descsOf(c.sub);
  seg.sub = std::move(c.sub);
  seg.scheduler = acc.scheduler;
  seg.params = acc.params;
  seg.output_descs = acc.outputs;
  seg.planned = acc.planned;
  seg.rejections = std::move(rejections);
  for (size_t i = 0; i < seg.sub.outputs.size(); ++i) known_[seg.sub.outputs[i]] = seg.output_descs[i];
  plan_.segments.push_back(std::move(seg));
}

// Cheap ops join segments as their readers need them; those the fusion outputs still need a
// segment of their own to be computed in.
std::vector<const ir::Op*> Segmenter::withoutCheap(std::vector<const ir::Op*> order) const {
  order.erase(std::remove_if(order.begin(), order.end(),
                             [&](const ir::Op* op) { return cheap_.count(op) && !defines_output_.count(op); }),
              order.end());
  return order;
}

// Whether `op` reads only the fusion's inputs, constants and cheap ops (computed again).
bool Segmenter::ofInputs(const ir::Op* op) const {
  return std::all_of(op->inputs().begin(), op->inputs().end(), [&](const ir::Value* v) {
    return v->isInput() || cheap_.count(v->definition()) || v->definition()->inputs().empty();
  });
}

void Segmenter::findCheap() {
  for (const ir::Op* op : f_.ops()) {
    // A concat is written once, by its own segment: readers take it from memory.
    if (!live_.count(op) || ir::isReduction(op->kind()) || op->family() == ir::OpFamily::Concat) continue;
    if (ofInputs(op)) cheap_.insert(op);
  }
}

// Grows a run of ops while a scheduler accepts it, assuming the ops not placed yet may still
// join it (so a broadcast on its own never ends a segment); then closes it at the longest
// prefix accepted with its real outputs. False (nothing thrown) where an op fits no scheduler
// even alone and `must` is not set.
bool Segmenter::greedy(const std::vector<const ir::Op*>& all, bool must) {
  plan_.segments.clear();
  known_ = known_inputs_;
  auto slice = [&](size_t a, size_t b) { return std::vector<const ir::Op*>(all.begin() + static_cast<long>(a), all.begin() + static_cast<long>(b)); };
  size_t i = 0;
  while (i < all.size()) {
    size_t j = i;
    std::vector<std::string> stop_why;
    while (j < all.size()) {
      std::set<const ir::Op*> pending(all.begin() + static_cast<long>(j) + 1, all.end());
      std::vector<std::string> w;
      std::optional<Accepted> a;
      tryOps(slice(i, j + 1), pending, &w, &a);
      if (!a) {
        for (const auto& r : w) stop_why.push_back(fmt::format("adding {}: {}", opLabel(all[j]), r));
        break;
      }
      ++j;
    }
    bool closed = false;
    for (size_t e = j; e > i && !closed; --e) {
      std::vector<std::string> w;
      std::optional<Accepted> a;
      Candidate run = tryOps(slice(i, e), {}, &w, &a);
      if (!a) continue;
      if (e < j) {
        stop_why.clear();
        for (const auto& r : w) stop_why.push_back(fmt::format("its outputs: {}", r));
      }
      close(std::move(run), *a, stop_why);
      i = e;
      closed = true;
    }
    if (!closed) {
      if (!must) return false;
      std::vector<std::string> w;
      std::optional<Accepted> a;
      tryOps({all[i]}, {}, &w, &a);
      fail("`{}` in fusion `{}` cannot run on the GPU: no scheduler accepts it even alone ({})",
           opLabel(all[i]), f_.name(), fmt::join(w, "; "));
    }
  }
  return true;
}

// The same ops with every reduction of the fusion's inputs (and cheap functions of them) first,
// in their order, then the ops of their rows alone (functions of the reductions and of the
// inputs that vary along none of the atoms they reduce: batch norm's running statistics, its
// rstd): reductions over the same atoms then share a kernel with what their rows compute, and
// what reads them over every element a kernel of its own (batch norm's y, its backward's dx,
// pointwise); empty where that changes nothing.
std::vector<const ir::Op*> Segmenter::reductionsFirst(const std::vector<const ir::Op*>& order) const {
  std::vector<const ir::Op*> first, rest;
  for (const ir::Op* op : order) (ir::isReduction(op->kind()) && ofInputs(op) ? first : rest).push_back(op);
  if (first.empty()) return {};
  const std::shared_ptr<const analysis::DomainAnalysis> da = analysis::domainsOf(f_);
  const bool atoms = da->conflicts().empty();  // (conflicting domains: no row ops moved)
  std::set<int> reduced;
  for (const ir::Op* op : first)
    if (atoms)
      for (int a : da->reducedAtoms(op)) reduced.insert(a);
  std::set<const ir::Value*> of_rows;
  for (const ir::Op* op : first) of_rows.insert(op->outputs().begin(), op->outputs().end());
  auto rowValue = [&](const ir::Value* v) {
    for (int d = 0; d < static_cast<int>(v->axes().size()); ++d)
      for (int a : da->axisAtoms(v, d))
        if (reduced.count(a)) return false;
    return true;
  };
  auto available = [&](const ir::Value* v) {
    return of_rows.count(v) ||
           ((v->isInput() || v->definition()->inputs().empty() || cheap_.count(v->definition())) && rowValue(v));
  };
  std::vector<const ir::Op*> later;
  for (const ir::Op* op : rest) {
    const bool row = atoms && !ir::isReduction(op->kind()) &&
                     std::all_of(op->inputs().begin(), op->inputs().end(), available) &&
                     std::all_of(op->outputs().begin(), op->outputs().end(), rowValue);
    if (!row) {
      later.push_back(op);
      continue;
    }
    first.push_back(op);
    of_rows.insert(op->outputs().begin(), op->outputs().end());
  }
  first.insert(first.end(), later.begin(), later.end());
  return first == order ? std::vector<const ir::Op*>{} : first;
}

// After the greedy plan of `order`: the reductions-first plan, taken where it makes fewer
// kernels (or as many moving fewer bytes); either way `loom segment` says what the other was.
void Segmenter::tryReductionsFirst(const std::vector<const ir::Op*>& order) {
  const std::vector<const ir::Op*> first = reductionsFirst(order);
  if (first.empty()) return;
  std::vector<Segment> in_order = std::move(plan_.segments);
  const auto in_order_known = known_;
  const uint64_t in_order_bytes = planBytes(in_order);
  const bool ok = greedy(first, false);
  const uint64_t bytes = planBytes(plan_.segments);
  const bool fewer = ok && plan_.segments.size() < in_order.size();
  if (fewer || (ok && plan_.segments.size() == in_order.size() && bytes < in_order_bytes)) {
    plan_.alternatives.push_back(fmt::format("in order: {} kernels moving {} (this plan has fewer {})", in_order.size(),
                                             megabytes(in_order_bytes), fewer ? "kernels" : "bytes"));
    return;
  }
  plan_.alternatives.push_back(
      ok ? fmt::format("reductions of the inputs first: {} kernels moving {} (not fewer kernels or bytes)",
                       plan_.segments.size(), megabytes(bytes))
         : std::string("reductions of the inputs first: no plan (an op no scheduler takes alone)"));
  plan_.segments = std::move(in_order);
  known_ = in_order_known;
}

// A whole fusion whose scheduler says two kernels of a reduction and a pointwise pass run faster
// (`why`): a plan of exactly two such kernels, in order (LSTM cell backward: the gate gradients,
// then their column sums) or with the reductions first (channels-last batch norm backward: the
// channel sums, then dx), where one of them gives it.
bool Segmenter::twoPassInstead(const std::vector<const ir::Op*>& order, const std::string& why) {
  findCheap();
  const std::vector<const ir::Op*> rest = withoutCheap(order);
  for (const auto& candidate : {rest, reductionsFirst(rest)}) {
    if (candidate.empty()) continue;
    two_pass_ = true;
    const bool ok = greedy(candidate, false);
    two_pass_ = false;
    if (ok && plan_.segments.size() == 2 &&
        std::none_of(plan_.segments.begin(), plan_.segments.end(), [](const Segment& g) { return g.scheduler == "normalization"; })) {
      plan_.alternatives.push_back("one kernel: " + why);
      return true;
    }
  }
  cheap_.clear();
  plan_.segments.clear();
  known_ = known_inputs_;
  return false;
}

SegmentPlan Segmenter::run() {
  f_.verify();  // at least one output, and the rest a plan needs
  for (const auto& o : f_.outputs())
    LOOM_USER_CHECK(!o.value->isInput(), "output `{}` is input `{}` itself; loom computes outputs, "
                    "it does not copy inputs", o.name, o.value->name());
  findLive();
  for (size_t i = 0; i < inputs_.size(); ++i) known_[f_.inputs()[i]] = inputs_[i];
  known_inputs_ = known_;
  for (const auto& o : f_.outputs()) defines_output_.insert(o.value->definition());
  std::vector<const ir::Op*> all;
  for (const ir::Op* op : f_.ops()) {
    if (!live_.count(op)) {
      if (!op->inputs().empty()) plan_.unused.push_back(op);
      continue;
    }
    if (!op->inputs().empty() || defines_output_.count(op)) all.push_back(op);  // constants travel with their users
  }
  std::optional<Accepted> acc;
  std::vector<std::string> why;
  Candidate whole = tryOps(all, {}, &why, &acc);
  if (acc && !acc->two_pass_faster.empty() && twoPassInstead(all, acc->two_pass_faster)) return withBytes();
  if (acc) {
    close(std::move(whole), *acc, {});
    return withBytes();
  }
  plan_.whole_rejections = why;
  findCheap();
  all = withoutCheap(all);
  greedy(all, true);
  tryReductionsFirst(all);
  return withBytes();
}

}  // namespace

// A kernel's launch and its ramp weighed as bytes moved (a few microseconds of copy
// bandwidth): a plan of more kernels is taken where it moves this much less per kernel more.
constexpr uint64_t kKernelBytes = uint64_t{16} << 20;

std::string emptySizeReason(const Bindings& sizes, const std::vector<TensorDesc>& inputs) {
  std::vector<std::string> zero;
  for (const auto& [name, v] : sizes)
    if (v == 0) zero.push_back(name);
  if (!zero.empty()) return fmt::format("{} {} 0: no kernels", fmt::join(zero, ", "), zero.size() > 1 ? "are" : "is");
  for (const TensorDesc& d : inputs)
    if (d.numel() == 0) return "an input has no elements: no kernels";
  return "";
}

SegmentPlan segmentFusion(const ir::Fusion& f, const Bindings& sizes,
                          const std::vector<TensorDesc>& inputs, const CompileOptions& opts) {
  if (std::string why = emptySizeReason(sizes, inputs); !why.empty()) {
    f.verify();
    SegmentPlan empty;
    empty.whole_rejections.push_back(why);
    return empty;
  }
  // Arg-reductions are always written as the reductions the schedulers hold.
  const std::shared_ptr<const ir::Fusion> expanded = expandOps(f, sizes);
  const ir::Fusion& given = expanded ? *expanded : f;
  SegmentPlan plan = Segmenter(given, sizes, inputs, opts).run();
  plan.rewritten = expanded;
  if (plan.segments.size() < 2 || opts.tuning.no_split_reductions) return plan;
  std::shared_ptr<const ir::Fusion> g = splitReductions(given);
  if (!g) return plan;
  SegmentPlan split;
  try {
    split = Segmenter(*g, sizes, inputs, opts).run();
  } catch (const Error&) {
    return plan;  // (a rewrite no plan takes: the fusion as written)
  }
  auto line = [](const SegmentPlan& p) {
    return fmt::format("{} kernel{} moving {}", p.segments.size(), p.segments.size() == 1 ? "" : "s", megabytes(p.bytes()));
  };
  const char* what = "sums over atoms another reduction's rows partly reduce, in two steps (that part first)";
  // The rewrite must win by a kernel's weight even where it has no more kernels: its bytes say
  // nothing of how its kernels' schedules differ (a rows kernel that also keeps sub-row sums may
  // read narrower vectors), and less than a kernel's weight is within a small plan's noise.
  const double saved = static_cast<double>(plan.bytes()) - static_cast<double>(split.bytes());
  const double more = static_cast<double>(split.segments.size()) - static_cast<double>(plan.segments.size());
  if (saved > static_cast<double>(kKernelBytes) * (more == 0 ? 1 : more)) {
    split.rewritten = std::move(g);
    split.alternatives.push_back(fmt::format("as written: {} (this plan, {}, moves more than a kernel's weight "
                                             "less, a kernel weighed as {})", line(plan), what, megabytes(kKernelBytes)));
    return split;
  }
  plan.alternatives.push_back(fmt::format("{}: {} (not a kernel's weight less, a kernel weighed as {})", what,
                                          line(split), megabytes(kKernelBytes)));
  return plan;
}

std::optional<SegmentPlan> rescheduleSegments(const SegmentPlan& earlier, const ir::Fusion& given, const Bindings& sizes,
                                              const std::vector<TensorDesc>& inputs, const CompileOptions& opts) {
  SegmentPlan sp = earlier;
  const ir::Fusion& f = sp.fusion(given);
  if (f.inputs().size() != inputs.size()) return std::nullopt;
  std::map<const ir::Value*, TensorDesc> known;  // as the Segmenter's known_
  for (size_t i = 0; i < inputs.size(); ++i) known[f.inputs()[i]] = inputs[i];
  for (auto& seg : sp.segments) {
    seg.input_descs.clear();
    for (const ir::Value* v : seg.sub.inputs) {
      auto it = known.find(v);
      if (it == known.end()) return std::nullopt;
      seg.input_descs.push_back(it->second);
    }
    auto acc = acceptFusion(*seg.sub.fusion, sizes, seg.input_descs, opts, nullptr);
    if (!acc || acc->scheduler != seg.scheduler || !acc->two_pass_faster.empty()) return std::nullopt;
    seg.params = acc->params;
    seg.output_descs = acc->outputs;
    seg.planned = acc->planned;
    for (size_t j = 0; j < seg.sub.outputs.size() && j < seg.output_descs.size(); ++j)
      known[seg.sub.outputs[j]] = seg.output_descs[j];
  }
  std::vector<TensorDesc> ends = inputs;  // as Segmenter::withBytes
  for (const auto& o : f.outputs()) {
    auto it = known.find(o.value);
    if (it == known.end()) return std::nullopt;
    ends.push_back(it->second);
  }
  sp.one_kernel_bytes = descBytes(ends);
  sp.alternatives = {"the segments of an earlier size of this signature, whose kernels' classes serve this one "
                     "(this size's own segmentation not searched)"};
  return sp;
}

uint64_t Segment::bytesRead() const { return descBytes(input_descs); }
uint64_t Segment::bytesWritten() const { return descBytes(output_descs); }

uint64_t SegmentPlan::bytes() const { return planBytes(segments); }

std::string SegmentPlan::str(const ir::Fusion& f) const {
  std::string s = fmt::format("fusion {}: {} kernel{}, moving {}", f.name(), segments.size(),
                              segments.size() == 1 ? "" : "s", megabytes(bytes()));
  s += segments.size() == 1 ? " (inputs read once, outputs written once)\n"
                            : fmt::format(" (each kernel's inputs and outputs, intermediates where written and where "
                                          "read); one kernel would move {}\n", megabytes(one_kernel_bytes));
  if (!whole_rejections.empty()) {
    s += "not one kernel, because:\n";
    for (const auto& r : whole_rejections) s += "  - " + r + "\n";
  }
  if (!alternatives.empty()) {
    s += "other plans:\n";
    for (const auto& r : alternatives) s += "  - " + r + "\n";
  }
  if (!unused.empty()) {
    std::vector<std::string> ops;
    for (const ir::Op* op : unused) ops.push_back(opLabel(op));
    s += fmt::format("not computed, as no output needs them: {}\n", fmt::join(ops, ", "));
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& g = segments[i];
    std::vector<std::string> ops;
    for (const ir::Op* op : g.ops) ops.push_back(opLabel(op));
    s += fmt::format("segment {}: {} scheduler, {} op{}\n", i + 1, g.scheduler, g.ops.size(),
                     g.ops.size() == 1 ? "" : "s");
    s += fmt::format("  ops:     {}\n", fmt::join(ops, ", "));
    if (!g.recomputed.empty()) {
      std::vector<std::string> rc;
      for (const ir::Op* op : g.recomputed) rc.push_back(opLabel(op));
      s += fmt::format("  recomputes (cheap functions of the inputs, never written): {}\n", fmt::join(rc, ", "));
    }
    s += fmt::format("  inputs:  {}\n", valueList(g.sub.inputs));
    s += fmt::format("  outputs: {}\n", valueList(g.sub.outputs));
    s += fmt::format("  params:  {}\n", g.params);
    s += fmt::format("  bytes:   reads {}, writes {}\n", megabytes(g.bytesRead()), megabytes(g.bytesWritten()));
    for (const auto& r : g.rejections) s += "  ends because " + r + "\n";
  }
  return s;
}

std::string SegmentPlan::json(const ir::Fusion& f) const {
  auto names = [](const std::vector<const ir::Value*>& vs) {
    std::vector<std::string> s;
    for (const ir::Value* v : vs) s.push_back(jsonStr(v->name()));
    return fmt::format("[{}]", fmt::join(s, ", "));
  };
  auto strs = [](const std::vector<std::string>& v) {
    std::vector<std::string> s;
    for (const auto& x : v) s.push_back(jsonStr(x));
    return fmt::format("[{}]", fmt::join(s, ", "));
  };
  std::vector<std::string> segs;
  for (const auto& g : segments) {
    std::vector<std::string> ops;
    for (const ir::Op* op : g.ops) ops.push_back(jsonStr(opLabel(op)));
    segs.push_back(fmt::format(
        "{{\"scheduler\": {}, \"ops\": [{}], \"inputs\": {}, \"outputs\": {}, \"params\": {}, "
        "\"bytes_read\": {}, \"bytes_written\": {}, \"rejections\": {}}}", jsonStr(g.scheduler),
        fmt::join(ops, ", "), names(g.sub.inputs), names(g.sub.outputs), jsonStr(g.params), g.bytesRead(),
        g.bytesWritten(), strs(g.rejections)));
  }
  std::vector<std::string> unused_ops;
  for (const ir::Op* op : unused) unused_ops.push_back(jsonStr(opLabel(op)));
  return fmt::format("{{\"fusion\": {}, \"kernels\": {}, \"bytes\": {}, \"one_kernel_bytes\": {}, "
                     "\"rejections\": {}, \"other_plans\": {}, \"unused\": [{}], \"segments\": [{}]}}\n",
                     jsonStr(f.name()), segments.size(), bytes(), one_kernel_bytes, strs(whole_rejections),
                     strs(alternatives), fmt::join(unused_ops, ", "), fmt::join(segs, ", "));
}

std::string SegmentPlan::dot(const ir::Fusion& given) const {
  const ir::Fusion& f = fusion(given);
  static const char* kColors[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                  "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};
  std::map<const ir::Op*, size_t> seg_of;
  for (size_t i = 0; i < segments.size(); ++i)
    for (const ir::Op* op : segments[i].ops) seg_of[op] = i;
  std::string s = fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n", f.name());
  for (const ir::Value* v : f.inputs())
    s += fmt::format("  \"{}\" [shape=ellipse, label=\"{}\\n{}\"];\n", v->name(), v->name(), v->typeString());
  for (const ir::Op* op : f.ops()) {
    auto it = seg_of.find(op);
    std::string color = it == seg_of.end() ? "white" : kColors[it->second % 10];
    std::string label = fmt::format("{}\\n{}", op->name(), op->output()->typeString());
    s += fmt::format("  \"op{}\" [shape=box, style=filled, fillcolor=\"{}\", label=\"{}{}\"];\n",
                     op->id(), color, label,
                     it == seg_of.end() ? "" : fmt::format("\\n(kernel {})", it->second + 1));
    for (const ir::Value* in : op->inputs()) {
      std::string src = in->isInput() ? in->name() : fmt::format("op{}", in->definition()->id());
      s += fmt::format("  \"{}\" -> \"op{}\";\n", src, op->id());
    }
  }
  for (const auto& o : f.outputs()) {
    s += fmt::format("  \"out_{}\" [shape=ellipse, style=bold, label=\"{}\"];\n", o.name, o.name);
    std::string src = o.value->isInput() ? o.value->name() : fmt::format("op{}", o.value->definition()->id());
    s += fmt::format("  \"{}\" -> \"out_{}\";\n", src, o.name);
  }
  return s + "}\n";
}

}  // namespace loom::segment
