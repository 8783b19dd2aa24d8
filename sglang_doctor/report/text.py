"""The default terminal report: preflight's plan, the summary (counts and root cause), then
per launch its startup summary, one block per finding (its consequences folded into one line each
under their root cause, the same evidence on several ranks on one line) and its corrected command,
and last where to read more.

Plain text when stdout is not a terminal or NO_COLOR is set (see ansi.py).
"""

from __future__ import annotations

import re
import textwrap
from typing import Any, Collection, TextIO

from sglang_doctor.model import Finding, LaunchInfo, Report, line_name
from sglang_doctor.report.ansi import Painter, terminal_width, wants_color
from sglang_doctor.report.common import (docs_base_url, docs_path, evidence_groups, input_tallies, root_cause,
                                         summary_line, tally_line, where)
from sglang_doctor.report.fixes import describe_fix, fix_label

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}
SPARK = "▁▂▃▄▅▆▇█"
MAX_EVIDENCE_SHOWN = 3
MAX_EVIDENCE_CHARS = 220
MAX_WIDTH = 110  # wider terminals still get lines one can read
MAX_INPUT_LINES = 20  # inputs listed under the summary (a directory of logs: --statistics has them all)


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


def _wrapped(con: _Out, head: tuple[str, str], text: str, indent: int, width: int) -> None:
    """`head` then `text`, wrapped to `width`; continuation lines start at column `indent`."""
    lines = textwrap.wrap(text, max(width, len(head[0]) + 20), initial_indent=" " * len(head[0]),
                          subsequent_indent=" " * indent, break_on_hyphens=False) or [""]
    con.print(head, lines[0][len(head[0]):])
    for ln in lines[1:]:
        con.print(ln)


def _ranks(ranks: list[str]) -> str:
    """`TP0-TP7`, `TP0-TP2, TP5`: the ranks a line was logged on, runs of one kind collapsed."""
    out: list[str] = []
    run: list[tuple[str, int]] = []

    def flush() -> None:
        if run:
            tag = run[0][0]
            out.append(f"{tag}{run[0][1]}" + (f"-{tag.split()[-1]}{run[-1][1]}" if len(run) > 1 else ""))
            run.clear()

    for r in ranks:
        m = _RANK.fullmatch(r)
        if m is None:
            flush()
            out.append(r)
            continue
        tag, n = m[1], int(m[2])
        if run and (run[-1][0] != tag or run[-1][1] + 1 != n):
            flush()
        run.append((tag, n))
    flush()
    return ", ".join(out)


_RANK = re.compile(r"(.*?[A-Za-z_]+)(\d+)")  # "TP3" -> ("TP", 3); "DP0 TP3" -> ("DP0 TP", 3)


def _evidence(con: _Out, f: Finding, inputs: list[str], multi: bool, width: int) -> None:
    covered = 0
    for group in evidence_groups(f.evidence)[:MAX_EVIDENCE_SHOWN]:
        ev = group[0]
        loc = where(ev, inputs, multi)
        if len(group) > 1:
            ranks = [e.rank for e in group if e.rank]
            loc += f" ×{len(group)}" + (f" [{_ranks(list(dict.fromkeys(ranks)))}]" if ranks else "")
        covered += len(group)
        text = ev.text.strip()
        if len(text) > MAX_EVIDENCE_CHARS:
            text = text[:MAX_EVIDENCE_CHARS] + "…"
        head = "  " + loc + " │ "
        if len(head) > width // 2:  # a long path: the location on its own line, the text under it
            con.print(("  " + loc, "dim"))
            head = "    │ "
        _wrapped(con, (head, "dim"), text, 4, width)
    more = max(f.occurrences, len(f.evidence)) - covered
    if more > 0:
        con.print((f"  … and {more} more", "dim"))


def _finding(con: _Out, f: Finding, inputs: list[str], multi: bool,
             consequences: list[Finding] | None = None) -> None:
    width = max(40, min(con.width, MAX_WIDTH))
    con.print((f"{f.severity} ", _STYLE[f.severity]), (f"{f.code} ", "bold"), (f.title, "bold"),
              (f"  [{f.rule}]", "dim"))
    _evidence(con, f, inputs, multi, width)
    if f.consequence_of:
        # A consequence is one line: what it follows from (the JSON keeps the full explanation).
        con.print(("  " + (f.follows or f"Follows from {f.consequence_of}."), "dim"))
        con.print()
        return
    if f.explanation:
        con.print(textwrap.fill(f.explanation, width - 2, initial_indent="  ", subsequent_indent="  ",
                                break_on_hyphens=False))
    for i, fx in enumerate(f.fixes):
        label = f"  {fix_label(i, fx) + ':':<5}"
        _wrapped(con, (label, "bold green" if i == 0 or fx.combined else "green"), describe_fix(fx), len(label), width)
    for c in consequences or ():
        at = (where(c.evidence[0], inputs) if multi else line_name(c.evidence[0].line)) if c.evidence else ""
        # (the rule id, not the title: one short line saying what followed, and where)
        _wrapped(con, ("  then: ", "dim"), f"{c.code} {c.rule}" + (f" ({at})" if at else ""), 8, width)
    con.print()


