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
from sglang_doctor.facts.decode import TP_LITERAL
from sglang_doctor.model import Evidence, Finding, FixOut, line_name, mark_consequence, rule_page
from sglang_doctor.read.records import Record, Segmenter, frame_of, glog_time, last_header_time
from sglang_doctor.read.reader import Line, decode_line, lines_of_chunk, newlines
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
    fixes: tuple[dict[str, Any], ...] = ()  # a built-in check's own fixes (Fix fields; after the rule's)
    origin: dict[str, Any] | None = None  # a built-in check's Finding.origin
    isolate: bool = False  # a built-in check asks for the isolating switches (engine/isolate.py)


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


def _search(p: Pattern, rec: Record, matcher: Matcher, rule: Rule, joined: str | None = None) -> tuple[Any, str]:
    """`joined`: search the record's exception message with its wrapped lines joined (Record.joined)."""
    if p.in_ == "exception":
        target = ("\n".join(rec.exceptions) if rec.kind == "traceback" else rec.text) if joined is None else joined
    elif p.in_ == "frames":
        target = "\n".join(rec.frames)
    else:
        target = rec.text if joined is None else rec.text + "\n" + joined
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
    if rec.kind == "traceback" and rec.exceptions and (_TRACEBACK_HEAD in text or frame_of(text) is not None
                                                        or _frame_source(rec, number)):
        return _exception_line(rec) or (number, text)
    return number, text


def _frame_source(rec: Record, number: int) -> bool:
    """Whether input line `number` is the source line a traceback prints under a frame (`raise X(...)`):
    a match there quotes code, not what happened."""
    for i in range(1, len(rec.lines)):
        if rec.lines[i].number == number:
            return frame_of(rec.lines[i - 1].text) is not None
    return False


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
    order: Iterable[int] = list(range(len(rec.lines)))
    if target is not rec.text and rec.exceptions and target.startswith(rec.exceptions[0][:40]):
        order = order[::-1]
    for key in dict.fromkeys((snippet[:60], snippet[:60].strip(), snippet[:30].strip())):
        for i in order:  # (the shorter keys: a match in a wrapped message that Record.joined put together)
            if key and key in read[i]:
                return rec.lines[i].number, rec.lines[i].text
    return rec.start, rec.lines[0].text




def _rule_match(rule: Rule, rec: Record, matcher: Matcher,
                joined: str | None) -> tuple[Any, str, dict[str, str]] | None:
    """The first of the rule's patterns that matches the record with its requires and none of its
    excludes: (match, the text searched, the requires' captures)."""
    for p in rule.match.any:
        m, target = _search(p, rec, matcher, rule)
        alt = None
        if m is None and joined is not None and p.in_ != "frames":
            alt = joined  # a message wrapped over several lines, as one line
            m, target = _search(p, rec, matcher, rule, alt)
        if m is None:
            continue
        extra: dict[str, str] = {}
        missing = False
        for q in rule.match.require:
            mq = _search(q, rec, matcher, rule, alt)[0]
            if mq is None:
                missing = True
                break
            extra.update({k: v for k, v in mq.groupdict().items() if v is not None})
        if missing or any(_search(q, rec, matcher, rule, alt)[0] is not None for q in rule.match.exclude):
            continue
        return m, target, extra
    return None


def match_record(rec: Record, matcher: Matcher, hits: dict[str, RuleHits], last_ts: str | None = None) -> None:
    """`last_ts`: the time of the latest header line before `rec`, for a record logged without one."""
    trace = matcher.trace
    joined = rec.joined() if rec.kind == "traceback" or len(rec.lines) > 1 else None
    for rule in matcher.candidates(rec.text if joined is None else rec.text + "\n" + joined):
        if trace is not None:
            trace.candidate(rule)
        found = _rule_match(rule, rec, matcher, joined)
        if found is None:
            continue
        m, target, extra = found
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


def saturated(rh: RuleHits | None) -> bool:
    """A rule whose further matches only add to its count: its evidence is full and it keeps no spans."""
    return rh is not None and len(rh.hits) >= MAX_EVIDENCE and not rh.rule.skip_handled


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
    elif fix.kind == "docker" and flag and flag.startswith("--"):
        cur = ctx.get("docker." + _field_of(flag))
        frm = None if cur is None else str(cur)
    elif fix.kind == "env" and name:
        cur = ctx.get(f"env.{name}")
        frm = None if cur is None else str(cur)
        if _env_done(fix.action or "set", value, frm, ctx.get(f"env_set.{name}")):
            return None  # the launch already has it: not offered again
    if value is not None and frm is not None and fix.action in ("raise", "lower", "set") \
            and not _moves(fix.action, frm, value) and not fix.replaces:
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
                  replaces=replaces, versions=fix.versions, from_=frm, launcher="router" if router else None,
                  combined=True if fix.combined else None)


