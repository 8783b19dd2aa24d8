"""Rules applied to records: matching, conditions, findings.

Matching is two-stage: a prefilter built from each rule's required literals finds the few
records any rule could match; only there do the rules' full regexes run. Matches are
collected while the stream goes by (bounded per rule); conditions, computed values and
explanations are evaluated once the input has ended, when the context knows everything
the log said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple

import re

from sglang_doctor.engine import expr
from sglang_doctor.facts.context import Context
from sglang_doctor.model import Evidence, Finding, FixOut, line_name, mark_consequence
from sglang_doctor.read.records import Record, Segmenter, frame_of, glog_time, parse_header
from sglang_doctor.read.reader import Line, decode_line, lines_of_chunk
from sglang_doctor.model import SEVERITY_RANK
from sglang_doctor.engine.rules import Condition, Fix, Pattern, Rule
from sglang_doctor.engine.rx import MATCH_TIMEOUT_S

MAX_EVIDENCE = 5
# A rule that skips handled tracebacks keeps more matches until the input has ended (the
# first ones may all be handled, a failed request each, and the crash come after them).
MAX_KEPT_UNTIL_HANDLED = 64
# After this many timeouts a rule is skipped for the rest of the run (a log of 100k lines
# that all time out would otherwise take 100k x the budget).
MAX_TIMEOUTS = 3


class Hit(NamedTuple):
    """One record a rule matched: where, what, and its captures."""

    line: int
    text: str
    captures: dict[str, str]
    rank: str
    ts: str | None = None  # the record's logged time (ISO, to the second), see _Analysis.last_ts
    start: int = 0  # the record's first and last input lines (a traceback spans many)
    end: int = 0


@dataclass(slots=True)
class RuleHits:
    """The records one rule matched in one input (the first MAX_EVIDENCE kept)."""

    rule: Rule
    hits: list[Hit] = field(default_factory=list)
    count: int = 0
    # (first line, last line) of every matched record, for rules that skip handled tracebacks
    spans: list[tuple[int, int]] = field(default_factory=list)


INDEX_AFTER = 200  # records matched literal by literal before the compiled index is built


class Matcher:
    """The compiled rule set: prefilter plus per-rule patterns."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.always: list[Rule] = []
        self.by_literal: dict[str, list[Rule]] = {}
        self.checks = [r for r in rules if r.match.check]
        for r in rules:
            if r.match.check:
                continue
            lits = r.prefilter_literals
            if lits is None:
                self.always.append(r)
                continue
            for lit in set(lits):
                self.by_literal.setdefault(lit, []).append(r)
        self.literals = sorted(self.by_literal, key=len, reverse=True)
        # Looked for one `in` test at a time (an alternation of them all in one `re` pattern
        # measured slower), until an input has INDEX_AFTER records: then by a compiled index.
        self._index: Any = None  # scan.LiteralIndex, or False when Hyperscan is unavailable
        self._records = 0
        self.warnings: list[str] = []
        self.timeouts: dict[str, int] = {}  # rule id -> regex timeouts so far
        # Optional observer (--why, see why.py): told of every prefilter candidate and match.
        self.trace: Any = None

    def candidates(self, text: str) -> list[Rule]:
        out = list(self.always)
        seen: set[str] = set()
        for lit in self._present(text):
            for r in self.by_literal[lit]:
                if r.id not in seen:
                    seen.add(r.id)
                    out.append(r)
        return out

    def _present(self, text: str) -> list[str]:
        """The literals in `text`, longest first."""
        if self._index is None and self.literals:
            self._records += 1
            if self._records > INDEX_AFTER:
                self._index = _literal_index(self.literals)
        if self._index:
            return [self.literals[i] for i in self._index.present(text)]
        return [lit for lit in self.literals if lit in text]


def _literal_index(literals: list[str]) -> Any:
    try:
        from sglang_doctor.engine.scan import LiteralIndex

        return LiteralIndex(literals)
    except Exception:  # no Hyperscan (or it refuses): stay with `in`
        return False


