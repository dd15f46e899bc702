#include "compiler/segment/segmenter.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/schedule/scheduler.h"
#include "ir/error.h"
#include "ir/json.h"

namespace loom::segment {

std::optional<Accepted> acceptFusion(const ir::Fusion& f, const Bindings& sizes,
                                     const std::vector<TensorDesc>& inputs,
                                     const CompileOptions& opts, std::vector<std::string>* why_not) {
  auto p = schedule::planSegment(f, sizes, inputs, opts, "loom_" + f.name(), why_not);
  if (!p) return std::nullopt;
  return Accepted{p->scheduler, p->reason, p->outputs};
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

SegmentPlan segmentFusion(const ir::Fusion& f, const Bindings& sizes,
                          const std::vector<TensorDesc>& inputs, const CompileOptions& opts) {
  f.verify();  // at least one output, and the rest a plan needs
  for (const auto& o : f.outputs())
    LOOM_USER_CHECK(!o.value->isInput(), "output `{}` is input `{}` itself; loom computes outputs, "
                    "it does not copy inputs", o.name, o.value->name());
  SegmentPlan plan;
  // Only ops some output needs: a value nothing reads would otherwise join a kernel's
  // iteration space (an unused slice of a gate matrix gave a reduction 2.5e15 rows), and a
  // value only those read is no kernel's output.
  std::set<const ir::Op*> live;
  std::vector<const ir::Value*> todo;
  for (const auto& o : f.outputs()) todo.push_back(o.value);
  while (!todo.empty()) {
    const ir::Value* v = todo.back();
    todo.pop_back();
    if (v->isInput() || !live.insert(v->definition()).second) continue;
    for (const ir::Value* in : v->definition()->inputs()) todo.push_back(in);
  }
  std::map<const ir::Value*, TensorDesc> known;
  for (size_t i = 0; i < inputs.size(); ++i) known[f.inputs()[i]] = inputs[i];
  // What one kernel would move: the fusion's inputs and outputs (their descriptions once the
  // segments have placed them).
  auto withBytes = [&]() -> SegmentPlan {
    std::vector<TensorDesc> ends = inputs;
    for (const auto& o : f.outputs()) ends.push_back(known.at(o.value));
    plan.one_kernel_bytes = descBytes(ends);
    return std::move(plan);
  };
  auto descsOf = [&](const SubFusion& s) {
    std::vector<TensorDesc> d;
    for (const ir::Value* v : s.inputs) d.push_back(known.at(v));
    return d;
  };
  // Ops that are cheap functions of the fusion's inputs (no reduction on the way): computed
  // again by every segment that reads them, never written between kernels. Empty until the
  // whole fusion is found not to be one kernel.
  std::set<const ir::Op*> cheap;
  auto withRecomputed = [&](const std::vector<const ir::Op*>& ops) {
    std::set<const ir::Op*> in(ops.begin(), ops.end());
    std::vector<const ir::Op*> todo(ops.begin(), ops.end());
    while (!todo.empty()) {
      const ir::Op* op = todo.back();
      todo.pop_back();
      for (const ir::Value* v : op->inputs()) {
        const ir::Op* d = v->definition();
        if (d && cheap.count(d) && in.insert(d).second) todo.push_back(d);
      }
    }
    std::vector<const ir::Op*> out;
    for (const ir::Op* op : f.ops())
      if (in.count(op)) out.push_back(op);
    return out;
  };
  // A run of ops as a segment: with the cheap ops it computes again for them (`pulled`).
  struct Candidate {
    std::vector<const ir::Op*> ops;
    std::set<const ir::Op*> pulled;
    SubFusion sub;
  };
  auto tryOps = [&](const std::vector<const ir::Op*>& ops, const std::set<const ir::Op*>& pending,
                    std::vector<std::string>* why, std::optional<Accepted>* acc) {
    Candidate c;
    c.ops = cheap.empty() ? ops : withRecomputed(ops);
    c.pulled.insert(c.ops.begin(), c.ops.end());
    for (const ir::Op* op : ops) c.pulled.erase(op);
    c.sub = extractSegment(f, c.ops, fmt::format("{}_s{}", f.name(), plan.segments.size() + 1), pending, c.pulled, &live);
    *acc = acceptFusion(*c.sub.fusion, sizes, descsOf(c.sub), opts, why);
    return c;
  };
  auto close = [&](Candidate c, const Accepted& acc, std::vector<std::string> rejections) {
    Segment seg;
    for (const ir::Op* op : c.ops)
      if (c.pulled.count(op) && !op->inputs().empty()) seg.recomputed.push_back(op);
    seg.ops = std::move(c.ops);
    seg.input_descs = descsOf(c.sub);
    seg.sub = std::move(c.sub);
    seg.scheduler = acc.scheduler;
    seg.params = acc.params;
    seg.output_descs = acc.outputs;
    seg.rejections = std::move(rejections);
    for (size_t i = 0; i < seg.sub.outputs.size(); ++i) known[seg.sub.outputs[i]] = seg.output_descs[i];
    plan.segments.push_back(std::move(seg));
  };

  std::set<const ir::Op*> defines_output;
  for (const auto& o : f.outputs()) defines_output.insert(o.value->definition());
  std::vector<const ir::Op*> all;
  for (const ir::Op* op : f.ops()) {
    if (!live.count(op)) {
      if (!op->inputs().empty()) plan.unused.push_back(op);
      continue;
    }
    if (!op->inputs().empty() || defines_output.count(op)) all.push_back(op);  // constants travel with their users
  }
  std::optional<Accepted> acc;
  std::vector<std::string> why;
  Candidate whole = tryOps(all, {}, &why, &acc);
  if (acc) {
    close(std::move(whole), *acc, {});
    return withBytes();
  }
  plan.whole_rejections = why;
  for (const ir::Op* op : f.ops()) {
    // A concat is written once, by its own segment: readers take it from memory.
    if (!live.count(op) || ir::isReduction(op->kind()) || op->family() == ir::OpFamily::Concat) continue;
    if (std::all_of(op->inputs().begin(), op->inputs().end(), [&](const ir::Value* v) {
          return v->isInput() || cheap.count(v->definition()) || v->definition()->inputs().empty();
        }))
      cheap.insert(op);
  }
  // Cheap ops join segments as their readers need them; those the fusion outputs still need a
  // segment of their own to be computed in.
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const ir::Op* op) { return cheap.count(op) && !defines_output.count(op); }),
            all.end());

  // Grow a run of ops while a scheduler accepts it, assuming the ops not placed yet may still
  // join it (so a broadcast on its own never ends a segment); then close it at the longest
  // prefix accepted with its real outputs.
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
      std::vector<std::string> w;
      std::optional<Accepted> a;
      tryOps({all[i]}, {}, &w, &a);
      fail("`{}` in fusion `{}` cannot run on the GPU: no scheduler accepts it even alone ({})",
           opLabel(all[i]), f.name(), fmt::join(w, "; "));
    }
  }
  return withBytes();
}

namespace {

std::string megabytes(uint64_t b) { return fmt::format("{:.2f} MB", static_cast<double>(b) / 1e6); }

}  // namespace

uint64_t Segment::bytesRead() const { return descBytes(input_descs); }
uint64_t Segment::bytesWritten() const { return descBytes(output_descs); }

uint64_t SegmentPlan::bytes() const {
  uint64_t b = 0;
  for (const auto& g : segments) b += g.bytesRead() + g.bytesWritten();
  return b;
}

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
                     "\"rejections\": {}, \"unused\": [{}], \"segments\": [{}]}}\n",
                     jsonStr(f.name()), segments.size(), bytes(), one_kernel_bytes, strs(whole_rejections),
                     fmt::join(unused_ops, ", "), fmt::join(segs, ", "));
}

std::string SegmentPlan::dot(const ir::Fusion& f) const {
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