def _moves(action: str, frm: str, value: str) -> bool:
    """Whether `value` lies in the fix's direction from `frm` (`set`, or not comparable as numbers:
    differs)."""
    new, old = expr.quantity(value), expr.quantity(frm)
    if new is None or old is None:
        return value.lower() != frm.lower()
    return new > old if action == "raise" else new < old if action == "lower" else new != old


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


def _names_for(rule: Rule, hit: Hit, ctx: Context, count: int = 1, lets: bool = True) -> dict[str, Any]:
    names: dict[str, Any] = ctx.names()
    names["match_count"] = count  # how many records the rule matched in this input
    for k, v in hit.captures.items():
        if re.fullmatch(r"-?\d+", v):
            names[k] = int(v)
        elif re.fullmatch(r"-?\d+\.\d+", v):
            names[k] = expr.Captured(v)  # a number that is quoted as the log wrote it
        else:
            names[k] = v
    if lets:
        _add_lets(rule, names)
    return names


def _add_lets(rule: Rule, names: dict[str, Any]) -> None:
    for name, tree in rule.let_compiled.items():
        try:
            names[name] = expr.evaluate(tree, names)
        except expr.MissingValue:
            names[name] = None
        if isinstance(names[name], dict):  # a record (mem_plan()): its fields are `<let>.<field>`
            names.update({f"{name}.{k}": v for k, v in names.pop(name).items()})
            names[name] = True


def _unhandled(rh: RuleHits, ctx: Context) -> RuleHits | None:
    """`rh` without the records a handled-exception notice sits next to (None: none is left)."""
    kept = [h for h in rh.hits if not (h.end and ctx.handled_near(h.start, h.end))]
    if not kept:
        return None
    count = sum(not ctx.handled_near(a, b) for a, b in rh.spans) if rh.spans else len(kept)
    return RuleHits(rh.rule, kept[:MAX_EVIDENCE], max(count, min(len(kept), MAX_EVIDENCE)))


def _each(fix: Fix, names: dict[str, Any]) -> list[dict[str, Any]]:
    """The names a fix is rendered with: once, or once per item of its `each` list (as `item`)."""
    if fix.each is None:
        return [names]
    items = names.get(fix.each)
    return [{**names, "item": x} for x in items] if isinstance(items, (list, tuple)) else []


def _fixes_of(rule: Rule, ctx: Context, isolate: bool = False) -> list[Fix]:
    if not (rule.isolate or isolate):
        return rule.fixes
    from sglang_doctor.engine.isolate import isolating_fixes

    return [*rule.fixes, *isolating_fixes(ctx)]


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
    names = _names_for(rule, hit, ctx, rh.count, lets=False)
    before, after = rule.condition_stages  # conditions on facts and captures first: lets may be costly
    if before and not all(check(c, names) for c in before):
        return None
    _add_lets(rule, names)
    if after and not all(check(c, names) for c in after):
        return None
    parts: list[str] = []
    for part in rule.explanation_parts:
        if part.when and not all(check(c, names) for c in part.when):
            continue
        try:
            parts.append(expr.render(part.text, names).strip())
        except expr.MissingValue:
            continue
    fixes = [f for fx in [*_fixes_of(rule, ctx, hit.isolate), *(Fix(**d) for d in hit.fixes)]
             for f in (_render_fix(fx, n, ctx) for n in _each(fx, names)) if f is not None]
    evidence = [Evidence(input=input_index, line=h.line, text=h.text, ts=h.ts, rank=h.rank or None) for h in rh.hits]
    return Finding(rule=rule.id, code=rule.code, severity=rule.severity, title=_title(rule.title, names),
                   explanation=" ".join(p for p in parts if p), evidence=evidence,
                   captures=dict(hit.captures), fixes=fixes, occurrences=rh.count,
                   docs=rule_page(rule.code, rule.id), origin=hit.origin)


# A warning logged at most this many lines before a failure (a request rejected, then the crash its
# handling caused) is taken as what the last resort would only call unknown.
WARNED_BEFORE = 8


