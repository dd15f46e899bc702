// Error bounds beside the CPU reference: a running error analysis (Wilkinson's) that carries,
// for each element of each value, how far a correct GPU evaluation may land from the float64
// reference. The reference is exact to double precision; the GPU computes in f32, rounds
// results to their dtypes and sums in whatever order its schedule has. Where a result is
// well conditioned those differences stay within the dtype's tolerance, and the bounds are not
// needed. Where it is not, such as the mean of values that cancel or x / sum(x) where the sum
// is near zero, rounding errors that every correct evaluation makes are amplified far past any
// fixed tolerance; the bounds say by how much, element by element.
//
// The rules, to first order:
// - inputs are exact; every op that computes a float adds its own rounding (a few f32 units
//   of its result) and, for an f16 or bf16 result, one step of that dtype (the GPU's f32 value
//   and the reference's exact one can round to neighbouring steps), plus 2^-126 where it is
//   not 0 (a value below f32's normal range may flush to 0); a result past its dtype's
//   largest value has no bound (the GPU's overflows to inf, the reference's does not); gelu's
//   also a few units of x / 2 (its 1 + erf cancels for negative x); a cast of an exact value
//   adds nothing (both sides round it to nearest even);
// - an elementwise op carries its operands' bounds through its own function: the largest
//   change of the result over the corners of the operands' intervals and over the points
//   where the function turns inside them (sin over several periods: anything in [-1, 1];
//   remainder: a jump of |b| where a / b may cross an integer; a comparison: 1 where the
//   operands' intervals meet), and no bound at all
//   (infinity) where an interval holds a pole or leaves the function's domain;
// - a sum carries the sum of its inputs' bounds, plus (2 + log2 n + sqrt(min(n, 1024))) f32
//   units of the sum of their magnitudes: a tree's depth, and the typical rounding of a
//   thread's serial run of up to 1024 adds. A well-conditioned sum so gains less slack than
//   f32's tolerance at any n (2^24 values: twice the bound is 7e-6 of the sum). Mean divides both
//   by n, and adds as many units of the row's largest magnitude: loom sums x - x0 from one
//   element x0 of the row, whose rounding is of |x0| where x0 is an outlier (soak seed 4, case
//   5505);
//   amax and amin are bounded by how far the extreme can move: the inputs' intervals' largest
//   upper end, or largest lower end, against the reference's maximum (for amax; amin
//   likewise), so an element far from the extreme adds nothing; var_mean's variance carries
//   2 |x - mean| (bound(x) + one unit of the mean) per element (Welford's running mean is
//   rounded at every step) and the same rounding of the sum of squares;
// - a result that is not finite in the reference (inf, NaN; a variance over n <= correction)
//   has no slack: the GPU must give the same, unless it is unbounded (a pole within its
//   operands' bounds, as x / s where s is 0 exactly but only to within its rounding).
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <vector>

#include "ir/error.h"
#include "ir/op_math.h"
#include "reference/reference_internal.h"

namespace loom::reference {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Units of the computing precision an op's own result may be off by (libdevice's functions are
// within a few units).
constexpr double kOpUnits = 4.0;

// The unit roundoff of `t`: half the distance from 1 to the next value.
double unitRoundoff(DType t) {
  switch (t) {
    case DType::F16: return std::ldexp(1.0, -11);
    case DType::BF16: return std::ldexp(1.0, -8);
    case DType::F32: return std::ldexp(1.0, -24);
    case DType::F64: return std::ldexp(1.0, -53);
    default: return 0.0;
  }
}

// The unit of the precision loom computes a value of dtype `t` in: f32, or f64 for f64.
double computeUnit(DType t) {
  if (!isFloat(t)) return 0.0;
  return unitRoundoff(t == DType::F64 ? DType::F64 : DType::F32);
}

// The largest finite value of float dtype t.
double largestFinite(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return 3.4028234663852886e38;
    default: return std::numeric_limits<double>::max();
  }
}

