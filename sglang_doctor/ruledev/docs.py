"""Rule pages, generated from the tested rule data (`sglang-doctor rules docs`).

Each page: what the rule means, why it happens, how the fix works and when it is wrong,
the messages it matches, its fixes, and the tool's real output on the rule's own fixture.
"""

from __future__ import annotations

import io
from pathlib import Path

from sglang_doctor.report.fixes import describe_fix
from sglang_doctor.model import FixOut, rule_page
from sglang_doctor.report.markdown import code
from sglang_doctor.engine.rules import Rule


def page_name(rule: Rule) -> str:
    return Path(rule_page(rule.code, rule.id)).name


def _fix_line(rule: Rule, i: int) -> str:
    fx = rule.fixes[i]
    # Values computed from a log's numbers show as <computed>; flags / names captured from it as <… from the log>.
    value = "<computed>" if fx.value and "{" in fx.value else fx.value
    flag = "<flag from the log>" if fx.flag and "{" in fx.flag else fx.flag
    name = f"<{fx.kind} from the log>" if fx.name and "{" in fx.name else fx.name
    out = FixOut(kind=fx.kind, flag=flag, name=name, action=fx.action, value=value, text=fx.text)
    line = describe_fix(out)
    if fx.launcher == "router":  # a router flag: its releases are sglang-router's
        line += f" (router flag, sglang-router {fx.versions})" if fx.versions else " (router flag)"
    elif fx.versions:
        line += f" (SGLang {fx.versions})"
    if fx.combined:
        line += " (together with the first fix, when the plan needs both)"
    return line


def _sample_output(rule: Rule, all_rules: list[Rule]) -> str | None:
    from sglang_doctor.pipeline.run import diagnose
    from sglang_doctor.report.text import write

    fires, _ = rule.fixtures()
    if not fires:
        return None
    run = diagnose([str(fires[0])], all_rules)
    run.report.inputs[0].name = fires[0].name
    buf = io.StringIO()
    write(run.report, buf, color=False, width=100)
    return buf.getvalue().rstrip()


def rule_markdown(rule: Rule, all_rules: list[Rule] | None = None) -> str:
    """The rule's page; with `all_rules`, includes the tool's real output on its first fixture."""
    d = rule.docs
    lines = [f"# {rule.code} {rule.id}", "", f"**{rule.title}**", "",
             f"Severity: `{rule.severity}` · family: `{rule.family}` · SGLang releases: `{rule.versions}`"
             + (" · a consequence of another failure" if rule.consequence else "")
             + (" · generic: gives way to a more specific error" if rule.fallback else "")
             + (" · last resort: gives way to an error that names a cause" if rule.last_resort else "")
             + (" · adds the switches that isolate the crash's subsystem" if rule.isolate else "")
             + (" · leaves tracebacks the log says were handled alone" if rule.skip_handled else ""), "",
             "## What it means", "", d.what.strip(), "", "## Why it happens", "", d.why.strip(), "",
             "## How to fix it", "", d.fix.strip(), ""]
    if rule.fixes:
        lines += [f"- {code(_fix_line(rule, i))}" for i in range(len(rule.fixes))] + [""]
    elif rule.fix_none:
        lines += [f"No launch change fixes this: {rule.fix_none}", ""]
    if d.wrong_when:
        lines += ["## When the fix is wrong", "", d.wrong_when.strip(), ""]
    lines += ["## Messages it matches", ""]
    lines += [f"- {code(p.regex)}" + ("" if p.in_ == "text" else f" (in {p.in_})") for p in rule.match.any]
    if rule.sources:
        lines += ["", "Printed by: " + "; ".join(rule.sources)]
    lines.append("")
    if all_rules is not None:
        sample = _sample_output(rule, all_rules)
        if sample:
            lines += ["## Example", "", "Output of `sglang-doctor` on the rule's fixture:", "", "```text", sample, "```", ""]
    return "\n".join(lines)


def rule_files(rule: Rule, yaml: bool, fixtures: bool) -> str:
    """The rule's YAML file and/or its fixture logs; several files each under a `==> path <==` line
    (as `head` prints them), the YAML alone as it is (a template to copy)."""
    paths: list[Path] = []
    if yaml and rule.path:
        paths.append(Path(rule.path))
    if fixtures:
        fires, quiet = rule.fixtures()
        paths += fires + quiet
    if not paths:
        return f"# {rule.code} {rule.id} has no {'fixtures' if fixtures and not yaml else 'file'}"
    parts = []
    for p in paths:
        try:
            body = p.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            body = f"(cannot read: {e.strerror or e})\n"
        parts.append((f"==> {p} <==\n" if len(paths) > 1 else "") + body.rstrip())
    return "\n\n".join(parts)


def write_docs(rules: list[Rule], out_dir: Path, check_only: bool = False) -> list[str]:
    """Write (or with check_only, compare) one page per rule plus an index; returns stale names."""
    stale: list[str] = []
    pages = {page_name(r): rule_markdown(r, rules) for r in sorted(rules, key=lambda r: r.code)}
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


FACTS_START = "<!-- facts table: generated from sglang_doctor/facts/vocabulary.py by `sglang-doctor rules docs` -->"
FACTS_END = "<!-- end of facts table -->"


def write_facts_table(page: Path, check_only: bool = False) -> bool:
    """Put the fact vocabulary's table between the markers of `page` (docs/writing-rules.md);
    returns whether it was out of date. A page without the markers is left alone."""
    from sglang_doctor.facts.vocabulary import markdown_table

    if not page.is_file():
        return False
    text = page.read_text(encoding="utf-8")
    start, end = text.find(FACTS_START), text.find(FACTS_END)
    if start < 0 or end < start:
        return False
    new = text[:start + len(FACTS_START)] + "\n" + markdown_table() + "\n" + text[end:]
    if new == text:
        return False
    if not check_only:
        page.write_text(new, encoding="utf-8")
    return True