def _warned_just_before(f: Finding, warned: list[Evidence]) -> bool:
    if not f.evidence:
        return False
    at = f.evidence[0]
    return any(w.input == at.input and at.line - WARNED_BEFORE <= w.line <= at.line for w in warned)


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
    # A last resort only says that the launch failed: another error that names a cause says more (a
    # warning does not: the failed launch would then pass as one that only needs tuning).
    # A last resort that only saw the launcher report a failure (captures `lead: symptom`: an exit code,
    # SIGQUIT) gives way to any other error, a symptom rule's included: it would say less.
    causes = any(f.severity == "error" and not r.last_resort and not r.consequence and r.id not in follows
                 for r, f in kept)
    errors = any(f.severity == "error" and not r.last_resort for r, f in kept)
    warned = [e for r, f in kept if f.severity == "warning" for e in f.evidence[:1]]
    kept = [(r, f) for r, f in kept
            if not (r.last_resort and (causes or (errors and f.captures.get("lead") == "symptom")
                                       or _warned_just_before(f, warned)))]
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
class LaunchResult:
    """One launch of an input (a restarted server logs several): its own facts and findings."""

    input: int
    first_line: int
    last_line: int
    findings: list[Finding]
    context: Context


@dataclass
class InputResult:
    """One input analysed: its launches (the last one first), facts and size.

    `findings` and `context` are those of the input as a whole when it holds one launch; with
    several, `findings` lists every launch's (the last launch's first) and `context` is the
    last launch's.
    """

    findings: list[Finding]
    context: Context
    lines: int
    warnings: list[str]
    bytes: int = 0
    slow_lines: int = 0  # lines that went through the full per-line path
    launches: list[LaunchResult] = field(default_factory=list)


# An input that fits in one small block is read line by line (cheaper than building the
# scanner); otherwise every block goes through the scanner and only its hit lines (and the
# very first line, for the start time) are decoded; the decode statistics read every line
# of the block at once (facts/decode.py).
SMALL_INPUT_BYTES = 256 * 1024


class _Launch:
    """The launch being read: its facts and rule hits, from its first line on."""

    def __init__(self, first_line: int, command: tuple[str | None, int | None] = (None, None)) -> None:
        self.ctx = Context()
        self.ctx.command, self.ctx.command_line = command  # a `# cmd:` line speaks for the whole input
        self.hits: dict[str, RuleHits] = {}
        self.first_line = first_line
        self.last_line = first_line