def write_finding(f: Finding, out: TextIO, inputs: list[str], color: bool | None = None) -> None:
    """One finding block on its own (used by --follow as findings happen)."""
    _finding(_Out(out, color), f, inputs, False)


def _folded(findings: list[Finding]) -> dict[str, list[Finding]]:
    """Consequences to show as one line under their root cause: rule id of the cause -> them.
    (A consequence whose cause is not in the report keeps its own block.)"""
    present = {f.rule for f in findings if not f.consequence_of}
    out: dict[str, list[Finding]] = {}
    for f in findings:
        if f.consequence_of and f.consequence_of in present:
            out.setdefault(f.consequence_of, []).append(f)
    return out


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
    _wrapped(con, ("  ", ""), "; ".join(facts), 2, max(40, min(con.width, MAX_WIDTH)))
    tp = s.get("decode_throughput")
    if tp:
        about = "≈" if tp.get("approximate") else ""
        con.print(f"  decode throughput median {about}{tp['median']:.1f} tok/s (p10 {about}{tp['p10']:.1f}, "
                  f"p90 {about}{tp['p90']:.1f}; {tp['lines']:,} decode lines)  ",
                  (sparkline(s.get("throughput_histogram") or []), "green"))
    con.print()


def _launch(con: _Out, findings: list[Finding], startup: dict[str, Any] | None, corrected: str | None,
            names: list[str], multi: bool, quiet: bool, note: str | None = None, kind: str | None = None,
            left_out: list[str] | None = None, nodes: list[str] | None = None,
            shown_already: Collection[tuple[str, int]] = (), origin: str | None = None) -> None:
    """One launch: its startup summary, findings (consequences folded under their cause) and corrected
    command. `shown_already`: (rule, line) of findings --follow printed as they happened."""
    if not quiet and startup:
        _startup(con, startup)
    shown = [f for f in findings if not (quiet and f.severity == "info")
             and (f.rule, f.evidence[0].line if f.evidence else 0) not in shown_already]
    folded = _folded(shown)
    for f in shown:
        if f.consequence_of not in folded or f not in folded[f.consequence_of]:
            _finding(con, f, names, multi, folded.get(f.rule) if not f.consequence_of else None)
    if corrected:
        # "corrected" only when it carries the root cause's fix
        label = "command with the suggested changes" if kind == "suggested" else "corrected command"
        for n, command in enumerate(nodes or [corrected]):
            where = f" (node {n} of {len(nodes)}: --node-rank {n})" if nodes else ""
            con.print((label + where + ":", "bold green"))
            con.print("  " + command.replace("\n", "\n  "))  # (a continuation line indented is still one command)
        for line in ([origin] if origin else []) + ([note] if note else []) + list(left_out or []):
            con.print(("  (" + line + ")", "dim"))
        con.print()


_ORIGINS = {"cmd": "from --cmd", "cmd-file": "from --cmd-file", "log-comment": "from the log's `# cmd:` line",
            "server_args": "rebuilt from the log's server_args line (resolved values)"}
_SHOWN_DEFAULTS = 6


def command_origin(launch: LaunchInfo) -> str | None:
    """Where a launch's command came from; for a rebuilt one, which flags it leaves at their default."""
    line = _ORIGINS.get(launch.command_source or "")
    left = launch.command_defaults_omitted or []
    if line and left:
        more = f", … {len(left) - _SHOWN_DEFAULTS} more in --format json" if len(left) > _SHOWN_DEFAULTS else ""
        line += f"; left at the release's default: {', '.join(left[:_SHOWN_DEFAULTS])}{more}"
    return line


def _num(v: Any, fmt: str = ",") -> str:
    return "—" if v is None else format(v, fmt)


