"""`--why`: for every rule and input, how far the rule got and why it stopped.

`doctor.diagnose` hands a WhyTrace (Options.trace) to the engine's Matcher, which tells it
of every record the prefilter let through to a rule (`candidate`) and of every record a
rule matched (`matched`, with the engine's RuleHits). After the run, `explain` evaluates
each matched rule's conditions again, on the same names the engine used (context facts,
captures, `let` values), to say which held and which failed. It never changes what the
engine decides.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.policy.redact import PLACEHOLDER, redact_text, secret_value

MAX_VALUE_CHARS = 80


@dataclass
class InputTrace:
    """What --why saw of the rules on one input."""

    index: int
    name: str
    candidates: Counter[str] = field(default_factory=Counter)  # rule id -> records past the prefilter
    hits: dict[str, Any] = field(default_factory=dict)  # rule id -> the engine's RuleHits


@dataclass
class WhyTrace:
    """The observer `doctor.diagnose` hands to the engine's Matcher (Options.trace)."""

    inputs: list[InputTrace] = field(default_factory=list)

    def start(self, index: int, name: str) -> None:
        self.inputs.append(InputTrace(index, name))

    def candidate(self, rule: Any) -> None:
        if self.inputs:
            self.inputs[-1].candidates[rule.id] += 1

    def matched(self, rule_hits: Any) -> None:
        if self.inputs:
            self.inputs[-1].hits[rule_hits.rule.id] = rule_hits


def _show(v: Any, name: str = "") -> str:
    # Redacted before it is cut, so a cut can never leave a secret too short to recognise.
    if secret_value(name, v):
        return PLACEHOLDER
    s = redact_text(repr(v) if isinstance(v, str) else str(v))
    return s if len(s) <= MAX_VALUE_CHARS else s[:MAX_VALUE_CHARS] + "…"


def _expr_names(source: str) -> list[str]:
    """The names and dotted facts an expression reads, in order."""
    import ast

    from sglang_doctor.engine.expr import compile_expr

    out: list[str] = []
    for node in ast.walk(compile_expr(source)):
        if isinstance(node, (ast.Name, ast.Attribute)):
            parts: list[str] = []
            cur: ast.AST = node
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                dotted = ".".join([cur.id, *reversed(parts)])
                if dotted not in out:
                    out.append(dotted)
    return out


def describe_condition(cond: Any, names: dict[str, Any]) -> tuple[bool, str]:
    """(held, one-line description with the values it was decided on)."""
    from sglang_doctor.engine.analyze import check

    held = check(cond, names)
    if cond.any_of is not None or cond.all_of is not None:
        kind, items = ("any of", cond.any_of) if cond.any_of is not None else ("all of", cond.all_of)
        inner = "; ".join(("✓ " if ok else "✗ ") + text for ok, text in (describe_condition(c, names) for c in items))
        return held, f"{kind} ({inner})"
    if cond.not_ is not None:
        _, text = describe_condition(cond.not_, names)
        return held, f"not ({text})"
    if cond.op == "expr":
        used = [f"{n} = {_show(names[n], n)}" for n in _expr_names(str(cond.value)) if names.get(n) is not None]
        return held, f"expr {cond.value}" + (f" [{', '.join(used)}]" if used else "")
    fact = cond.fact
    present = fact in names and names[fact] is not None
    actual = f"{fact} = {_show(names[fact], fact)}" if present else f"{fact} not in the log"
    want = "" if cond.op in ("exists", "missing") else f" {_show(cond.value)}"
    return held, f"{fact} {cond.op}{want} [{actual}]"


def _contexts(report: Any, results: list[Any]) -> dict[int, Any]:
    """Input index -> its engine Context (results hold the inputs that could be read, in order)."""
    readable = [i for i, info in enumerate(report.inputs) if not info.error]
    return {i: res.context for i, res in zip(readable, results)}


def explain(trace: WhyTrace, rules: list[Any], report: Any, results: list[Any],
            suppressed: list[Any] | None = None, disabled: list[str] | None = None,
            hosts: bool = False) -> list[str]:
    """Lines explaining each rule's fate on each input, redacted like the report."""
    from sglang_doctor.engine.analyze import _names_for, build_finding

    contexts = _contexts(report, results)
    reported = {(f.rule, f.evidence[0].input if f.evidence else 0) for f in report.findings}
    hidden = {(s.finding.rule, s.finding.evidence[0].input if s.finding.evidence else 0): s for s in suppressed or []}
    ordered = sorted(rules, key=lambda r: r.code)
    lines = [f"why: how each of the {len(ordered)} rules fared on each input"]
    if disabled:
        lines.append("  not run (config enable/disable): " + ", ".join(disabled))

    def outcome(r: Any, index: int) -> str:
        key = (r.id, index)
        if key in hidden:
            s = hidden[key]
            return f"finding suppressed ({s.by}{': ' + s.reason if s.reason else ''})"
        if key in reported:
            return "finding reported"
        return "finding dropped (a fallback or last-resort rule: another error explains this input)"

    for t in trace.inputs:
        name = report.inputs[t.index].name if t.index < len(report.inputs) else t.name
        lines.append(f"{name}:")
        skipped: list[str] = []
        for r in ordered:
            head = f"  {r.code} {r.id} ({r.severity}): "
            check_name = getattr(r.match, "check", None)
            if check_name:
                found = (r.id, t.index) in reported or (r.id, t.index) in hidden
                lines.append(head + f"built-in check {check_name!r} on the facts → "
                             + (outcome(r, t.index) if found else "nothing found"))
                continue
            n = t.candidates.get(r.id, 0)
            if n == 0:
                skipped.append(r.code)
                continue
            gate = ("no prefilter literal, every record checked" if r.prefilter_literals is None
                    else f"prefilter passed {n} record(s)")
            rh = t.hits.get(r.id)
            ctx = contexts.get(t.index)
            if rh is None or not rh.hits or ctx is None:
                lines.append(head + f"{gate}; no pattern matched → no finding")
                continue
            lines.append(head + f"{gate}; {rh.count} matched")
            # The engine's own verdict; the lines below show the values it was decided on.
            held = build_finding(rh, ctx, t.index) is not None
            names = _names_for(r, max(rh.hits, key=lambda h: len(h.captures)), ctx, rh.count)
            for c in r.conditions:
                ok, text = describe_condition(c, names)
                lines.append(f"      {'✓' if ok else '✗'} {text}")
            if not r.conditions:
                lines.append("      (no conditions)")
            lines.append("      → " + (outcome(r, t.index) if held else "a condition failed → no finding"))
        if skipped:
            lines.append(f"  not reached, no record holds their prefilter literal ({len(skipped)}): " + ", ".join(skipped))
    return [redact_text(x, hosts=hosts) for x in lines]