class _Analysis:
    """One input, record by record. A second `server_args=` line starts a new launch (a restarted
    server, `docker logs` of a `--restart` container): each launch keeps its own facts and hits."""

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher
        self.closed: list[_Launch] = []
        self.launch = _Launch(1)
        self.seg = Segmenter()
        self.slow = 0
        self.last_ts: str | None = None  # latest header time seen: the time of header-less records after it
        # While a block is fed (feed_block): the offset of the line being fed, and where a new launch began.
        self._at = 0
        self._switches: list[tuple[int, _Launch]] = []
        # The last block fed: its last line is the log's last, which how a launch ended reads (a stall at a
        # build step, a "Killed"), so it is fed at the end when the scanner skipped it (None when a second
        # process read the end: pipeline/split.py).
        self._tail: tuple[int, bytes] | None = None
        self._fed = 0  # the last line fed as a line
        # The stage-one scanner (set by whoever scans the blocks): which rules a hit line is for.
        self.scanner: Any = None
        self._scratch = Segmenter()  # reads a line that is only counted (count_line)
        self._counted: tuple[int, list[str]] | None = None  # the last such line, and the rules it counted for
        self._count_rules: dict[tuple[int, ...], tuple[_Launch, list[Rule]]] = {}  # count_only's answers

    @property
    def ctx(self) -> Context:
        return self.launch.ctx

    @property
    def hits(self) -> dict[str, RuleHits]:
        return self.launch.hits

    def feed(self, line: Line, decode: bool = True) -> None:
        """`decode`: count a decode line here (False when its block is counted at once, feed_block)."""
        self.slow += 1
        self._fed = line.number
        for rec in self.seg.feed(line):
            self._record(rec)
        if decode and TP_LITERAL in line.text:
            self.launch.ctx.decode.add_line(line.text, line.number)

    def _record(self, rec: Record) -> None:
        if rec.kind == "line" and self.ctx.server_args_line is not None and rec.message.startswith("server_args="):
            self.closed.append(self.launch)
            self.launch = _Launch(rec.start, (self.ctx.command, self.ctx.command_line))
            self._switches.append((self._at, self.launch))
        self.launch.last_line = rec.end
        self.ctx.observe(rec)
        if rec.ts:
            self.last_ts = rec.ts
        match_record(rec, self.matcher, self.hits, self.last_ts)

    def flush(self) -> None:
        """The stream paused or ended: an open traceback is as complete as it gets."""
        for rec in self.seg.finish():
            self._record(rec)

    def counted(self, number: int, raw: bytes, ids: tuple[int, ...]) -> bool:
        """Line `number` (`ids`: the scanner's pattern ids there) only counted, not to be fed (count_only)."""
        rules = self.count_only(ids)
        return rules is not None and self.count_line(number, raw, rules)

    def count_only(self, ids: tuple[int, ...]) -> list[Rule] | None:
        """The rules a hit line is for (`ids`: the scanner's pattern ids there), when only rules whose
        evidence is full read it: nothing else (a fact, the crash watch, a traceback marker) and no
        open traceback. Such a line is only counted (count_line): a server that runs without CUDA
        graphs has a decode-without-cuda-graph match on every decode line."""
        if self.scanner is None or not ids or self.matcher.trace is not None or not self.seg.idle:
            return None
        known = self._count_rules.get(ids)
        if known is not None and known[0] is self.launch:  # (a launch's saturated rules stay so)
            return known[1]
        rules: list[Rule] = []
        for i in ids:
            for owner in self.scanner.owners_of(i):
                if owner is None or not saturated(self.hits.get(owner.id)):
                    return None
                if owner not in rules:
                    rules.append(owner)
        self._count_rules[ids] = (self.launch, rules)
        return rules

    def count_line(self, number: int, raw: bytes, rules: list[Rule]) -> bool:
        """Count line `number` for each of `rules` that matches it, as feeding it would; False (nothing
        done) when it is not a logged line that stands alone: then it is fed."""
        seg = self._scratch
        recs = seg.feed(Line(number, decode_line(raw)))
        if not seg.idle or any(rec.kind != "line" for rec in recs):
            self._scratch = Segmenter()
            return False
        counted = []
        hits = self.launch.hits
        for rec in recs:
            for rule in rules:
                if _rule_match(rule, rec, self.matcher, None) is not None:
                    hits[rule.id].count += 1
                    counted.append(rule.id)
            if rec.ts:
                self.last_ts = rec.ts
                self.launch.ctx.note_time(rec.ts)
        self.launch.last_line = number
        self._counted = (number, counted)
        return True

    def finish(self, command: str | None = None) -> None:
        if self._tail is not None:
            first, block = self._tail
            start = block.rfind(b"\n", 0, len(block) - 1) + 1
            number = first + block.count(b"\n", 0, start)
            if number > self._fed:  # the scanner skipped it: read as the line-by-line path reads it
                if self._counted is not None and self._counted[0] == number:
                    for rule_id in self._counted[1]:  # (it was only counted: now it is read)
                        self.hits[rule_id].count -= 1
                self.feed(Line(number, decode_line(block[start:len(block) - 1])), decode=False)
        self.flush()
        for launch in [*self.closed, self.launch]:
            if command:  # the user's --cmd wins over a `# cmd:` line in the log
                launch.ctx.command, launch.ctx.command_line = command, None
            launch.ctx.finish()
            run_checks(self.matcher, launch.ctx, launch.hits)

    def result(self, input_index: int, lines: int, size: int) -> InputResult:
        """Findings per launch (ranked root cause first), the last launch first."""
        launches = []
        every = [*self.closed, self.launch]
        for i in reversed(range(len(every))):
            launch = every[i]
            pairs = [(rh.rule, f) for rh in launch.hits.values()
                     if (f := build_finding(rh, launch.ctx, input_index)) is not None]
            pairs += late_findings(self.matcher, launch.ctx, pairs, input_index)
            last = every[i + 1].first_line - 1 if i + 1 < len(every) else max(lines, launch.last_line)
            launches.append(LaunchResult(input_index, launch.first_line, last, rank_findings(pairs), launch.ctx))
        findings = [f for launch in launches for f in launch.findings]
        return InputResult(findings, launches[0].context, lines, list(self.matcher.warnings), size, self.slow,
                           launches)

    def feed_block(self, first: int, block: bytes, starts: list[int],
                   ids: list[tuple[int, ...]] | None = None) -> None:
        """A block the scanner has read: its hit lines (see feed_hits), then its decode lines, each
        stretch into the launch that was current there."""
        if first == 1 and (not starts or starts[0] != 0):
            starts = [0, *starts]  # (the first line: the start time)
            ids = None if ids is None else [(), *ids]
        launch = self.launch
        self._switches = []
        if starts or not self.seg.idle:
            self.feed_hits(first, block, starts, ids=ids)
        else:
            self.skipped(block, 0, len(block))
        lo = 0
        for at, nxt in self._switches:
            launch.ctx.decode.add_block(block, first, lo, at)
            launch, lo = nxt, at
        launch.ctx.decode.add_block(block, first, lo)
        self._tail = (first, block)  # its last line is the log's last, if no later block comes

    def feed_hits(self, first: int, block: bytes, starts: list[int], pos: int = 0, number: int | None = None,
                  ids: list[tuple[int, ...]] | None = None) -> None:
        """Feed the hit lines of a block, plus every line while a traceback is open (from `pos`, the
        start of line `number`, when resuming in the middle of the block). `ids`: the scanner's pattern
        ids of each hit line (a line only saturated rules read is counted, see count_only)."""
        targets = iter(range(len(starts)))
        number = first if number is None else number
        end = len(block)
        while pos < end:
            hit_ids = None  # (a hit line's; none while going line by line through a traceback)
            if self.seg.idle:
                k = next(targets, None)
                if k is None:
                    self.skipped(block, pos, end)
                    return
                nxt = starts[k]
                if nxt < pos:
                    continue
                self.skipped(block, pos, nxt)
                number += block.count(b"\n", pos, nxt)
                pos = nxt
                hit_ids = ids[k] if ids is not None else None
            nl = block.find(b"\n", pos)
            if hit_ids is None or not self.counted(number, block[pos:nl], hit_ids):
                self._at = pos
                self.feed(Line(number, decode_line(block[pos:nl])), decode=False)
            number += 1
            pos = nl + 1

    def skipped(self, block: bytes, lo: int, hi: int) -> None:
        """Lines the scanner skipped: the time of the last header among them is the time of the
        header-less lines that follow, as on the line-by-line path."""
        ts = last_header_time(block, lo, hi)
        if ts is not None:
            self.last_ts = ts
            ctx = self.ctx  # (the launch's latest time: how long a phase ran without progress, facts/crash.py)
            if ctx.last_ts is None or ts > ctx.last_ts:
                ctx.last_ts = ts