def _search(p: Pattern, rec: Record, matcher: Matcher, rule: Rule) -> tuple[Any, str]:
    if p.in_ == "exception":
        target = "\n".join(rec.exceptions) if rec.kind == "traceback" else rec.text
    elif p.in_ == "frames":
        target = "\n".join(rec.frames)
    else:
        target = rec.text
    if (p.literal is not None and p.literal not in target) or matcher.timeouts.get(rule.id, 0) >= MAX_TIMEOUTS:
        return None, target  # (no literal, no match: and the pattern is not even compiled)
    try:
        return p.compiled.search(target), target
    except TimeoutError:
        n = matcher.timeouts[rule.id] = matcher.timeouts.get(rule.id, 0) + 1
        msg = f"rule {rule.id}: regex took longer than {MATCH_TIMEOUT_S}s on line {rec.start}; " + (
            "skipped there" if n < MAX_TIMEOUTS else
            f"rule disabled for the rest of the run after {n} timeouts (see `sglang-doctor rules lint`)")
        if len(matcher.warnings) < 20 or n == MAX_TIMEOUTS:
            matcher.warnings.append(msg)
        return None, target


def _evidence_line(rec: Record, target: str, m: Any) -> tuple[int, str]:
    """The input line a match starts on; in a traceback, its exception line rather than a frame or
    the `Traceback (most recent call last):` head (what went wrong, not where)."""
    number, text = _match_line(rec, target, m)
    if rec.kind == "traceback" and rec.exceptions and (_TRACEBACK_HEAD in text or frame_of(text) is not None):
        return _exception_line(rec) or (number, text)
    return number, text


_TRACEBACK_HEAD = "Traceback (most recent call last)"


def _exception_line(rec: Record) -> tuple[int, str] | None:
    """The line of the record's last exception, when that says more than its type."""
    first = rec.exception.split("\n", 1)[0]
    if ": " not in first or not first.split(": ", 1)[1].strip():
        return None  # a bare `AssertionError`: the frame that raised it says more
    read = rec.read if rec.read is not None and len(rec.read) == len(rec.lines) else [ln.text for ln in rec.lines]
    for i in range(len(rec.lines) - 1, -1, -1):
        if read[i].strip().startswith(first[:60]):
            return rec.lines[i].number, rec.lines[i].text
    return None


def _match_line(rec: Record, target: str, m: Any) -> tuple[int, str]:
    """The input line a match starts on."""
    snippet = target[m.start():].split("\n", 1)[0]
    if target is rec.text or target == rec.text:
        idx = target.count("\n", 0, m.start())
        if idx < len(rec.lines):
            ln = rec.lines[idx]
            return ln.number, (rec.message if idx == 0 and rec.kind == "line" else ln.text)
    # Exception lines come after the frames (whose source lines may quote the same text). A frame is
    # looked for as rules read it (rec.read: a frame pasted without its line number reads `line 0`)
    # and quoted as the log has it.
    read = rec.read if rec.read is not None and len(rec.read) == len(rec.lines) else [ln.text for ln in rec.lines]
    order: Iterable[int] = range(len(rec.lines))
    if target is not rec.text and rec.exceptions and target.startswith(rec.exceptions[0][:40]):
        order = reversed(order)
    for i in order:
        if snippet and snippet[:60] in read[i]:
            return rec.lines[i].number, rec.lines[i].text
    return rec.start, rec.lines[0].text


def match_record(rec: Record, matcher: Matcher, hits: dict[str, RuleHits], last_ts: str | None = None) -> None:
    """`last_ts`: the time of the latest header line before `rec`, for a record logged without one."""
    trace = matcher.trace
    for rule in matcher.candidates(rec.text):
        if trace is not None:
            trace.candidate(rule)
        for p in rule.match.any:
            m, target = _search(p, rec, matcher, rule)
            if m is None:
                continue
            extra: dict[str, str] = {}
            missing = False
            for q in rule.match.require:
                mq = _search(q, rec, matcher, rule)[0]
                if mq is None:
                    missing = True
                    break
                extra.update({k: v for k, v in mq.groupdict().items() if v is not None})
            if missing or any(_search(q, rec, matcher, rule)[0] is not None for q in rule.match.exclude):
                continue
            rh = hits.get(rule.id)
            if rh is None:
                rh = hits[rule.id] = RuleHits(rule)
            rh.count += 1
            if trace is not None:
                trace.matched(rh)
            keep = MAX_EVIDENCE
            if rule.skip_handled:
                rh.spans.append((rec.start, rec.end))
                keep = MAX_KEPT_UNTIL_HANDLED  # and then the latest match in the last slot
            if len(rh.hits) < keep or rule.skip_handled:
                line, text = _evidence_line(rec, target, m)
                caps = {**extra, **{k: v for k, v in m.groupdict().items() if v is not None}}
                ts = rec.ts or glog_time(rec.lines[0].text, last_ts) or last_ts
                hit = Hit(line, text, caps, rec.rank, ts.replace(" ", "T") if ts else None, rec.start, rec.end)
                if len(rh.hits) < keep:
                    rh.hits.append(hit)
                else:
                    rh.hits[-1] = hit
            break