// An op's own rounding of its result y of dtype t: a few units of it, one more of an f16 or
// bf16 result's storage, and 2^-126 beside them where y is not 0 (f32's smallest normal: loom's
// fast exp flushes results below it to zero, and a value that small may round to 0 or a
// subnormal either way).
// A result past t's largest finite value has no bound: the GPU's is inf there, the exact one
// is not.
double ownRounding(double y, DType t) {
  if (!isFloat(t) || !std::isfinite(y)) return 0.0;
  if (std::fabs(y) >= largestFinite(t)) return kInf;
  const double store = t == DType::F16 || t == DType::BF16 ? 2.0 * unitRoundoff(t) : 0.0;
  // An exact 0 stays exact (x - x is 0 on the GPU too): a floor there would put a pole inside
  // the bound of every 1 / (x - x).
  const double tiny = t == DType::F64 || y == 0.0 ? 0.0 : std::ldexp(1.0, -126) + (t == DType::F16 ? std::ldexp(1.0, -25) : 0.0);
  return (kOpUnits * computeUnit(t) + store) * std::fabs(y) + tiny;
}

// The bound kept for reference value y: none where y is not finite (the GPU must match it)
// unless nothing bounds it (x / s where s is exactly 0 in the reference but its bound holds 0:
// the GPU's s may be 1e-9, and its result finite), and none where the bound is not a number
// (from NaN data).
double tidy(double e, double y) {
  if (std::isnan(e)) return 0.0;
  return std::isfinite(y) || std::isinf(e) ? e : 0.0;
}

// Where exp(-x) passes f32's largest finite value (log(3.4028235e38)).
constexpr double kF32ExpOverflow = 88.72283905206835;

// Whether [x - e, x + e] holds 0, where a pole or the edge of a domain is.
bool straddlesZero(double x, double e) { return e > 0 && x - e <= 0.0 && x + e >= 0.0; }

// How far a result may move from y, given f at the corners of its operands' intervals: the
// largest change, unbounded where a corner is not finite. Where y itself is NaN or inf, the
// GPU must match it unless a corner reaches a finite result (sqrt of silu(-200): -2.8e-85
// exactly but -0 in f32, soak seed 5, case 4325).
double spreadOver(std::initializer_list<double> corners, double y) {
  if (!std::isfinite(y))
    return std::any_of(corners.begin(), corners.end(), [](double v) { return std::isfinite(v); }) ? kInf : 0.0;
  double d = 0;
  for (double v : corners) {
    if (!std::isfinite(v)) return kInf;
    d = std::max(d, std::fabs(v - y));
  }
  return d;
}

// How far f may move over [x - ex, x + ex] from y = f(x), judged at the ends; an unbounded
// operand makes an unbounded result.
template <typename F>
double spread1(F f, double x, double ex, double y) {
  if (std::isinf(ex)) return kInf;
  if (ex == 0.0) return 0.0;
  return spreadOver({f(x - ex), f(x + ex)}, y);
}

// The same over the corners of [a - ea, a + ea] x [b - eb, b + eb].
template <typename F>
double spread2(F f, double a, double ea, double b, double eb, double y) {
  if (std::isinf(ea) || std::isinf(eb)) return kInf;
  if (ea == 0.0 && eb == 0.0) return 0.0;
  return spreadOver({f(a - ea, b - eb), f(a - ea, b + eb), f(a + ea, b - eb), f(a + ea, b + eb)}, y);
}

// The points inside [lo, hi] where unary op k turns (its local extremes), which the ends of an
// interval miss; false where there are too many to list (sin and cos over several periods:
// then anything in [-1, 1] may come out).
bool turningPoints(ir::OpKind k, double lo, double hi, std::vector<double>& at) {
  auto within = [&](double p) {
    if (p > lo && p < hi) at.push_back(p);
  };
  switch (k) {
    case ir::OpKind::Abs: within(0.0); return true;
    case ir::OpKind::Silu: within(-1.2784645427610738); return true;   // x sigmoid(x) is least here
    case ir::OpKind::Gelu: within(-0.7517915241350004); return true;   // x Phi(x)
    case ir::OpKind::GeluTanh: within(-0.7524614126); return true;     // its tanh form's least, to 1e-9
    case ir::OpKind::Sin:
    case ir::OpKind::Cos: {
      // sin turns at pi/2 + j pi, cos at j pi.
      const double phase = k == ir::OpKind::Sin ? M_PI / 2 : 0.0;
      const double first = std::ceil((lo - phase) / M_PI), last = std::floor((hi - phase) / M_PI);
      if (last - first >= 2) return false;
      for (double j = first; j <= last; ++j) within(phase + j * M_PI);
      return true;
    }
    default: return true;  // monotonic, or steps that only move at the ends' side
  }
}