def run_checks(matcher: Matcher, ctx: Context, hits: dict[str, RuleHits], late: bool = False) -> None:
    """The built-in checks of the rule set (`late`: the catalog recognisers, see late_findings)."""
    from sglang_doctor.engine.checks import CHECKS, LATE_CHECKS

    for rule in matcher.checks:
        if (rule.match.check in LATE_CHECKS) != late:
            continue
        for h in CHECKS[rule.match.check](ctx):  # type: ignore[index]
            # each flag of the command its own finding (its own explanation, fix and evidence)
            key = rule.id if "flag" not in h.captures else f"{rule.id}\0{h.captures['flag']}"
            rh = hits.setdefault(key, RuleHits(rule))
            rh.count += 1
            if len(rh.hits) < MAX_EVIDENCE:
                rh.hits.append(Hit(h.line, h.text, h.captures, "", fixes=h.fixes, origin=h.origin,
                                   isolate=h.isolate))


def late_findings(matcher: Matcher, ctx: Context, pairs: list[tuple[Rule, Finding]],
                  input_index: int) -> list[tuple[Rule, Finding]]:
    """The catalog recognisers' findings (an SGLang message, a CUDA/NCCL code, a dependency pin, a
    library's provider), only for a launch no specific rule explains: they would give way to such an
    error anyway (they are fallbacks), and their catalogs are not loaded for nothing."""
    if any(f.severity == "error" and not (r.fallback or r.last_resort or r.consequence) for r, f in pairs):
        return []
    hits: dict[str, RuleHits] = {}
    run_checks(matcher, ctx, hits, late=True)
    out = []
    for rh in hits.values():
        f = build_finding(rh, ctx, input_index)
        if f is None:
            continue
        # A generic rule that already quotes the line with a fix to make says it better: it takes the
        # catalog's origin instead of a second error about the same line (not the crash net, which only
        # says the launch failed, nor a rule that declares itself a symptom of the recogniser's rule).
        lines = {(e.input, e.line) for e in f.evidence}
        other = next((g for r, g in pairs if g.severity in ("error", "warning") and g.origin is None
                      and not r.last_resort and rh.rule.id not in r.follows
                      and any(x.kind != "note" for x in g.fixes)
                      and any((e.input, e.line) in lines for e in g.evidence)), None)
        if other is not None:
            other.origin = f.origin
        else:
            out.append((rh.rule, f))
    return out