def _preflight(con: _Out, p: dict[str, Any], plan: dict[str, Any]) -> None:
    """`sglang-doctor preflight`'s plan: what SGLang will do with memory, before the findings."""
    model, gpu, mem = plan.get("model") or {}, plan.get("gpu") or {}, plan.get("memory") or {}
    release = p.get("sglang_version")
    head = [f"SGLang {release} ({plan.get('release_source')})" if release else
            f"SGLang release unknown ({plan.get('release_source')})"]
    if model.get("architecture"):
        head.append(model["architecture"] + (f" ({model['quantization']})" if model.get("quantization") else ""))
    if gpu.get("total_gb") or gpu.get("free_gb"):
        size = f"{gpu['total_gb']:.1f} GiB" if gpu.get("total_gb") else f"{gpu['free_gb']:.1f} GiB free"
        count = f" ×{gpu['count']}" if (gpu.get("count") or 1) > 1 else ""
        head.append(f"{gpu.get('name') or 'GPU'} {size}{count} ({gpu.get('source')})")
    con.print(("plan: ", "bold"), " · ".join(head))
    rows: list[tuple[str, str]] = []
    if p.get("mem_fraction_static") is not None:
        rows.append(("fraction", f"--mem-fraction-static {p['mem_fraction_static']:.3g} ({mem.get('mem_fraction_source')})"))
    if p.get("weights_gb") is not None:
        rows.append(("weights", f"{p['weights_gb']:.2f} GB per GPU" + (f" ({model['weights_source']})" if model.get("weights_source") else "")))
    if mem:
        rows.append(("free memory", f"{mem['free_gb_before_load']:.2f} GB before the weights, {mem['free_gb_after_load']:.2f} "
                                    f"after; the pools get {mem['pools_gb']:.2f} GB"))
        tokens = "—" if p.get("kv_tokens") is None else f"{p['kv_tokens']:,} tokens"
        rows.append(("KV pool", f"{tokens} ({mem['kv_bytes_per_token']:,} bytes per token, {mem['kv_dtype']})"))
    if p.get("mamba_slots") is not None:
        rows.append(("mamba slots", f"{p['mamba_slots']} ({mem.get('mamba_mb_per_slot')} MB each, "
                                    f"{mem.get('mamba_slots_per_request')} per request)"))
    if mem:
        reqs = p.get("max_running_requests")
        rows.append(("requests", "—" if reqs is None else f"{reqs:,} running at most"))
    if p.get("context_len") is not None:
        rows.append(("context", f"{p['context_len']:,} tokens vs a pool of {_num(p.get('kv_tokens'))}"))
    width = max(len(k) for k, _ in rows) if rows else 0
    for k, v in rows:
        con.print(("  " + k.ljust(width) + "  ", "dim"), v)
    if p.get("outcome") == "fail":
        con.print(("  " + "outcome".ljust(width) + "  ", "dim"), ("fails: ", "bold red"), p.get("failure") or "")
    else:
        con.print(("  " + "outcome".ljust(width) + "  ", "dim"), ("starts", "bold green"))
    for note in plan.get("notes") or []:
        con.print(("  note: " + note, "dim"))
    con.print()


def write(report: Report, out: TextIO, quiet: bool = False, color: bool | None = None,
          width: int | None = None, shown_already: set[tuple[str, int]] | None = None, **_: Any) -> None:
    con = _Out(out, color, width)
    names = [i.name for i in report.inputs]
    multi = len(names) > 1
    shown = [f for f in report.findings if not (quiet and f.severity == "info")]
    if not quiet and report.preflight is not None:  # the prediction, then what it means
        _preflight(con, report.preflight, report.context.get("plan") or {})
    if report.findings:
        _summary(con, report)
    if len(report.launches) > 1:  # several launches (a restarted server, unrelated logs): one block each
        for n, launch in enumerate(report.launches, 1):
            at = f"{names[launch.input] if launch.input < len(names) else '?'}:{launch.first_line}-{launch.last_line}"
            release = f", SGLang {launch.sglang_version}" if launch.sglang_version else ""
            con.print((f"launch {n} of {len(report.launches)}: {at}{release}", "bold"))
            con.print()
            _launch(con, [report.findings[i] for i in launch.findings], launch.startup, launch.corrected_command,
                    names, multi, quiet, kind=launch.command_kind, left_out=launch.command_notes,
                    nodes=launch.node_commands, shown_already=shown_already or set(), origin=command_origin(launch))
    else:
        _launch(con, report.findings, report.startup, report.corrected_command, names, multi, quiet,
                report.context.get("corrected_command_unverified") or report.context.get("corrected_command_note"),
                report.launches[0].command_kind if report.launches else None,
                report.launches[0].command_notes if report.launches else None,
                report.launches[0].node_commands if report.launches else None, shown_already or set(),
                command_origin(report.launches[0]) if report.launches else None)
    read = [i.name for i in report.inputs if not i.error]
    if not report.findings and report.inputs and not read:
        con.print(("✗ no input could be read", "bold red"))  # why: one line each on stderr
    elif not report.findings:
        hidden = f" ({report.suppressed} suppressed)" if report.suppressed else ""
        con.print((f"✓ no known problem found in {', '.join(read) or 'the input'}{hidden}", "green"))
    else:
        _read_more(con, report, shown)


def _summary(con: _Out, report: Report) -> None:
    """The first line: how many findings, and the root cause when there is one; with several
    inputs, a line for each (the first MAX_INPUT_LINES)."""
    root = root_cause(report)
    con.print((summary_line(report), "bold"),
              (f" — root cause: {root.code} {root.title}" if root is not None else "", "bold"))
    if len(report.inputs) > 1:
        tallies = input_tallies(report)
        width = max(len(t.name) for t in tallies[:MAX_INPUT_LINES])
        for t in tallies[:MAX_INPUT_LINES]:
            con.print(("  " + t.name.ljust(width) + "  ", "dim"), tally_line(t))
        if len(tallies) > MAX_INPUT_LINES:
            con.print((f"  … and {len(tallies) - MAX_INPUT_LINES} more inputs (--statistics lists every one)", "dim"))
    con.print()


def _read_more(con: _Out, report: Report, shown: list[Finding]) -> None:
    """The last line: where the leading finding is explained at length."""
    lead = root_cause(report) or next((f for f in shown if not f.consequence_of), None)
    if lead is None:
        return
    con.print(("more: ", "dim"), f"sglang-doctor rules show {lead.code}", ("  ·  ", "dim"),
              docs_base_url() + docs_path(lead))