# --- conditions -------------------------------------------------------------------


def _as_number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v))
    except ValueError:
        return None


def check(cond: Condition, names: dict[str, Any]) -> bool:
    if cond.any_of is not None:
        return any(check(c, names) for c in cond.any_of)
    if cond.all_of is not None:
        return all(check(c, names) for c in cond.all_of)
    if cond.not_ is not None:
        return not check(cond.not_, names)
    if cond.op == "expr":
        try:
            return bool(expr.evaluate(expr.compile_expr(str(cond.value)), names))
        except expr.MissingValue:
            return False
    assert cond.fact is not None
    present = cond.fact in names and names[cond.fact] is not None
    v = names.get(cond.fact)
    op = cond.op
    if op == "exists":
        return present
    if op == "missing":
        return not present
    if not present:
        return False
    want = cond.value
    if op in ("eq", "ne"):
        a, b = _as_number(v), _as_number(want)
        same = (a == b) if a is not None and b is not None else str(v).lower() == str(want).lower()
        return same if op == "eq" else not same
    if op in ("lt", "le", "gt", "ge"):
        a, b = _as_number(v), _as_number(want)
        if a is None or b is None:
            return False
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]
    if op in ("in", "not_in"):
        pool = [str(x).lower() for x in (want if isinstance(want, list) else [want])]
        return (str(v).lower() in pool) == (op == "in")
    if op == "startswith":
        prefixes = want if isinstance(want, list) else [want]
        return any(str(v).lower().startswith(str(p).lower()) for p in prefixes)
    if op == "contains":
        return str(want).lower() in str(v).lower()
    if op == "matches":
        try:
            return cond.compiled.search(str(v)) is not None
        except TimeoutError:
            return False
    if op in ("version_ge", "version_lt"):
        from sglang_doctor.registry.flags import version_key

        ends = [p.strip() for p in str(v).split("-") if p.strip()]  # a stated version or a range
        # Only when certain: every release of an inferred range must satisfy it.
        if op == "version_ge":
            return version_key(ends[0]) >= version_key(str(want))
        return version_key(ends[-1]) < version_key(str(want))
    return False


# --- findings ---------------------------------------------------------------------


