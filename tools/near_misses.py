"""Find near-miss quiet fixtures for rules that have none, in real text this repository already holds.

A near miss is a record that carries a rule's required literal (the text its prefilter looks for) but
that the rule must not fire on: the same exception from another subsystem, the message after the server
was ready, the line without the frames the rule needs. `tests/test_fixture_quality.py` requires one per
rule. This script looks for them, in this order, and keeps the first the whole rule set leaves the rule
quiet on (nothing is invented: every line is copied from a log this repository holds, never the hold-out):

1. another subsystem: a record carrying the literal in the other rules' fixtures, tests/data/real or
   tests/data/healthy, cut out of its file (the shortest first);
2. the line alone: from the rule's own fires fixtures, a line carrying the literal without the rest of
   its record (the frames, the continuation lines, the facts the rule's conditions need);
3. after ready: the rule's own fires fixture with SGLang's ready line before the record.

    .venv/bin/python tools/near_misses.py                 # what it would write
    .venv/bin/python tools/near_misses.py --write         # quiet-near-<source>.log beside each rule
    .venv/bin/python tools/near_misses.py --rule ID ...   # only these rules (also when they have one)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sglang_doctor.engine.rules import Rule, load_rules  # noqa: E402
from sglang_doctor.pipeline.run import diagnose  # noqa: E402
from sglang_doctor.read.reader import iter_lines_from_text  # noqa: E402
from sglang_doctor.read.records import segment  # noqa: E402
from sglang_doctor.ruledev.fixture_quality import has_near_miss, near_miss_literals, needs_near_miss  # noqa: E402

SOURCES = [ROOT / "tests" / "data" / "real", ROOT / "tests" / "data" / "healthy"]
MAX_LINES = 80  # an excerpt longer than this is not a fixture anyone reads
REQUEST_ECHO = ("Receive: obj=", "Finish: obj=")  # --log-requests lines (engine/analyze.py skips them)


def _sources(rules: list[Rule]) -> list[Path]:
    out = [p for r in rules for p in sum(r.fixtures(), [])]
    for d in SOURCES:
        out += sorted(d.glob("*.log"))
    return out


def excerpts(path: Path, literal: str) -> list[str]:
    """The records of `path` that carry `literal`, each as the lines of the file it spans."""
    text = path.read_text(errors="replace")
    if literal not in text:
        return []
    lines = text.splitlines()
    out = []
    for rec in segment(iter_lines_from_text(text)):
        if rec.message.startswith(REQUEST_ECHO):
            continue  # a prompt the server logged: every rule ignores it, so it tests no rule
        if literal in rec.text or any(literal in ln.text for ln in rec.lines):
            span = lines[rec.start - 1:rec.end]
            if len(span) <= MAX_LINES:
                out.append("\n".join(span) + "\n")
    return out


def find(rule: Rule, rules: list[Rule], sources: list[Path], tries: int = 60) -> tuple[Path, str] | None:
    """The shortest excerpt of another file that carries the rule's literal and leaves it quiet."""
    own = set(rule.fixtures()[0])
    seen: dict[str, Path] = {}
    for lit in near_miss_literals(rule):
        for src in sources:
            if src not in own:
                for text in excerpts(src, lit):
                    seen.setdefault(text, src)
    for text in sorted(seen, key=lambda t: (t.count("\n"), len(t)))[:tries]:
        report = diagnose(["near.log"], rules, texts={"near.log": text}).report
        if not any(f.rule == rule.id for f in report.findings):
            return seen[text], text
    return None


READY = "The server is fired up and ready to roll!"


def own_variants(rule: Rule) -> list[tuple[str, str]]:
    """(name, text) near-miss candidates made from the rule's own fires fixtures: a line carrying the
    literal on its own, or the whole fixture with the ready line before the record."""
    out: list[tuple[str, str]] = []
    lits = near_miss_literals(rule)
    for fx in rule.fixtures()[0]:
        text = fx.read_text(errors="replace")
        lines = text.splitlines()
        for i, ln in enumerate(lines):
            if any(lit in ln for lit in lits) and not ln.startswith("#"):
                out.append((f"{fx.stem}-line", ln + "\n"))
                m = re.match(r"(\[[^\]]*\] )", ln)
                ready = f"{m.group(1) if m else ''}{READY}"
                start = next((j for j in range(i, -1, -1) if "Traceback (most recent call last)" in lines[j]), i)
                out.append((f"{fx.stem}-after-ready", "\n".join(lines[:start] + [ready] + lines[start:]) + "\n"))
                break
    return out


def fixture_name(rule: Rule, src: Path) -> Path:
    assert rule.fixture_dir is not None
    stem = re.sub(r"[^a-z0-9.-]+", "-", src.stem.lower()).strip("-")[:50]
    return rule.fixture_dir / f"quiet-near-{src.parent.name}-{stem}.log"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the fixtures")
    ap.add_argument("--rule", action="append", help="only these rules")
    a = ap.parse_args()
    rules = load_rules()
    sources = _sources(rules)
    picked = [r for r in rules if (r.id in a.rule if a.rule else needs_near_miss(r) and not has_near_miss(r))]
    missing = []
    for rule in picked:
        hit = find(rule, rules, sources)
        if hit is not None:
            src, text = hit
            dest = fixture_name(rule, src)
        else:
            quiet = [(name, text) for name, text in own_variants(rule)
                     if not any(f.rule == rule.id for f in diagnose(["near.log"], rules,
                                                                     texts={"near.log": text}).report.findings)]
            if not quiet:
                missing.append(rule.id)
                print(f"NONE  {rule.id}")
                continue
            name, text = min(quiet, key=lambda q: q[1].count("\n"))
            assert rule.fixture_dir is not None
            src, dest = rule.fixture_dir / name, rule.fixture_dir / f"quiet-near-{name}.log"
        print(f"found {rule.id}: {src.relative_to(ROOT)} ({text.count(chr(10))} lines) -> {dest.name}")
        if a.write:
            dest.write_text(text)
    print(f"{len(picked) - len(missing)} of {len(picked)} rules get a near miss; none found for {len(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
