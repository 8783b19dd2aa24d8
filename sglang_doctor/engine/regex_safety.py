"""Backtracking hazards of a regular expression, found on Python's own parse of it.

A repeat (unbounded, or bounded at MIN_HEAVY_REPEAT or more) whose body can split the same text
in more than one way is a hazard: a variable-length part whose mandatory neighbours it can also
match (`(a+)+`, `(\\w+\\s?)*`, `(a|aa)+`), or two alternatives that can match the same text.
The engine asks `backtrack_safe` to decide which patterns plain `re` may run (no timeout needed);
`rules lint` reports `regex_problems`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from sglang_doctor.engine.rx import sre_constants, sre_parse

MIN_HEAVY_REPEAT = 10  # a bounded repeat this large counts as unbounded for backtracking


# --- character sets as bitmasks: bits 0-255 are those code points, bit 256 "anything above" ----

_OTHER = 1 << 256
_ALL = (1 << 257) - 1


def _bit(c: int) -> int:
    return 1 << c if c < 256 else _OTHER


def _span(lo: int, hi: int) -> int:
    mask = 0
    if lo < 256:
        mask = ((1 << (min(hi, 255) + 1)) - 1) & ~((1 << lo) - 1)
    return mask | (_OTHER if hi > 255 else 0)


def _chars(s: str) -> int:
    mask = 0
    for ch in s:
        mask |= _bit(ord(ch))
    return mask


_DIGIT = _span(48, 57)
_SPACE = _chars(" \t\n\r\f\v")
_WORD = _DIGIT | _span(65, 90) | _span(97, 122) | _bit(95)
_LINEBREAK = _bit(10)
_CATEGORIES = {
    "CATEGORY_DIGIT": _DIGIT, "CATEGORY_NOT_DIGIT": _ALL & ~_DIGIT,
    "CATEGORY_SPACE": _SPACE, "CATEGORY_NOT_SPACE": _ALL & ~_SPACE,
    "CATEGORY_WORD": _WORD, "CATEGORY_NOT_WORD": _ALL & ~_WORD,
    "CATEGORY_LINEBREAK": _LINEBREAK, "CATEGORY_NOT_LINEBREAK": _ALL & ~_LINEBREAK,
}


def _class_mask(items: list[tuple[Any, Any]], ignore_case: bool) -> int:
    mask, negate = 0, False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            mask |= _literal_mask(av, ignore_case)
        elif name == "RANGE":
            mask |= _span(av[0], av[1])
            if ignore_case:
                mask |= _chars("".join(chr(c) for c in range(av[0], min(av[1], 255) + 1)).swapcase())
        elif name == "CATEGORY":
            mask |= _CATEGORIES.get(str(av), _ALL)
        else:
            mask = _ALL
    return _ALL & ~mask if negate else mask


def _literal_mask(c: int, ignore_case: bool) -> int:
    m = _bit(c)
    return m | _chars(chr(c).swapcase()) if ignore_case and c < 256 else m


# --- sizes and alphabets of parsed sub-patterns ---------------------------------------------

_INF = float("inf")
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT")


@dataclass
class _Shape:
    """What a regex node can match, for the backtracking checks."""

    lo: float  # shortest match
    hi: float  # longest (inf)
    first: int  # characters a match can start with
    alph: int  # characters a match can contain


class _Analyser:
    def __init__(self, pattern: str) -> None:
        self.parsed = sre_parse.parse(pattern)
        flags = self.parsed.state.flags
        self.ignore_case = bool(flags & sre_constants.SRE_FLAG_IGNORECASE)
        self.dotall = bool(flags & sre_constants.SRE_FLAG_DOTALL)

    def seq(self, items: Iterable[tuple[Any, Any]]) -> _Shape:
        lo = hi = 0.0
        first = alph = 0
        open_start = True  # every item so far can match empty: the next one can start the match
        for item in items:
            s = self.item(item)
            lo, hi, alph = lo + s.lo, hi + s.hi, alph | s.alph
            if open_start:
                first |= s.first
                open_start = s.lo == 0
        return _Shape(lo, hi, first, alph)

    def item(self, item: tuple[Any, Any]) -> _Shape:
        op, av = item
        name = str(op)
        if name == "LITERAL":
            m = _literal_mask(av, self.ignore_case)
            return _Shape(1, 1, m, m)
        if name == "NOT_LITERAL":
            m = _ALL & ~_literal_mask(av, self.ignore_case)
            return _Shape(1, 1, m, m)
        if name == "ANY":
            m = _ALL if self.dotall else _ALL & ~_LINEBREAK
            return _Shape(1, 1, m, m)
        if name == "IN":
            m = _class_mask(av, self.ignore_case)
            return _Shape(1, 1, m, m)
        if name in ("SUBPATTERN", "ATOMIC_GROUP"):
            return self.seq(av[-1] if name == "SUBPATTERN" else av)
        if name == "BRANCH":
            shapes = [self.seq(b) for b in av[1]]
            return _Shape(min(s.lo for s in shapes), max(s.hi for s in shapes),
                          _or(s.first for s in shapes), _or(s.alph for s in shapes))
        if name in (*_REPEATS, "POSSESSIVE_REPEAT"):
            lo, hi, body = av
            s = self.seq(body)
            top = _INF if hi == sre_constants.MAXREPEAT else hi
            return _Shape(lo * s.lo, top * s.hi if s.hi else 0, s.first, s.alph)
        if name == "GROUPREF_EXISTS":
            shapes = [self.seq(b) for b in av[1:] if b is not None] or [_Shape(0, 0, 0, 0)]
            if av[2] is None:
                shapes.append(_Shape(0, 0, 0, 0))
            return _Shape(min(s.lo for s in shapes), max(s.hi for s in shapes),
                          _or(s.first for s in shapes), _or(s.alph for s in shapes))
        if name == "GROUPREF":
            return _Shape(0, _INF, _ALL, _ALL)
        return _Shape(0, 0, 0, 0)  # anchors, lookarounds: zero width

    # -- the checks ---------------------------------------------------------------------

    def problems(self) -> list[str]:
        out: list[str] = []
        for op, av in _walk(self.parsed):
            if str(op) not in _REPEATS:
                continue
            lo, hi, body = av
            if hi != sre_constants.MAXREPEAT and hi < MIN_HEAVY_REPEAT:
                continue
            why = self._ambiguous_body(body)
            if why and why not in out:
                out.append(why)
        return out

    def _ambiguous_body(self, body: Any) -> str | None:
        parts = list(_flatten(body))
        if len(parts) == 1 and str(parts[0][0]) == "BRANCH":
            # (?:[^()]|\([^()]*\))*: the next character picks the alternative, so only what
            # each alternative does inside matters.
            alts = list(parts[0][1][1])
            firsts = [self.seq(a) for a in alts]
            if all(f.lo > 0 for f in firsts) and all(
                    not (firsts[x].first & firsts[y].first) for x in range(len(alts)) for y in range(x + 1, len(alts))):
                return next((why for why in (self._ambiguous_body(a) for a in alts) if why), None)
        shapes = [self.item(p) for p in parts]
        for i, (part, s) in enumerate(zip(parts, shapes)):
            if s.lo == s.hi or not s.alph or str(part[0]) in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT"):
                continue  # fixed width, or never gives back: it cannot move an iteration boundary
            others = [t for j, t in enumerate(shapes) if j != i and t.lo > 0]
            if all(t.alph & ~s.alph == 0 for t in others):
                return ("nested quantifier: a repeated group has a variable-length part that can also match "
                        "its mandatory neighbours, e.g. (a+)+ or (\\w+\\s?)* - exponential backtracking on a "
                        "line that does not match")
        for op, av in _walk(body):
            if str(op) != "BRANCH":
                continue
            alts = [self.seq(b) for b in av[1]]
            for x in range(len(alts)):
                for y in range(x + 1, len(alts)):
                    a, b = alts[x], alts[y]
                    both_empty = a.lo == 0 and b.lo == 0
                    overlap = a.first & b.first and (a.alph & ~b.alph == 0 or b.alph & ~a.alph == 0)
                    if both_empty or overlap:
                        return ("overlapping alternatives under a repeat, e.g. (a|a)* or (\\d+|\\d+\\.\\d+)* - "
                                "exponential backtracking on a line that does not match")
        return None


def _or(masks: Iterable[int]) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


def _flatten(items: Any) -> Iterator[tuple[Any, Any]]:
    """The items of a sequence with plain groups opened up."""
    for op, av in items:
        if str(op) == "SUBPATTERN":
            yield from _flatten(av[-1])
        else:
            yield op, av


def _children(op: Any, av: Any) -> list[Any]:
    name = str(op)
    if name == "SUBPATTERN":
        return [av[-1]]
    if name == "BRANCH":
        return list(av[1])
    if name in _REPEATS:
        return [av[2]]
    if name in ("ASSERT", "ASSERT_NOT"):
        return [av[1]]
    if name == "GROUPREF_EXISTS":
        return [b for b in av[1:] if b is not None]
    return []  # atomic groups and possessive repeats never backtrack into themselves


def _walk(items: Any) -> Iterator[tuple[Any, Any]]:
    for op, av in items:
        yield op, av
        for child in _children(op, av):
            yield from _walk(child)


def backtrack_safe(pattern: str) -> bool:
    """Python's parser reads the pattern and finds no backtracking hazard in it."""
    try:
        return not _Analyser(pattern).problems()
    except Exception:  # `regex`-only syntax, or nesting Python's parser refuses: not known safe
        return False


def regex_problems(pattern: str) -> list[str]:
    """Backtracking hazards of one pattern ([] when it cannot be analysed)."""
    try:
        return _Analyser(pattern).problems()
    except Exception:  # `regex`-only syntax, or nesting Python's parser refuses
        return []