def _field_of(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


# What a name rendered from the log may look like (it lands in `pip install` / `env` of the
# corrected command): a PEP 508 distribution name, an environment variable name.
_NAME_SHAPES = {"package": re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?"),
                "env": re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")}


def _render_fix(fix: Fix, names: dict[str, Any], ctx: Context) -> FixOut | None:
    if fix.when and not all(check(c, names) for c in fix.when):
        return None
    name = fix.name
    if name and "{" in name and fix.kind in _NAME_SHAPES:
        try:
            name = expr.render(name, names)
        except expr.MissingValue:
            return None  # like a templated flag: no fix without its name
        if not _NAME_SHAPES[fix.kind].fullmatch(name):
            return None
    value: str | None = None
    if fix.value is not None:
        try:
            value = expr.render(fix.value, names)
        except expr.MissingValue:
            value = None
    text = None
    if fix.text:
        try:
            text = expr.render(fix.text, names)
        except expr.MissingValue:
            text = fix.text
    flag = fix.flag
    if flag and "{" in flag:
        try:
            flag = expr.render(flag, names)
        except expr.MissingValue:
            return None
        if not flag.startswith("-"):
            return None
    frm: str | None = None
    router = fix.kind == "flag" and fix.launcher == "router"
    if router and flag:
        cur = _router_value(flag, ctx)
        if cur is not None and not isinstance(cur, (dict, list)):
            frm = str(cur)
    elif fix.kind == "flag" and flag:
        cur = ctx.server_args.get(_field_of(flag), ctx.launch_args.get(_field_of(flag)))
        if cur is not None and not isinstance(cur, (dict, list)):
            frm = str(cur)
    elif fix.kind == "env" and name:
        cur = ctx.get(f"env.{name}")
        frm = None if cur is None else str(cur)
        if _env_done(fix.action or "set", value, frm, ctx.get(f"env_set.{name}")):
            return None  # the launch already has it: not offered again
    if value is not None and frm is not None and fix.action in ("raise", "lower") and not _moves(fix.action, frm, value):
        return None  # nothing to change, or a change the wrong way ("raise 0.79 → 0.25")
    replaces = None
    if fix.replaces:
        try:
            replaces = expr.render(fix.replaces, names)
        except expr.MissingValue:
            replaces = None
        if replaces == flag:
            replaces = None
        elif replaces and frm is None:
            old = ctx.server_args.get(_field_of(replaces), ctx.launch_args.get(_field_of(replaces)))
            if value is None and old is not None and not isinstance(old, (bool, dict, list)):
                value = str(old)  # a rename keeps the user's value
    return FixOut(kind=fix.kind, flag=flag, name=name, action=fix.action, value=value, text=text,
                  replaces=replaces, versions=fix.versions, from_=frm, launcher="router" if router else None)


_SIZE = re.compile(r"(?i)\s*(-?\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*")
_UNIT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _moves(action: str, old: str, new: str) -> bool:
    """Whether `new` goes from `old` the way `action` (raise / lower) says. Values that are not
    numbers (or sizes such as `16g`) cannot be compared and count as moving when they differ."""
    a, b = _SIZE.fullmatch(old), _SIZE.fullmatch(new)
    if a is None or b is None:
        return old != new
    x, y = float(a[1]) * _UNIT[a[2].lower()], float(b[1]) * _UNIT[b[2].lower()]
    return y > x if action == "raise" else y < x


def _router_value(flag: str, ctx: Context) -> Any:
    """A router flag's value in the launch command, as launch_router or launch_server spells it."""
    cur = ctx.launch_args.get(_field_of(flag))
    if cur is None:
        from sglang_doctor.registry.router_flags import spell

        prefixed = spell(flag, None, "launch_server")
        cur = ctx.launch_args.get(_field_of(prefixed)) if prefixed and prefixed != flag else None
    return cur


def _env_done(action: str, value: str | None, current: str | None, is_set: Any) -> bool:
    """An env fix the launch already satisfies: the same value set, or a variable it unsets."""
    if action == "remove":
        return is_set is False
    if action == "set" and value is not None and current is not None:
        from sglang_doctor.launch.launch_env import same_value

        return same_value(value, current)
    return False


def _names_for(rule: Rule, hit: Hit, ctx: Context, count: int = 1) -> dict[str, Any]:
    names: dict[str, Any] = ctx.names()
    names["match_count"] = count  # how many records the rule matched in this input
    for k, v in hit.captures.items():
        num = _as_number(v)
        names[k] = num if num is not None and re.fullmatch(r"-?\d+(?:\.\d+)?", v) else v
        if isinstance(names[k], float) and names[k].is_integer() and "." not in v:
            names[k] = int(names[k])
    for name, tree in rule.let_compiled.items():
        try:
            names[name] = expr.evaluate(tree, names)
        except expr.MissingValue:
            names[name] = None
    return names


def _unhandled(rh: RuleHits, ctx: Context) -> RuleHits | None:
    """`rh` without the records a handled-exception notice sits next to (None: none is left)."""
    kept = [h for h in rh.hits if not (h.end and ctx.handled_near(h.start, h.end))]
    if not kept:
        return None
    count = sum(not ctx.handled_near(a, b) for a, b in rh.spans) if rh.spans else len(kept)
    return RuleHits(rh.rule, kept[:MAX_EVIDENCE], max(count, min(len(kept), MAX_EVIDENCE)))


def build_finding(rh: RuleHits, ctx: Context, input_index: int) -> Finding | None:
    rule = rh.rule
    if rule.skip_handled:
        found = _unhandled(rh, ctx)
        if found is None:
            return None
        rh = found
    # The kept match with the most captures: a message may be logged once as a bare line and
    # again inside a traceback that carries the numbers.
    hit = max(rh.hits, key=lambda h: len(h.captures))
    names = _names_for(rule, hit, ctx, rh.count)
    if rule.conditions and not all(check(c, names) for c in rule.conditions):
        return None
    parts: list[str] = []
    for part in rule.explanation_parts:
        if part.when and not all(check(c, names) for c in part.when):
            continue
        try:
            parts.append(expr.render(part.text, names).strip())
        except expr.MissingValue:
            continue
    fixes = [f for f in (_render_fix(fx, names, ctx) for fx in rule.fixes) if f is not None]
    evidence = [Evidence(input=input_index, line=h.line, text=h.text, ts=h.ts, rank=h.rank or None) for h in rh.hits]
    return Finding(rule=rule.id, code=rule.code, severity=rule.severity, title=_title(rule.title, names),
                   explanation=" ".join(p for p in parts if p), evidence=evidence,
                   captures=dict(hit.captures), fixes=fixes, occurrences=rh.count,
                   docs=f"docs/rules/{rule.code}-{rule.id}.md")


def _title(template: str, names: dict[str, Any]) -> str:
    """A title may quote captured values (`Model runs in {src} but …`); as written when one is unknown."""
    if "{" not in template:
        return template
    try:
        return expr.render(template, names)
    except expr.MissingValue:
        return template


def rank_findings(pairs: list[tuple[Rule, Finding]]) -> list[Finding]:
    """Root cause first: drop fallbacks an explained error makes redundant, mark consequences."""
    fired = {f.rule: (r, f) for r, f in pairs}
    # A rule may name the rules it is a symptom of (`follows`): when one of them fired in this
    # input, it is a consequence of that one.
    follows: dict[str, tuple[Rule, Finding]] = {}
    for r, f in pairs:
        cause = next((fired[c] for c in r.follows if c in fired), None)
        if cause is not None:
            follows[r.id] = cause
    specific_errors = [(r, f) for r, f in pairs if f.severity == "error" and not r.fallback and not r.consequence
                       and not r.last_resort and r.id not in follows]
    # A specific warning on the very line a generic rule reads (a request timeout SGLang logs and keeps
    # serving): that rule judged the line; the generic one, which would call it an error, gives way.
    specific_lines = {(e.input, e.line) for r, f in pairs
                      if not r.fallback and not r.last_resort and f.severity in ("error", "warning")
                      for e in f.evidence}
    kept = [(r, f) for r, f in pairs
            if not (r.fallback and (specific_errors or
                                    (f.evidence and all((e.input, e.line) in specific_lines for e in f.evidence))))]
    # A last resort only says that the launch crashed: any other error or warning says more.
    if any(f.severity in ("error", "warning") and not r.last_resort for r, f in kept):
        kept = [(r, f) for r, f in kept if not r.last_resort]
    for r, f in kept:
        if r.id in follows:
            mark_consequence(f, follows[r.id][1])
    roots = [(r, f) for r, f in kept if f.severity == "error" and not r.consequence and r.id not in follows]
    if roots:
        root_rule, root = min(roots, key=lambda rf: (rf[1].evidence[0].line, -rf[0].priority))
        for r, f in kept:
            if r.consequence and r.id not in follows:
                rank = f"on {root.evidence[0].rank}, " if root.evidence[0].rank else ""
                mark_consequence(f, root, f"{rank}{line_name(root.evidence[0].line)}")

    else:
        # Only symptoms of an unseen failure (another rank's log has the cause): the most telling
        # one stays an error, the others follow from it.
        symptoms = [(r, f) for r, f in kept if r.consequence and f.severity == "error" and r.id not in follows]
        if len(symptoms) > 1:
            lead_rule, lead = min(symptoms, key=lambda rf: (-rf[0].priority, rf[1].evidence[0].line))
            for r, f in symptoms:
                if r is not lead_rule:
                    mark_consequence(f, lead)

    def key(rf: tuple[Rule, Finding]) -> tuple[int, int, int, int, int]:
        r, f = rf
        return (SEVERITY_RANK[f.severity], int(r.consequence or r.id in follows), int(r.fallback),
                f.evidence[0].line if f.evidence else 0, -r.priority)

    return [f for _, f in sorted(kept, key=key)]


@dataclass
class InputResult:
    """One input analysed: its findings, facts and size."""

    findings: list[Finding]
    context: Context
    lines: int
    warnings: list[str]
    bytes: int = 0
    slow_lines: int = 0  # lines that went through the full per-line path


# An input that fits in one small block is read line by line (cheaper than building the
# scanner); otherwise every block goes through the scanner and only its hit lines (and the
# very first line, for the start time) are decoded.
SMALL_INPUT_BYTES = 256 * 1024
DECODE_SAMPLE_BYTES = 8 * 1024  # ~1% of each block: enough for medians and a sparkline


class _Analysis:
    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher
        self.ctx = Context()
        self.hits: dict[str, RuleHits] = {}
        self.seg = Segmenter()
        self.slow = 0
        self.last_ts: str | None = None  # latest header time seen: the time of header-less records after it

    def feed(self, line: Line) -> None:
        self.slow += 1
        for rec in self.seg.feed(line):
            self.ctx.observe(rec)
            if rec.ts:
                self.last_ts = rec.ts
            match_record(rec, self.matcher, self.hits, self.last_ts)

    def finish(self, command: str | None = None) -> None:
        for rec in self.seg.finish():
            self.ctx.observe(rec)
            match_record(rec, self.matcher, self.hits, self.last_ts)
        if command:  # the user's --cmd wins over a `# cmd:` line in the log
            self.ctx.command, self.ctx.command_line = command, None
        self.ctx.finish()
        run_checks(self.matcher, self.ctx, self.hits)

    def feed_hits(self, first: int, block: bytes, starts: list[int]) -> None:
        """Feed the hit lines of a block, plus every line while a traceback is open."""
        targets = iter(starts)
        pos, number, end = 0, first, len(block)
        while pos < end:
            if self.seg.idle:
                nxt = next(targets, None)
                if nxt is None:
                    self.skipped(block, pos, end)
                    return
                if nxt < pos:
                    continue
                self.skipped(block, pos, nxt)
                number += block.count(b"\n", pos, nxt)
                pos = nxt
            nl = block.find(b"\n", pos)
            self.feed(Line(number, decode_line(block[pos:nl])))
            number += 1
            pos = nl + 1

    def skipped(self, block: bytes, lo: int, hi: int) -> None:
        """Lines the scanner skipped: the time of the last header among them is the time of the
        header-less lines that follow, as on the line-by-line path."""
        for _ in range(8):  # a "[20" that starts no header (bs=[20, 40]) costs one more look
            i = block.rfind(b"[20", lo, hi)
            if i < 0:
                return
            start = block.rfind(b"\n", lo, i) + 1 or lo
            header = parse_header(decode_line(block[start:block.find(b"\n", i)]))
            if header is not None:
                self.last_ts = header.ts
                return
            hi = start


def run_checks(matcher: Matcher, ctx: Context, hits: dict[str, RuleHits]) -> None:
    from sglang_doctor.engine.checks import CHECKS

    for rule in matcher.checks:
        for h in CHECKS[rule.match.check](ctx):  # type: ignore[index]
            rh = hits.setdefault(rule.id, RuleHits(rule))
            rh.count += 1
            if len(rh.hits) < MAX_EVIDENCE:
                rh.hits.append(Hit(h.line, h.text, h.captures, ""))


def analyze_chunks(chunks: Iterable[tuple[int, bytes]], matcher: Matcher, input_index: int = 0,
                   scanner_factory: Callable[[], Any] | None = None, command: str | None = None,
                   progress: Callable[[int], None] | None = None) -> InputResult:
    """One input, block by block; `scanner_factory` gives the stage-one scanner (or None);
    `progress` is called once per block with the bytes read so far."""
    a = _Analysis(matcher)
    scanner: Any = None
    size = 0
    first = 1
    block = b""
    for first, block in chunks:
        size += len(block)
        if progress is not None:
            progress(size)
        if scanner_factory is None or (first == 1 and len(block) < SMALL_INPUT_BYTES):
            for line in lines_of_chunk(first, block):
                a.feed(line)
            continue
        if scanner is None:
            scanner = scanner_factory()
            if scanner is None:
                scanner_factory = None
                for line in lines_of_chunk(first, block):
                    a.feed(line)
                continue
        try:
            starts = scanner.hit_lines(block)
        except Exception:  # a broken compiled engine must not cost the diagnosis: go line by line
            scanner_factory = None
            for line in lines_of_chunk(first, block):
                a.feed(line)
            continue
        a.ctx.sampling = True
        a.ctx.sample_block(block[:DECODE_SAMPLE_BYTES])
        if first == 1 and (not starts or starts[0] != 0):
            starts = [0, *starts]
        if starts or not a.seg.idle:
            a.feed_hits(first, block, starts)
    a.finish(command)
    lines = first + block.count(b"\n") - 1 if block else 0
    pairs: list[tuple[Rule, Finding]] = []
    for rh in a.hits.values():
        f = build_finding(rh, a.ctx, input_index)
        if f is not None:
            pairs.append((rh.rule, f))
    return InputResult(rank_findings(pairs), a.ctx, lines, list(matcher.warnings), size, a.slow)


def analyze_lines(lines: Iterable[Line], matcher: Matcher, input_index: int = 0) -> InputResult:
    """The plain path over already-decoded lines (used by tests and pasted text)."""
    a = _Analysis(matcher)
    last = 0
    for line in lines:
        a.feed(line)
        last = line.number
    a.finish()
    pairs = [(rh.rule, f) for rh in a.hits.values() if (f := build_finding(rh, a.ctx, input_index)) is not None]
    return InputResult(rank_findings(pairs), a.ctx, last, list(matcher.warnings), 0, a.slow)
