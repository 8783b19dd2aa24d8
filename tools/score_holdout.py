#!/usr/bin/env python3
"""Score sglang-doctor on a frozen hold-out round (tests/data/holdout, holdout2, ...; see their README.md).

Runs `sglang-doctor check --format json --no-baseline <log>` from an empty working directory for each case
and scores the report STRICTLY the way the shared evaluation script does:

* the ROOT finding is the first finding of severity error, else the first warning;
* a failure case is diagnosed when one of the root finding's first two fixes (fixes of kind `note` are
  skipped) matches an expected fix: same kind (flag / env / docker / package / system) and name (flag
  aliases folded), the same direction where the label gives one (a `raise`/`lower` label also accepts `set`
  with a value on the right side of `from`; a `set` label needs a fix with a value or an add/remove), and
  the same value where an `env NAME=value` label gives a concrete one;
* the catch-alls `package sglang: raise` and `system gpu: raise` count only when listed first;
* an `evidence` label is met when the root finding cites one of the case's key lines.

It also prints the LENIENT figure (any fix of any error/warning finding, directions loosely compared, or any
serious finding citing a key line for `evidence` cases), the failing logs reported CLEAN (no finding of
severity error: the worst outcome), healthy logs with an error finding, and cases with more than one error
finding; overall, per family and per tag. Labels are validated against a schema first (exit 2 on a bad label).

The matching and the label schema are tests/scoring.py's (a reimplementation: the product repository
must not read ../shared). `--real` scores the real set (tests/data/real) the same way, and prints the
figures over its verbatim and excerpt cases beside the overall one; `--without-curated-cmd` drops the
`# cmd:` lines a curator wrote from a thread's prose (`cmd_source: thread-prose`) before running.

Usage: .venv/bin/python tools/score_holdout.py [--round N | --real | --dir DIR] [--without-curated-cmd]
                                               [--doctor PATH] [-v] [--json OUT] [--validate-only]
(`--round 1` is tests/data/holdout, `--round N` for N > 1 is tests/data/holdoutN.)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = ROOT / "tests" / "data" / "holdout"
REAL_DIR = ROOT / "tests" / "data" / "real"
DEFAULT_DOCTOR = ROOT / ".venv" / "bin" / "sglang-doctor"
sys.path.insert(0, str(ROOT / "tests"))
from scoring import (lenient_ok, root_finding, root_fixes, strict_ok, validate,  # noqa: E402
                     without_curated_commands)

FAMILIES = {"rocm", "pd-disaggregation", "router", "rl-ray", "multimodal", "hybrid-mamba", "blackwell",
            "consumer-gpu", "docker", "hang", "npu", "healthy",
            "memory", "dependencies", "speculative", "diffusion", "lora",
            "unsupported-gpu", "parallelism", "kubernetes",
            "attention-backend", "torch-compile", "precision"}  # the hold-out rounds'; the real set's are free-form


def round_dir(n: int) -> Path:
    """The directory of hold-out round n (round 1 predates the numbering)."""
    return DEFAULT_DIR if n == 1 else DEFAULT_DIR.with_name(f"holdout{n}")


# ---------------------------------------------------------------- running

def run_doctor(doctor: str, path: Path, cwd: str) -> tuple[dict | None, str]:
    cmd = [doctor, "check", "--format", "json", "--no-baseline", str(path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd)
    if p.returncode not in (0, 1):
        return None, f"exit {p.returncode}: {p.stderr.strip()[-300:]}"
    try:
        return json.loads(p.stdout), ""
    except json.JSONDecodeError as e:
        return None, f"not JSON ({e}); stdout starts {p.stdout[:120]!r}"


class Tally:
    def __init__(self) -> None:
        self.failing = self.strict = self.lenient = self.clean = self.healthy = self.healthy_bad = 0
        self.multi = self.total = 0

    def add(self, r: dict) -> None:
        self.total += 1
        self.multi += r["errors"] > 1
        if r["healthy"]:
            self.healthy += 1
            self.healthy_bad += r["errors"] > 0
        else:
            self.failing += 1
            self.strict += r["strict"]
            self.lenient += r["lenient"]
            self.clean += r["errors"] == 0

    def line(self, name: str) -> str:
        return (f"{name:22s} strict {self.strict:2d}/{self.failing:<2d}  lenient {self.lenient:2d}/{self.failing:<2d}  "
                f"clean {self.clean:2d}/{self.failing:<2d}  healthy-with-error {self.healthy_bad}/{self.healthy}  "
                f">1-error {self.multi}/{self.total}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--doctor", default=str(DEFAULT_DOCTOR))
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--dir", help=f"the cases (default {DEFAULT_DIR.relative_to(ROOT)})")
    where.add_argument("--round", type=int, metavar="N", help="hold-out round N (1: tests/data/holdout, N: holdoutN)")
    where.add_argument("--real", action="store_true",
                    help=f"score the real set ({REAL_DIR.relative_to(ROOT)}: no hold-out, families are free-form)")
    ap.add_argument("--without-curated-cmd", action="store_true",
                    help="drop the '# cmd:' lines a curator wrote from the thread's prose (cmd_source: thread-prose)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    ap.add_argument("--json", metavar="OUT", help="write per-case results as JSON")
    ap.add_argument("--validate-only", action="store_true", help="check the labels and stop")
    a = ap.parse_args()
    root = Path(a.dir) if a.dir else REAL_DIR if a.real else round_dir(a.round) if a.round else DEFAULT_DIR
    if not (root / "cases.yaml").is_file():
        print(f"no cases.yaml in {root}", file=sys.stderr)
        return 2
    cases = yaml.safe_load((root / "cases.yaml").read_text())
    errs = validate(cases, root, None, real_set=True) if a.real else validate(cases, root, FAMILIES)
    if errs:
        print("label schema errors:", *errs, sep="\n  ", file=sys.stderr)
        return 2
    if a.validate_only:
        print(f"{len(cases)} labels valid")
        return 0
    results = []
    with tempfile.TemporaryDirectory() as cwd:
        for c in cases:
            path = root / c["file"]
            if a.without_curated_cmd and c.get("cmd_source") == "thread-prose":
                path = Path(cwd) / c["file"]
                path.write_text(without_curated_commands((root / c["file"]).read_text(errors="replace")))
            report, err = run_doctor(a.doctor, path, cwd)
            findings = report.get("findings", []) if report else []
            rootf = root_finding(findings)
            results.append({
                "file": c["file"], "family": c["family"], "tags": c.get("tags", []) or [], "shape": c["shape"],
                "healthy": c["cause"] == "healthy", "error": err,
                "strict": bool(report) and c["cause"] != "healthy" and strict_ok(c, findings),
                "lenient": bool(report) and c["cause"] != "healthy" and lenient_ok(c, findings),
                "errors": sum(1 for f in findings if f.get("severity") == "error"),
                "rules": [f"{f.get('rule')}:{f.get('severity')}" for f in findings],
                "root": rootf.get("rule") if rootf else None,
                "root_fixes": root_fixes(findings),
                "expected": c["expected_fix"],
            })
    overall, shown = Tally(), Tally()
    fam: dict[str, Tally] = defaultdict(Tally)
    tag: dict[str, Tally] = defaultdict(Tally)
    shape: dict[str, Tally] = defaultdict(Tally)
    for r in results:
        overall.add(r)
        fam[r["family"]].add(r)
        shape[r["shape"]].add(r)
        if r["shape"] in ("verbatim", "excerpt"):
            shown.add(r)
        for t in r["tags"]:
            tag[t].add(r)
        if a.verbose:
            if r["healthy"]:
                mark = "ok  " if r["errors"] == 0 else "FALSE-ALARM"
            else:
                mark = "ok  " if r["strict"] else ("CLEAN" if r["errors"] == 0 else "MISS")
                if not r["strict"] and r["lenient"]:
                    mark += "(lenient ok)"
            print(f"{mark:16s} {r['file']:58s} root={r['root']} fixes={r['root_fixes']} "
                  f"expected={r['expected']} all={','.join(r['rules']) or '-'} {r['error']}")
    print(overall.line("OVERALL"))
    print(shown.line("verbatim+excerpt"))
    for name in sorted(shape):
        print(shape[name].line(f"shape {name}"))
    for name in sorted(fam):
        print(fam[name].line(f"family {name}"))
    for name in sorted(tag):
        if tag[name].total >= 2:
            print(tag[name].line(f"tag {name}"))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