_WORD_BYTES = re.compile(rb"\w")  # any text at all (an input of NULs and junk bytes is empty)

class _Blocks:
    """Feeds an input's blocks to its analysis: line by line when the input is small (or there is
    no scanner), else through the stage-one scanner."""

    def __init__(self, a: _Analysis, scanner_factory: Callable[[], Any] | None,
                 progress: Callable[[int], None] | None) -> None:
        self.a = a
        self.factory = scanner_factory
        self.scanner: Any = None
        self.progress = progress
        self.size = 0
        self._last: tuple[int, bytes] = (1, b"")

    @property
    def next_line(self) -> int:
        """The number of the line after the last block."""
        first, block = self._last
        return first + newlines(block)

    def take(self, first: int, block: bytes) -> None:
        self.size += len(block)
        self._last = (first, block)
        if self.progress is not None:
            self.progress(self.size)
        a = self.a
        if self.factory is None or (first == 1 and len(block) < SMALL_INPUT_BYTES):
            self._lines(first, block)
            return
        if self.scanner is None:
            self.scanner = self.factory()
            if self.scanner is None:
                self.factory = None
                self._lines(first, block)
                return
        try:
            starts, ids = self.scanner.hits(block)
        except Exception:  # a broken compiled engine must not cost the diagnosis: go line by line
            self.factory = None
            self._lines(first, block)
            return
        if not a.ctx.sglang_mentioned and (b"sglang" in block or b"SGLang" in block or b"SGLANG" in block):
            a.ctx.sglang_mentioned = True  # (as the line path notes it: the scanner decodes only its hit lines)
        if not a.ctx.text_lines and _WORD_BYTES.search(block):
            a.ctx.text_lines = 1  # (the scanner's path decodes only its hit lines)
        a.scanner = self.scanner
        a.feed_block(first, block, starts, ids)

    def _lines(self, first: int, block: bytes) -> None:
        for line in lines_of_chunk(first, block):
            self.a.feed(line)


def analyze_chunks(chunks: Iterable[tuple[int, bytes]], matcher: Matcher, input_index: int = 0,
                   scanner_factory: Callable[[], Any] | None = None, command: str | None = None,
                   progress: Callable[[int], None] | None = None,
                   rest: Callable[[int], Any] | None = None, pasted: bool = False) -> InputResult:
    """One input, block by block; `scanner_factory` gives the stage-one scanner (or None);
    `progress` is called once per block with the bytes read so far; `pasted`: an error given to
    `explain` (itself a sign of failure, see facts/crash.py).

    `rest`: the input's second part was read apart (pipeline/split.py): called with the number of
    its first line once `chunks` are done, it gives either that part's stage one and a reader of its
    blocks, (Prescan, read(offset, size)), or, when that failed, its chunks to read here."""
    a = _Analysis(matcher)
    a.ctx.crash.pasted = pasted
    blocks = _Blocks(a, scanner_factory, progress)
    for first, block in chunks:
        blocks.take(first, block)
    if rest is not None:
        from sglang_doctor.engine.prescan import Prescan, feed_prescan

        part = rest(blocks.next_line)
        if isinstance(part, tuple) and isinstance(part[0], Prescan):
            lines = feed_prescan(a, part[0], blocks.next_line, part[1])
            part = part[0]
            a.ctx.input_lines = lines
            a.finish(command)
            return a.result(input_index, lines, blocks.size + part.size)
        for first, block in part:
            blocks.take(first, block)
    a.ctx.input_lines = blocks.next_line - 1  # (the fast path feeds only its hit lines: the whole count)
    a.finish(command)
    return a.result(input_index, blocks.next_line - 1, blocks.size)


def analyze_lines(lines: Iterable[Line], matcher: Matcher, input_index: int = 0) -> InputResult:
    """The plain path over already-decoded lines (used by tests and pasted text)."""
    a = _Analysis(matcher)
    last = 0
    for line in lines:
        a.feed(line)
        last = line.number
    a.finish()
    return a.result(input_index, last, 0)