// spread1 for unary op k, its turning points inside the interval included.
double spreadUnary(ir::OpKind k, DType t, double x, double ex, double y) {
  auto f = [&](double v) { return ir::evalUnary(k, v, t); };
  double d = spread1(f, x, ex, y);
  if (ex == 0.0 || !std::isfinite(y) || std::isinf(d)) return d;
  std::vector<double> at;
  if (!turningPoints(k, x - ex, x + ex, at)) return std::max(std::fabs(1.0 - y), std::fabs(1.0 + y));
  for (double p : at) d = std::max(d, std::fabs(f(p) - y));
  return d;
}

// remainder(a, b) jumps by |b| where a / b crosses an integer: a box of operands whose corners
// do not share floor(a / b) may give anything within |b| of the result.
double remainderJump(double a, double ea, double b, double eb) {
  if (ea == 0.0 && eb == 0.0) return 0.0;
  double lo = kInf, hi = -kInf;
  for (double sa : {-1.0, 1.0})
    for (double sb : {-1.0, 1.0}) {
      const double q = std::floor((a + sa * ea) / (b + sb * eb));
      lo = std::min(lo, q);
      hi = std::max(hi, q);
    }
  return lo == hi ? 0.0 : std::fabs(b) + eb;
}

bool poleAtZero(ir::OpKind k) {
  return k == ir::OpKind::Reciprocal || k == ir::OpKind::Rsqrt || k == ir::OpKind::Log ||
         k == ir::OpKind::Log2;
}

}  // namespace

