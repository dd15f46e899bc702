"""Extents as loom's text writes them: a whole or rational coefficient times a product of named
sizes (`4*s0`, `s0*s1/2`). A framework's symbolic sizes that are not such monomials (`s0 + 1`,
`s0 // 2`) have no extent, and the ops that make them stay outside loom."""
from fractions import Fraction


class Extent:
    """coef * prod(sym ** power); immutable, hashable, ordered by nothing but equality."""
    __slots__ = ("coef", "syms")

    def __init__(self, coef, syms=()):
        self.coef = Fraction(coef)
        self.syms = tuple(sorted((s, p) for s, p in dict(syms).items() if p))

    @classmethod
    def of(cls, v):
        """An Extent of an int, an Extent, or a text monomial such as "2*s0" or "s0*s1/4"."""
        if isinstance(v, Extent):
            return v
        if isinstance(v, bool):
            raise TypeError(f"extent {v!r} is a bool, not a size")
        if isinstance(v, int):
            return cls(v)
        if isinstance(v, str):
            return cls._parse(v)
        raise TypeError(f"extent {v!r}: give an int, an Extent or a monomial such as 2*s0")

    @classmethod
    def _parse(cls, text):
        num, _, den = text.replace(" ", "").partition("/")
        coef, syms = Fraction(1), {}
        for term in num.split("*"):
            if term.isdigit():
                coef *= int(term)
            elif term.isidentifier():
                syms[term] = syms.get(term, 0) + 1
            else:
                raise ValueError(f"extent `{text}` is not a monomial (a number times named sizes, e.g. 2*s0)")
        if den:
            if not den.isdigit() or int(den) == 0:
                raise ValueError(f"extent `{text}`: divide by a positive whole number")
            coef /= int(den)
        return cls(coef, syms)

    @property
    def is_const(self):
        return not self.syms

    def __eq__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            other = Extent(other)
        return isinstance(other, Extent) and self.coef == other.coef and self.syms == other.syms

    def __hash__(self):
        return hash((self.coef, self.syms))

    def __mul__(self, other):
        other = Extent.of(other)
        syms = dict(self.syms)
        for s, p in other.syms:
            syms[s] = syms.get(s, 0) + p
        return Extent(self.coef * other.coef, syms)

    def same_sizes(self, other):
        """Whether the two differ by their coefficient alone (they add and subtract)."""
        return self.syms == Extent.of(other).syms or self.coef == 0 or Extent.of(other).coef == 0

    def __add__(self, other):
        other = Extent.of(other)
        if not self.same_sizes(other):
            raise ValueError(f"{self} + {other} is not a monomial")
        syms = self.syms if self.coef != 0 else other.syms
        return Extent(self.coef + other.coef, syms)

    def __sub__(self, other):
        return self + Extent(-Extent.of(other).coef, Extent.of(other).syms)

    def value(self, hints):
        """The extent's value with sizes from `hints` (name -> int)."""
        v = self.coef
        for s, p in self.syms:
            if s not in hints:
                raise KeyError(f"no value for size `{s}`")
            v *= Fraction(hints[s]) ** p
        return v

    def __str__(self):
        parts = [s for s, p in self.syms for _ in range(p)]
        num, den = self.coef.numerator, self.coef.denominator
        if num != 1 or not parts:
            parts.insert(0, str(num))
        text = "*".join(parts)
        return f"{text}/{den}" if den != 1 else text

    __repr__ = __str__
