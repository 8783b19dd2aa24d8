#!/usr/bin/env python3
"""List SGLang messages from the catalog that no rule recognises yet: rule candidates.

Every ``match.any`` pattern of the rules is tried on every catalog template as a log shows it
(registry/messages.py Entry.log_forms: fields filled with "1", after its exception class or the
logger prefix, its call site's frame), as ``rules lint`` does. Templates no rule matches are ranked: errors first (raise, assert, logger.error /
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
import json
import sys
from pathlib import Path

import regex

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from sglang_doctor.engine.rules import load_rules, required_literal  # noqa: E402
from sglang_doctor.registry import messages  # noqa: E402

_SEVERITY = {"raise": 0, "assert": 1, "critical": 0, "exception": 0, "error": 0, "warning": 2, "info": 3}


def rule_regexes(rule_dirs: list[str] | None = None) -> list[tuple[str, str]]:
    """(rule id, regex) for every ``match.any`` pattern of the shipped rules (and ``rule_dirs``)."""
    return [(r.id, p.regex) for r in load_rules(rule_dirs or []) for p in r.match.any]


def covered(cat: messages.Catalog, rules: list[tuple[str, str]]) -> dict[int, set[str]]:
    """entry id -> ids of the rules one of whose patterns matches it as a log shows it (the
    check `rules lint` makes: Catalog.templates_matching)."""
    out: dict[int, set[str]] = {}
    for rule, rx in rules:
        try:
            hits = cat.templates_matching(rx, literal=required_literal(rx))
        except (regex.error, TimeoutError):
            continue
        for e in hits:
            out.setdefault(e.id, set()).add(rule)
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
    ap.add_argument("--rules", action="append", metavar="DIR", help="also count the rules of DIR as covering")
    args = ap.parse_args(argv)
    cat = messages.load()
    entries = [e for e in cat.entries if not (e.kind == "log" and e.cls == "info")]
    if args.grep:
        entries = [e for e in entries if args.grep.lower() in e.template.lower()]
    ids = {e.id for e in entries}
    hits = {n: r for n, r in covered(cat, rule_regexes(args.rules)).items() if n in ids}
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