Dense boundPointwise(const ir::Op& op, const std::vector<const Dense*>& in,
                     const std::vector<const Dense*>& in_bound, const Dense& out) {
  Dense e = zeros(out.shape);
  std::vector<std::vector<int64_t>> strides;
  for (const Dense* d : in) strides.push_back(broadcastStrides(d->shape, out.shape));
  for (const Dense* d : in_bound) strides.push_back(broadcastStrides(d->shape, out.shape));
  const size_t nin = in.size();
  const double* y = out.data.data();
  double* o = e.data.data();
  const ir::OpKind k = op.kind();
  const DType t = op.input(0)->dtype(), out_t = op.output()->dtype();
  auto x = [&](size_t operand, const int64_t* off) { return in[operand]->data[static_cast<size_t>(off[operand])]; };
  auto ex = [&](size_t operand, const int64_t* off) {
    return in_bound[operand]->data[static_cast<size_t>(off[nin + operand])];
  };
  parallelForEachIndex(out.shape, strides, [&](int64_t i, const int64_t* off) {
    double d = 0, own = ownRounding(y[i], out_t);
    switch (op.family()) {
      case ir::OpFamily::Unary:
      case ir::OpFamily::UnaryAny:
      case ir::OpFamily::Predicate:
      case ir::OpFamily::LogicalNot: {
        const double a = x(0, off), ea = ex(0, off);
        d = poleAtZero(k) && straddlesZero(a, ea) ? kInf : spreadUnary(k, t, a, ea, y[i]);
        // gelu is x / 2 (1 + erf(x / sqrt 2)) on the GPU, as in PyTorch: for negative x the sum
        // cancels, leaving a few units of 1 (not of the result) times x / 2.
        if (k == ir::OpKind::Gelu || k == ir::OpKind::GeluTanh) own += 2.0 * kOpUnits * computeUnit(t) * 0.5 * std::fabs(a);
        // silu is x * sigmoid(x) = x / (1 + exp(-x)) on the GPU, as in PyTorch: below -88.72 exp(-x)
        // overflows f32 and the result is -0, while the exact one is a normal f32 down to about
        // -92 (-2e-37 at -89: soak seed 5, case 4325, under a sqrt).
        if (k == ir::OpKind::Silu && t != DType::F64 && a - ea < -kF32ExpOverflow) own += std::fabs(y[i]);
        break;
      }
      case ir::OpFamily::Compare: {
        // A comparison may flip wherever the operands' intervals meet (eq of two values that
        // agree in the reference but only to within their rounding: soak seed 4, case 2914).
        const double a = x(0, off), ea = ex(0, off), b = x(1, off), eb = ex(1, off);
        if (std::isinf(ea) || std::isinf(eb) || ((ea > 0 || eb > 0) && std::fabs(a - b) <= ea + eb)) d = 1.0;
        break;
      }
      case ir::OpFamily::Binary:
      case ir::OpFamily::BinaryFloat:
      case ir::OpFamily::Logical: {
        const double a = x(0, off), ea = ex(0, off), b = x(1, off), eb = ex(1, off);
        const bool pole = (k == ir::OpKind::Div || k == ir::OpKind::Remainder) && straddlesZero(b, eb);
        d = pole ? kInf
                 : spread2([&](double p, double q) { return ir::evalBinary(k, p, q, t); }, a, ea, b, eb, y[i]);
        if (k == ir::OpKind::Remainder && !pole && std::isfinite(d)) d = std::max(d, remainderJump(a, ea, b, eb));
        break;
      }
      case ir::OpFamily::Where: {
        // A condition that may flip picks either branch.
        const double c = x(0, off), a = x(1, off), b = x(2, off);
        const double ea = ex(1, off), eb = ex(2, off);
        if (ex(0, off) > 0) d = std::max({ea, eb, std::fabs(a - b)});
        else d = c != 0.0 ? ea : eb;
        break;
      }
      case ir::OpFamily::Cast: {
        // An exact operand converts the same on both sides (round to nearest even).
        const double a = x(0, off), ea = ex(0, off);
        if (ea == 0) own = 0;
        else if (isFloat(out_t)) d = ea;
        else d = spread1([&](double v) { return ir::evalCast(v, t, out_t); }, a, ea, y[i]);
        break;
      }
      case ir::OpFamily::Bitcast: {
        // Exact bits stay exact. A float's bits grow with its magnitude on each side of zero, so
        // its interval's ends bound them there; integers' bits may be NaNs anywhere.
        const double a = x(0, off), ea = ex(0, off);
        if (ea == 0) own = 0;
        else if (out_t == DType::I32 && !straddlesZero(a, ea))
          d = spread1([&](double v) { return ir::evalBitcast(v, out_t); }, a, ea, y[i]);
        else d = kInf;
        break;
      }
      default: LOOM_ASSERT(false, "`{}` is not elementwise", op.name());
    }
    o[i] = tidy(d + own, y[i]);
  });
  return e;
}

