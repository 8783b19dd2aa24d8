#!/usr/bin/env python3
"""List SGLang messages from the catalog that no rule recognises yet: rule candidates.

Each catalog template is rendered with its fields filled in ("1"), and every ``regex:`` found
anywhere in ``sglang_doctor/rules/**/*.yaml`` (read naively, whatever key holds it) is searched
in it. Templates no rule matches are ranked: errors first (raise, assert, logger.error /
exception / critical, then warnings unless --errors-only), then by how many sampled releases
have the message, so long-lived failures come first; the server's code (srt/) before the
frontend language (lang/), and generic wrappers ("... hit an exception: {e}") last.

Usage::

    python tools/uncovered_messages.py                 # top 60 as text
    python tools/uncovered_messages.py --top 200 --json > candidates.json
    python tools/uncovered_messages.py --errors-only --grep "cuda graph"
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from pathlib import Path

import regex
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from sglang_doctor.registry import messages  # noqa: E402

RULES = REPO / "sglang_doctor" / "rules"
_SEVERITY = {"raise": 0, "assert": 1, "critical": 0, "exception": 0, "error": 0, "warning": 2, "info": 3}


def rule_regexes(root: Path = RULES) -> list[tuple[str, str]]:
    """(rule id, regex) for every ``regex:`` value in the rule files (fixtures excluded)."""
    out: list[tuple[str, str]] = []

    def walk(node: object, rule: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "regex" and isinstance(v, str):
                    out.append((rule, v))
                else:
                    walk(v, rule)
        elif isinstance(node, list):
            for v in node:
                walk(v, rule)

    for path in sorted(root.rglob("*.yaml")):
        if path.parent.name != root.name and path.parent.parent != root:
            continue  # fixture directories below a family
        try:
            doc = yaml.safe_load(path.read_text())
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict):
            walk(doc, str(doc.get("id", path.stem)))
    return out


def covered(entries: list[messages.Entry], rules: list[tuple[str, str]]) -> dict[int, set[str]]:
    """entry id -> ids of the rules one of whose regexes matches its sample."""
    texts = [e.sample.replace("\n", " ") for e in entries]  # one line per entry
    starts, pos = [], 0
    for t in texts:
        starts.append(pos)
        pos += len(t) + 1
    blob = "\n".join(texts)
    out: dict[int, set[str]] = {}
    for rule, rx in rules:
        try:
            compiled = regex.compile(rx, regex.MULTILINE)
        except regex.error:
            continue
        try:
            for m in compiled.finditer(blob, timeout=5.0):
                i = bisect.bisect_right(starts, m.start()) - 1
                out.setdefault(entries[i].id, set()).add(rule)
        except TimeoutError:
            continue
    return out


def rank(entries: list[messages.Entry], errors_only: bool) -> list[messages.Entry]:
    def key(e: messages.Entry) -> tuple:
        level = e.kind if e.kind != "log" else e.cls
        # the server (srt/) before the frontend language (lang/) and the rest; wrappers last
        return (_SEVERITY.get(level, 3), e.generic, not e.file.startswith("srt/"), -len(e.releases), e.file, e.line)

    keep = [e for e in entries if not errors_only or _SEVERITY.get(e.kind if e.kind != "log" else e.cls, 3) <= 1]
    return sorted(keep, key=key)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=60)
    ap.add_argument("--errors-only", action="store_true", help="raise, assert and logger.error/exception/critical")
    ap.add_argument("--no-info", action="store_true", default=True, help=argparse.SUPPRESS)
    ap.add_argument("--grep", help="only templates containing this text (case-insensitive)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    cat = messages.load()
    entries = [e for e in cat.entries if not (e.kind == "log" and e.cls == "info")]
    if args.grep:
        entries = [e for e in entries if args.grep.lower() in e.template.lower()]
    hits = covered(entries, rule_regexes())
    todo = rank([e for e in entries if e.id not in hits], args.errors_only)
    if args.json:
        json.dump([{"template": e.template, "kind": e.kind, "class": e.cls, "origin": e.origin(), "flags": e.flags,
                    "advice": e.advice} for e in todo[:args.top]], sys.stdout, indent=1)
        print()
        return 0
    print(f"{len(entries)} templates (info logs left out), {len(hits)} matched by a rule, "
          f"{len(todo)} not; top {min(args.top, len(todo))}:")
    for e in todo[:args.top]:
        first = e.template.splitlines()[0] if e.template else ""
        print(f"{len(e.releases):>2} {e.cls:<22} {e.file}:{e.line} {e.function}\n   {first[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
