"""Rule pages, generated from the tested rule data (`sglang-doctor rules docs`).

Each page: what the rule means, why it happens, how the fix works and when it is wrong,
the messages it matches, its fixes, and the tool's real output on the rule's own fixture.
"""

from __future__ import annotations

import io
from pathlib import Path

from .report.fixes import describe_fix
from .model import FixOut
from .rules import Rule


def page_name(rule: Rule) -> str:
    return f"{rule.code}-{rule.id}.md"


def _fix_line(rule: Rule, i: int) -> str:
    fx = rule.fixes[i]
    out = FixOut(kind=fx.kind, flag=fx.flag, name=fx.name, action=fx.action, value=fx.value, text=fx.text)
    return describe_fix(out)


def _sample_output(rule: Rule) -> str | None:
    from .doctor import diagnose
    from .report.text import write
    from .rules import load_rules

    fires, _ = rule.fixtures()
    if not fires:
        return None
    run = diagnose([str(fires[0])], load_rules())
    run.report.inputs[0].name = fires[0].name
    buf = io.StringIO()
    write(run.report, buf, color=False)
    return buf.getvalue().rstrip()


def rule_markdown(rule: Rule, with_output: bool = True) -> str:
    d = rule.docs
    lines = [f"# {rule.code} {rule.id}", "", f"**{rule.title}**", "",
             f"Severity: `{rule.severity}` · family: `{rule.family}` · SGLang releases: `{rule.versions}`"
             + (" · a consequence of another failure" if rule.consequence else ""), "",
             "## What it means", "", d.what.strip(), "", "## Why it happens", "", d.why.strip(), "",
             "## How to fix it", "", d.fix.strip(), ""]
    if rule.fixes:
        lines += [f"- `{_fix_line(rule, i)}`" for i in range(len(rule.fixes))] + [""]
    elif rule.fix_none:
        lines += [f"No launch change fixes this: {rule.fix_none}", ""]
    if d.wrong_when:
        lines += ["## When the fix is wrong", "", d.wrong_when.strip(), ""]
    lines += ["## Messages it matches", ""]
    lines += [f"- `{p.regex}`" + ("" if p.in_ == "text" else f" (in {p.in_})") for p in rule.match.any]
    if rule.sources:
        lines += ["", "Printed by: " + "; ".join(rule.sources)]
    lines.append("")
    if with_output:
        sample = _sample_output(rule)
        if sample:
            lines += ["## Example", "", "Output of `sglang-doctor` on the rule's fixture:", "", "```text", sample, "```", ""]
    return "\n".join(lines)


def write_docs(rules: list[Rule], out_dir: Path, check_only: bool = False) -> list[str]:
    """Write (or with check_only, compare) one page per rule plus an index; returns stale names."""
    stale: list[str] = []
    pages = {page_name(r): rule_markdown(r) for r in sorted(rules, key=lambda r: r.code)}
    index = ["# sglang-doctor rules", "", "| code | severity | rule | title |", "|---|---|---|---|"]
    for r in sorted(rules, key=lambda r: r.code):
        index.append(f"| [{r.code}]({page_name(r)}) | {r.severity} | `{r.id}` | {r.title} |")
    pages["README.md"] = "\n".join(index) + "\n"
    if not check_only:
        out_dir.mkdir(parents=True, exist_ok=True)
    existing = {p.name for p in out_dir.glob("*.md")} if out_dir.is_dir() else set()
    for name, text in pages.items():
        path = out_dir / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            stale.append(name)
            if not check_only:
                path.write_text(text, encoding="utf-8")
    for extra in sorted(existing - set(pages)):
        stale.append(extra)
        if not check_only:
            (out_dir / extra).unlink()
    return stale
