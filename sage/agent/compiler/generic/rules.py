"""Case classes: which cases share host code, checked against every case compiled.

Cases whose host code is the same apart from the parameters' values (`CaseCode.structure`:
the same kernels on the same buffers, the same temporaries and results), and whose
parameters one host expression explains in every one of them (`hostexpr.py`), form one
`Rule`: forward() tries the rules in order and takes the first whose dtypes (ranks),
scalar arguments hold and whose every launch has a tiling (`Tilings`).

A rule is rank-free when it can be: its parameters are element counts, scalar arguments
and constants, and each result has an input's shape (an elementwise kernel over any rank
of a dtype is one class); otherwise it is for one rank pattern, and a result's shape is
its dimensions one by one.

The compiler's own decisions before the generators ran (how the graph fused, which lowering
a size picked) are not guards. So the dispatch is checked, case by case, against what each
case compiled to alone: the rule it reaches must be its own and each launch's tiling its
own fields. A case that fails gets a rule of its own that only its exact shapes and values
reach, placed first (`Rule.exact`; rare, and reported by the plan).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from sage.agent.compiler.generic.ambiguity import needed
from sage.agent.compiler.generic.casemodel import CaseCode, Tilings
from sage.agent.compiler.generic.hostexpr import RANK_FREE, Candidates, HostExpr


@dataclass
class Rule:
    ranked: bool
    cases: list[CaseCode]
    candidates: list[list[HostExpr]]   # per parameter (ranked: then each result's dimensions), what every case agrees with
    likes: list[list[int]]             # rank-free: per result, the inputs whose shape it has in every case
    exact: bool = False                # reached only by its one case's exact shapes and values
    _checked: tuple | None = field(default=None, repr=False, compare=False)   # ambiguities(), for its candidates
    _pinned: tuple | None = field(default=None, repr=False, compare=False)    # pinned_shapes(), likewise

    @property
    def code(self) -> CaseCode:
        return self.cases[0]

    def structure(self) -> tuple:
        return self.code.structure(self.ranked)

    def chosen(self) -> list[HostExpr]:
        return [c[0] for c in self.candidates]

    def ambiguities(self) -> list[tuple[HostExpr, HostExpr]]:
        """(chosen, other): expressions every case of the rule agrees on for one parameter
        besides the one chosen, each once. The cases cannot tell which of them the kernel's
        size really is (a matmul traced at 128 x 64 @ 64 x 128 has M and N both 128), so the
        rule takes only arguments on which they still agree: a call with sizes no case
        traced then gets the traced result or no class, never a kernel built on the wrong
        size (a BoundsError or a wrong answer). A scalar read as given, as a float or
        rounded is one quantity (`HostExpr.source`). A literal explains nothing (a size
        every case traced at 256 would pin the class to 256; a scalar argument is read as
        given), but a float that sizes derive (derived.py: a ratio, 1 / n) and a literal
        both give is checked: a kernel's constant 0.5 (bilinear's half-pixel offset) that
        an upsampling by 2's ratio also gives must stay 0.5 at another scale (public
        level1/28_interpolate: a downsampling by 2 took the upsampling's class, read its
        offset as 2.0 and was answered wrongly; the verifier then gave each case a class
        of its own)."""
        key = (id(self.candidates), len(self.cases))     # a join replaces the candidates' list
        if self._checked is not None and self._checked[0] == key:
            return self._checked[1]
        out: dict[tuple, tuple[HostExpr, HostExpr]] = {}
        for cands in self.candidates:
            ref = cands[0]
            if ref.kind == "lit" and isinstance(ref.value, float) and ref.value != ref.value:
                continue                   # NaN equals nothing, not even the case that traced it
            for e in cands[1:]:
                if e.kind != "lit" and e.source != ref.source or _float_literal(e) and ref.kind == "derived":
                    out.setdefault((ref, e) if repr(ref) <= repr(e) else (e, ref), (ref, e))
        pairs = [p for p in out.values() if not _nan(p[0].evaluate(self.code.flat))]
        self._checked = (key, needed(pairs, self.code.flat, self.ranked))
        return self._checked[1]

    def pinned_shapes(self) -> list[tuple] | None:
        """The tensors' shapes of its cases, when the rule holds a size no host expression
        explains (a concatenation's sum, a triple product): that literal is right for the
        shapes traced and for no other that anything shows, so the rule takes only those."""
        if self.exact or not any(_sized_literal(e) for e in self.chosen()):
            return None
        key = (id(self.candidates), len(self.cases))     # asked for every case and class, as ambiguities()
        if self._pinned is None or self._pinned[0] != key:
            self._pinned = (key, {_shapes(c) for c in self.cases})
        return sorted(self._pinned[1])

    def scalar_checks(self) -> dict[int, Any]:
        """Flat scalar arguments the rule checks by value: those no chosen expression reads,
        on which its cases agree (with `exact`, every scalar)."""
        read = set().union(*(e.reads for e in self.chosen()))
        out = {}
        for i, a in enumerate(self.code.flat):
            if isinstance(a, torch.Tensor) or (i in read and not self.exact):
                continue
            if all(_same(c.flat[i], a) for c in self.cases):
                out[i] = a
        return out

    def categories(self) -> dict[int, int]:
        """Per parameter computed from the inputs: 0, 1 or 2 (any other value), when its cases
        agree. Sizes 0 and 1 change what the compiler does before any generator runs; a
        constant 0.0 or 1.0 is tested alike, so that a class whose cases all avoid them is not
        taken by one whose graph may have been built otherwise for them."""
        out = {}
        for k, e in enumerate(self.chosen()):
            v = _params(self.code, self.ranked)[k]
            if e.kind == "lit" or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            cats = {_category(_params(c, self.ranked)[k]) for c in self.cases}
            if len(cats) == 1:
                out[k] = cats.pop()
        return out

    def tilings(self, case: CaseCode, tilings: Tilings) -> list[tuple] | None:
        """The tiling of each launch when `case` is its class (None: it is not)."""
        if case.signature(self.ranked) != self.code.signature(self.ranked):
            return None
        if self.exact:
            # its launches take the tiling its one case computed, written out
            return [launch.tiling() for launch in self.code.launches] if _exact_key(case) == _exact_key(self.code) \
                else None
        if any(not _same(case.flat[i], v) for i, v in self.scalar_checks().items()):
            return None
        if self.pinned_shapes() is not None and _shapes(case) not in self._pinned[1]:
            return None
        try:
            values = [e.evaluate(case.flat) for e in self.chosen()]
        except (IndexError, TypeError, ValueError):
            return None
        if any(_category(values[k]) != cat for k, cat in self.categories().items()):
            return None
        try:
            if any(a.evaluate(case.flat) != b.evaluate(case.flat) for a, b in self.ambiguities()):
                return None
        except (IndexError, TypeError, ValueError):
            return None
        out, at = [], 0
        for launch in self.code.launches:
            tiling = tilings.tiling(launch.kernel, values[at:at + len(launch.values)])
            if tiling is None:
                return None
            out.append(tiling)
            at += len(launch.values)
        return out


def build_rules(codes: list[CaseCode]) -> tuple[list[Rule], Tilings]:
    """The cases' rules, in dispatch order, each case reaching its own, and the kernels'
    tiling variants (see the module docstring)."""
    rules: list[Rule] = []
    for code in codes:
        if any(_joined(rule, code) for rule in rules):
            continue
        for k, rule in enumerate(rules):
            ranked = _as_ranked(rule)
            if ranked is not None and _joined(ranked, code):
                rules[k] = ranked
                break
        else:
            rules.append(_rule_of(code))
    tilings = Tilings(codes)
    return _verified(rules, tilings), tilings


def _params(code: CaseCode, ranked: bool) -> list[Any]:
    return code.values() + ([d for s in code.shapes() for d in s] if ranked else [])


def _offers(code: CaseCode, ranked: bool) -> tuple[list[list[HostExpr]], list[list[int]]]:
    """Per parameter the case's host expressions (rank-free: only the kinds that read no
    dimension), and per result the inputs of its shape (made once a case: read, never changed)."""
    if ranked not in code.offered:
        code.offered[ranked] = _made_offers(code, ranked)
    return code.offered[ranked]


def _made_offers(code: CaseCode, ranked: bool) -> tuple[list[list[HostExpr]], list[list[int]]]:
    cands = Candidates(code.flat, code.long_row_limit)
    values = code.values()
    offers = [cands.of(v) for v in values]
    if ranked:
        offers += [cands.of(d, position=k, rank=len(s)) for s in code.shapes() for k, d in enumerate(s)]
        return offers, []
    offers = [[e for e in o if e.kind in RANK_FREE] for o in offers]
    likes = [[i for i, a in enumerate(code.flat) if isinstance(a, torch.Tensor) and tuple(a.shape) == s]
             for s in code.shapes()]
    return offers, likes


def _fresh(code: CaseCode, ranked: bool) -> Rule:
    offers, likes = _offers(code, ranked)
    return Rule(ranked, [code], offers, likes)


def _rule_of(code: CaseCode) -> Rule:
    """Rank-free when every result has an input's shape, no tensor is broadcast, and no size
    the rank-free kinds leave as a literal has a dimension that explains it. A rank-free
    class sees element counts only: a broadcast's outer count (the quotient of two counts)
    or attention's sequence length would be a coincidence it cannot check (a + b over
    [1, 64, 64, 1] and [1, 1, 64, 1] took [1, 64, 64, 1] and [1, 64, 1, 1] and gave a
    wrong sum), where a ranked class names each dimension."""
    offers, likes = _offers(code, ranked=False)
    ranked, _ = _offers(code, ranked=True)
    unexplained = any(_sized_literal(o[0]) and not _sized_literal(r[0]) for o, r in zip(offers, ranked))
    shapes = {tuple(a.shape) for a in code.flat if isinstance(a, torch.Tensor) and a.numel() != 1}
    if all(offers) and all(likes) and not unexplained and len(shapes) <= 1:
        return Rule(False, [code], offers, likes)
    return Rule(True, [code], ranked, [])


def _float_literal(e: HostExpr) -> bool:
    return e.kind == "lit" and isinstance(e.value, float) and e.value == e.value


def _sized_literal(e: HostExpr) -> bool:
    """A literal int other than 0 and 1: a size no expression of the inputs explains."""
    return e.kind == "lit" and isinstance(e.value, int) and not isinstance(e.value, bool) and e.value not in (0, 1)


def _as_ranked(rule: Rule) -> Rule | None:
    """A rank-free rule's cases as one ranked rule (None: it is ranked or exact, or they differ
    in rank). A rank-free rule reads no dimension, so a size it holds as a literal (layer
    norm's rows) keeps out a case of another size that the dimension would explain."""
    if rule.ranked or rule.exact:
        return None
    offers, _ = _offers(rule.cases[0], ranked=True)
    out = Rule(True, [rule.cases[0]], offers, [])
    return out if all(_joined(out, c) for c in rule.cases[1:]) else None


def _joined(rule: Rule, code: CaseCode) -> bool:
    """Adds `code` to `rule` when it is of its class; whether it did."""
    if rule.exact or rule.structure() != code.structure(rule.ranked):
        return False
    offers, likes = _offers(code, rule.ranked)
    merged = [_common(a, b) for a, b in zip(rule.candidates, offers)]
    shapes = [[i for i in a if i in b] for a, b in zip(rule.likes, likes)]
    if not all(merged) or not all(shapes):
        return False
    rule.candidates, rule.likes = merged, shapes
    rule.cases.append(code)
    return True


def _reaches_own(case: CaseCode, owner: Rule, rules: list[Rule], tilings: Tilings) -> bool:
    for rule in rules:
        got = rule.tilings(case, tilings)
        if got is not None:
            return rule is owner and _same_values(got, [launch.tiling() for launch in case.launches])
    return False


def _verified(rules: list[Rule], tilings: Tilings) -> list[Rule]:
    while True:
        owner = {id(c): r for r in rules for c in r.cases}
        wrong = next((c for r in rules for c in r.cases if not _reaches_own(c, owner[id(c)], rules, tilings)), None)
        if wrong is None:
            return rules
        old = owner[id(wrong)]
        old.cases.remove(wrong)
        if old.cases:
            rebuilt = _fresh(old.cases[0], old.ranked)     # ranked as it was (_as_ranked)
            for c in old.cases[1:]:
                if not _joined(rebuilt, c):       # cannot happen: they agreed with one another before
                    raise AssertionError("a case class fell apart when one of its cases left it")
            rules[rules.index(old)] = rebuilt
        else:
            rules.remove(old)
        lits = [[HostExpr("lit", value=v)] for v in _params(wrong, True)]
        rules.insert(0, Rule(True, [wrong], lits, [], exact=True))


def _common(a: list[HostExpr], b: list[HostExpr]) -> list[HostExpr]:
    keep = set(b)
    return [e for e in a if e in keep]


def _nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _category(v: Any) -> int:
    """0, 1 or 2 (any other value, NaN included); the host tests `== 0`, `== 1`, `not in (0, 1)`."""
    return 0 if v == 0 else 1 if v == 1 else 2


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def _same_values(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_values(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    return a == b and isinstance(a, float) == isinstance(b, float)


def _shapes(case: CaseCode) -> tuple:
    return tuple(tuple(int(d) for d in a.shape) for a in case.flat if isinstance(a, torch.Tensor))


def _exact_key(case: CaseCode) -> tuple:
    return tuple(("t", tuple(a.shape)) if isinstance(a, torch.Tensor) else ("s", repr(a)) for a in case.flat)


__all__ = ["Rule", "build_rules"]
