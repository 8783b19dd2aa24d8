"""The default terminal report: findings, fixes, corrected command, startup summary.

Plain text when stdout is not a terminal or NO_COLOR is set (see ansi.py).
"""

from __future__ import annotations

import textwrap
from typing import Any, TextIO

from sglang_doctor.model import Finding, Report
from sglang_doctor.report.ansi import Painter, terminal_width, wants_color
from sglang_doctor.report.common import summary_line
from sglang_doctor.report.fixes import describe_fix

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}
SPARK = "▁▂▃▄▅▆▇█"
MAX_EVIDENCE_SHOWN = 3
MAX_EVIDENCE_CHARS = 220


def sparkline(values: list[float], width: int = 40) -> str:
    if not values:
        return ""
    if len(values) > width:  # average into `width` buckets
        step = len(values) / width
        values = [sum(values[int(i * step):int((i + 1) * step)] or [0]) / max(1, len(values[int(i * step):int((i + 1) * step)]))
                  for i in range(width)]
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    return "".join(SPARK[min(len(SPARK) - 1, int((v - lo) / span * (len(SPARK) - 1)))] for v in values)


class _Out:
    """Lines to one stream, styled or plain."""

    def __init__(self, out: TextIO, color: bool | None, width: int | None = None) -> None:
        self.out = out
        self.paint = Painter(wants_color(out, color))
        self.width = terminal_width(out, width)

    def print(self, *parts: tuple[str, str] | str) -> None:
        self.out.write("".join(p if isinstance(p, str) else self.paint(*p) for p in parts) + "\n")


def _finding(con: _Out, f: Finding, inputs: list[str], multi: bool) -> None:
    con.print((f"{f.severity} ", _STYLE[f.severity]), (f"{f.code} ", "bold"), (f.title, "bold"),
              (f"  [{f.rule}]", "dim"))
    for ev in f.evidence[:MAX_EVIDENCE_SHOWN]:
        name = inputs[ev.input] if ev.input < len(inputs) else "?"
        loc = f"{name}:{ev.line}" if multi or name != "<stdin>" else f"line {ev.line}"
        text = ev.text.strip()
        if len(text) > MAX_EVIDENCE_CHARS:
            text = text[:MAX_EVIDENCE_CHARS] + "…"
        con.print(("  " + loc, "dim"), (" │ ", "dim"), text)
    more = max(f.occurrences, len(f.evidence)) - min(len(f.evidence), MAX_EVIDENCE_SHOWN)
    if more > 0:
        con.print((f"  … and {more} more", "dim"))
    if f.consequence_of:
        # A consequence is one line: what it follows from (the JSON keeps the full explanation).
        con.print(("  " + (f.follows or f"Follows from {f.consequence_of}."), "dim"))
        con.print()
        return
    if f.explanation:
        width = max(40, min(con.width, 110) - 2)
        con.print(textwrap.fill(f.explanation, width, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False))
    for i, fx in enumerate(f.fixes):
        label = "  fix: " if i == 0 else "  or:  "
        con.print((label, "bold green" if i == 0 else "green"), describe_fix(fx))
    con.print()


def write_finding(f: Finding, out: TextIO, inputs: list[str], color: bool | None = None) -> None:
    """One finding block on its own (used by --follow as findings happen)."""
    _finding(_Out(out, color), f, inputs, False)


def _startup(con: _Out, s: dict[str, Any]) -> None:
    parts = []
    if s.get("phases"):
        parts.append(" → ".join(f"{p['phase']}" + (f" {p['seconds']:.0f}s" if "seconds" in p else "")
                                for p in s["phases"]))
    con.print(("startup: ", "bold"), parts[0] if parts else ("ready" if s.get("ready") else "did not reach ready"))
    facts = []
    if s.get("model"):
        facts.append(f"model {s['model']}" + (f" ({s['quantization']})" if s.get("quantization") else ""))
    if s.get("weights_gb") is not None:
        facts.append(f"weights {s['weights_gb']} GB")
    if s.get("kv_tokens"):
        kv = f"KV pool {s['kv_tokens']:,} tokens"
        if s.get("context_len"):
            kv += f" = {s.get('kv_over_context', 0):.2f} × context {s['context_len']:,}"
        facts.append(kv)
    if s.get("mamba_slots") is not None:
        facts.append(f"mamba slots {s['mamba_slots']}")
    facts.append({"captured": "CUDA graphs captured", "started": "CUDA graph capture started (no end line)"}
                 .get(s.get("cuda_graph", ""), "no CUDA graph capture"))
    if s.get("time_to_ready_s") is not None:
        facts.append(f"ready in {s['time_to_ready_s']:.0f} s")
    con.print("  " + "; ".join(facts))
    tp = s.get("decode_throughput")
    if tp:
        about = "≈" if tp.get("approximate") else ""
        con.print(f"  decode throughput median {about}{tp['median']:.1f} tok/s (p10 {about}{tp['p10']:.1f}, "
                  f"p90 {about}{tp['p90']:.1f}; {tp['lines']:,} decode lines)  ",
                  (sparkline(s.get("throughput_histogram") or []), "green"))
    con.print()


def _launch(con: _Out, report: Report, findings: list[Finding], startup: dict[str, Any] | None,
            corrected: str | None, names: list[str], multi: bool, quiet: bool) -> None:
    """One launch: its startup summary, findings and corrected command."""
    if not quiet and startup:
        _startup(con, startup)
    for f in findings:
        if not (quiet and f.severity == "info"):
            _finding(con, f, names, multi)
    if corrected:
        con.print(("corrected command:", "bold green"))
        con.print("  " + corrected)
        con.print()


def write(report: Report, out: TextIO, quiet: bool = False, color: bool | None = None,
          width: int | None = None, **_: Any) -> None:
    con = _Out(out, color, width)
    names = [i.name for i in report.inputs]
    multi = len(names) > 1
    if len(report.launches) > 1:  # several launches (a restarted server, unrelated logs): one block each
        for n, launch in enumerate(report.launches, 1):
            where = f"{names[launch.input] if launch.input < len(names) else '?'}:{launch.first_line}-{launch.last_line}"
            release = f", SGLang {launch.sglang_version}" if launch.sglang_version else ""
            con.print((f"launch {n} of {len(report.launches)}: {where}{release}", "bold"))
            con.print()
            _launch(con, report, [report.findings[i] for i in launch.findings], launch.startup,
                    launch.corrected_command, names, multi, quiet)
    else:
        _launch(con, report, report.findings, report.startup, report.corrected_command, names, multi, quiet)
    read = [i.name for i in report.inputs if not i.error]
    found = any(report.summary.values())  # (--follow prints the report less the findings it streamed)
    if not found and report.inputs and not read:
        con.print(("✗ no input could be read", "bold red"))  # why: one line each on stderr
    elif not found:
        hidden = f" ({report.suppressed} suppressed)" if report.suppressed else ""
        con.print((f"✓ no known problem found in {', '.join(read) or 'the input'}{hidden}", "green"))
    else:
        con.print((summary_line(report), "bold"))
