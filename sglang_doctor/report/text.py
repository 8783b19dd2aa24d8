"""The default terminal report (rich): findings, fixes, corrected command, startup summary.

Plain text when stdout is not a terminal or NO_COLOR is set (rich decides).
"""

from __future__ import annotations

import textwrap
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from ..model import Finding, Report
from .common import summary_line
from .fixes import describe_fix

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


def _finding(console: Console, f: Finding, inputs: list[str], multi: bool) -> None:
    head = Text()
    head.append(f"{f.severity} ", style=_STYLE[f.severity])
    head.append(f"{f.code} ", style="bold")
    head.append(f.title, style="bold")
    head.append(f"  [{f.rule}]", style="dim")
    console.print(head)
    for ev in f.evidence[:MAX_EVIDENCE_SHOWN]:
        name = inputs[ev.input] if ev.input < len(inputs) else "?"
        loc = f"{name}:{ev.line}" if multi or name != "<stdin>" else f"line {ev.line}"
        text = ev.text.strip()
        if len(text) > MAX_EVIDENCE_CHARS:
            text = text[:MAX_EVIDENCE_CHARS] + "…"
        console.print(Text.assemble(("  " + loc, "dim"), (" │ ", "dim"), (text, "")))
    more = max(f.occurrences, len(f.evidence)) - min(len(f.evidence), MAX_EVIDENCE_SHOWN)
    if more > 0:
        console.print(Text(f"  … and {more} more", style="dim"))
    if f.consequence_of:
        # A consequence is one line: what it follows from (the JSON keeps the full explanation).
        console.print(Text("  " + (f.follows or f"Follows from {f.consequence_of}."), style="dim"))
        console.print()
        return
    if f.explanation:
        width = max(40, min(console.width, 110) - 2)
        console.print(Text(textwrap.fill(f.explanation, width, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)))
    fixes = [fx for fx in f.fixes]
    for i, fx in enumerate(fixes):
        label = "  fix: " if i == 0 else "  or:  "
        console.print(Text.assemble((label, "bold green" if i == 0 else "green"), (describe_fix(fx), "")))
    console.print()


def write_finding(f: Finding, out: TextIO, inputs: list[str], color: bool | None = None) -> None:
    """One finding block on its own (used by --follow as findings happen)."""
    console = Console(file=out, highlight=False, soft_wrap=True,
                      force_terminal=color if color else None, no_color=(color is False) or None)
    _finding(console, f, inputs, False)


def _startup(console: Console, s: dict[str, Any]) -> None:
    parts = []
    if s.get("phases"):
        parts.append(" → ".join(f"{p['phase']}" + (f" {p['seconds']:.0f}s" if "seconds" in p else "")
                                for p in s["phases"]))
    console.print(Text("startup: ", style="bold") + Text(parts[0] if parts else ("ready" if s.get("ready") else "did not reach ready")))
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
    console.print(Text("  " + "; ".join(facts)))
    tp = s.get("decode_throughput")
    if tp:
        console.print(Text(f"  decode throughput median {tp['median']:.1f} tok/s (p10 {tp['p10']:.1f}, p90 {tp['p90']:.1f})  ")
                      + Text(sparkline(s.get("throughput_samples") or []), style="green"))
    console.print()


def write(report: Report, out: TextIO, quiet: bool = False, color: bool | None = None,
          width: int | None = None, **_: Any) -> None:
    console = Console(file=out, highlight=False, soft_wrap=True, width=width,
                      force_terminal=color if color else None, no_color=(color is False) or None)
    names = [i.name for i in report.inputs]
    multi = len(names) > 1
    shown = [f for f in report.findings if not (quiet and f.severity == "info")]
    if not quiet and report.startup:
        _startup(console, report.startup)
    for f in shown:
        _finding(console, f, names, multi)
    if report.corrected_command:
        console.print(Text("corrected command:", style="bold green"))
        console.print(Text("  " + report.corrected_command))
        console.print()
    read = [i.name for i in report.inputs if not i.error]
    if not report.findings and report.inputs and not read:
        console.print(Text("✗ no input could be read", style="bold red"))  # why: one line each on stderr
    elif not report.findings:
        hidden = f" ({report.suppressed} suppressed)" if report.suppressed else ""
        console.print(Text(f"✓ no known problem found in {', '.join(read) or 'the input'}{hidden}", style="green"))
    else:
        console.print(Text(summary_line(report), style="bold"))