std::vector<Dense> boundReduction(const ir::Op& op, const Dense& in, const Dense& in_bound,
                                  const std::vector<Dense>& out) {
  const std::vector<bool> reduced = reducedDims(op, in.shape.size());
  int64_t n = 1;
  for (size_t d = 0; d < in.shape.size(); ++d)
    if (reduced[d]) n *= in.shape[d];
  std::vector<Dense> bounds;
  for (const Dense& r : out) bounds.push_back(zeros(r.shape));
  const DType t = op.input(0)->dtype();  // integer sums and extremes add no rounding (unit 0)
  const double* x = in.data.data();
  const double* ex = in_bound.data.data();
  const double unit = computeUnit(t);
  const double count = static_cast<double>(std::max<int64_t>(n, 1));
  const double gamma = unit * (2.0 + std::log2(count) + std::sqrt(std::min(count, 1024.0)));
  const DType out_t = op.output(0)->dtype();
  switch (op.kind()) {
    case ir::OpKind::Sum:
    case ir::OpKind::Mean: {
      const double scale = op.kind() == ir::OpKind::Mean ? 1.0 / count : 1.0;
      const double shift = op.kind() == ir::OpKind::Mean ? gamma : 0.0;
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        double carried = 0, magnitude = 0, largest = 0;
        visit([&](int64_t k) {
          carried += ex[k];
          if (!std::isfinite(x[k])) return;  // an inf element's sum is exact
          magnitude += std::fabs(x[k]);
          largest = std::max(largest, std::fabs(x[k]));
        });
        const size_t uj = static_cast<size_t>(j);
        const double y = out[0].data[uj];
        bounds[0].data[uj] =
            tidy((carried + gamma * magnitude) * scale + shift * largest + ownRounding(y, out_t), y);
      });
      break;
    }
    case ir::OpKind::ReduceMax:
    case ir::OpKind::ReduceMin: {
      // amin is amax of the negated values.
      const double sign = op.kind() == ir::OpKind::ReduceMax ? 1.0 : -1.0;
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        const size_t uj = static_cast<size_t>(j);
        const double m = sign * out[0].data[uj];
        double hi = -kInf, lo = -kInf;  // the largest upper and lower ends of the intervals
        visit([&](int64_t k) {
          hi = std::max(hi, sign * x[k] + ex[k]);
          lo = std::max(lo, sign * x[k] - ex[k]);
        });
        bounds[0].data[uj] = tidy(std::max({0.0, hi - m, m - lo}), out[0].data[uj]);
      });
      break;
    }
    case ir::OpKind::VarMean: {
      const double correction = op.attr<ir::ReduceAttrs>().correction;
      const double divisor = count > correction ? count - correction : 0.0;
      const DType mean_t = op.output(1)->dtype();
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        const size_t uj = static_cast<size_t>(j);
        const double mu = out[1].data[uj];
        double carried = 0, magnitude = 0, deviation = 0, squares = 0, largest = 0;
        visit([&](int64_t k) {
          const double dev = std::fabs(x[k] - mu);
          carried += ex[k];
          if (std::isfinite(x[k])) {
            magnitude += std::fabs(x[k]);
            largest = std::max(largest, std::fabs(x[k]));
          }
          // An unbounded element leaves the variance unbounded, even where it sits at the mean.
          deviation += std::isinf(ex[k]) ? kInf : 2.0 * dev * (ex[k] + unit * std::fabs(mu));
          squares += dev * dev;
        });
        const double var = out[0].data[uj];
        const double var_bound = divisor > 0 ? (deviation + gamma * squares) / divisor : 0.0;
        bounds[0].data[uj] = tidy(var_bound + ownRounding(var, out_t), var);
        bounds[1].data[uj] = tidy((carried + gamma * magnitude) / count + gamma * largest + ownRounding(mu, mean_t), mu);
      });
      break;
    }
    case ir::OpKind::ArgMax:
    case ir::OpKind::ArgMin: {
      // The index is exact unless another element's interval reaches the winner's: then any
      // index between the two may be the GPU's (a NaN bound, an inf one, leaves it anywhere).
      const double sign = op.kind() == ir::OpKind::ArgMax ? 1.0 : -1.0;
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        const size_t uj = static_cast<size_t>(j);
        const int64_t win = static_cast<int64_t>(out[0].data[uj]);
        double wx = 0, we = 0;
        int64_t at = 0;
        visit([&](int64_t k) {
          if (at++ == win) wx = sign * x[k], we = ex[k];
        });
        double spread = 0;
        at = 0;
        visit([&](int64_t k) {
          const double v = sign * x[k];
          const bool exact = we == 0 && ex[k] == 0;
          const bool may_win = !exact && (std::isnan(v) || std::isnan(wx) || !std::isfinite(we + ex[k]) ||
                                          v + ex[k] >= wx - we);
          if (may_win) spread = std::max(spread, std::fabs(static_cast<double>(at - win)));
          ++at;
        });
        bounds[0].data[uj] = spread;
      });
      break;
    }
    default: LOOM_ASSERT(false, "`{}` is not a reduction", op.name());
  }
  return bounds;
}

}  // namespace loom::reference
