#!/usr/bin/env python3
"""Score sglang-doctor on the frozen hold-out in tests/data/holdout (see its README.md for the rules).

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

This is a reimplementation: the product repository must not read ../shared.

Usage: .venv/bin/python tools/score_holdout.py [--doctor PATH] [--dir DIR] [-v] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = ROOT / "tests" / "data" / "holdout"
DEFAULT_DOCTOR = ROOT / ".venv" / "bin" / "sglang-doctor"

ALIASES = {
    "--tp": "--tp-size", "--tensor-parallel-size": "--tp-size",
    "--dp": "--dp-size", "--data-parallel-size": "--dp-size",
    "--ep": "--ep-size", "--expert-parallel-size": "--ep-size",
    "--pp": "--pp-size", "--pipeline-parallel-size": "--pp-size",
    "--model": "--model-path",
    "--mem-frac": "--mem-fraction-static",
}
DIRECTION = {
    "raise": "raise", "increase": "raise", "higher": "raise", "up": "raise",
    "lower": "lower", "decrease": "lower", "reduce": "lower", "down": "lower",
    "add": "add", "enable": "add", "remove": "remove", "disable": "remove",
    "set": "set",
}
CATCH_ALLS = {("package", "sglang", "raise"), ("system", "gpu", "raise")}

FAMILIES = {"rocm", "pd-disaggregation", "router", "rl-ray", "multimodal", "hybrid-mamba", "blackwell",
            "consumer-gpu", "docker", "hang", "npu", "healthy"}
PROVENANCE = {"maintainer", "reporter", "labeller"}
SHAPES = {"verbatim", "excerpt", "reconstructed"}
REQUIRED = {"file": str, "source": str, "family": str, "cause": str, "expected_fix": list,
            "fix_known": bool, "key_lines": list, "provenance": str, "shape": str, "notes": str}
OPTIONAL = {"sglang_version": (str, type(None)), "hardware": (str, type(None)), "tags": list}


# ---------------------------------------------------------------- labels

def canon_flag(name: str) -> str:
    name = name.strip()
    return ALIASES.get(name, name)


def parse_expected(item: str) -> tuple[str, str, str | None]:
    """One expected_fix item -> (kind, name, direction); kind 'note' never matches."""
    s = item.strip()
    m = re.match(r"(package|system)\s+([\w.\-\[\]]+)\s*(?::\s*(\w+))?$", s)
    if m:
        return m.group(1), m.group(2).lower(), DIRECTION.get((m.group(3) or "").lower())
    if s.startswith("note"):
        return "note", s, None
    if s.startswith("env "):
        return "env", s[4:].split("=")[0].split(":")[0].strip(), None
    kind = "flag"
    if s.startswith("docker "):
        kind, s = "docker", s[len("docker "):].strip()
    m = re.match(r"(--?[\w-]+)\s*(?::\s*(\w+))?", s)
    if not m:
        return "note", s, None
    return kind, canon_flag(m.group(1)), DIRECTION.get((m.group(2) or "").lower())


def expected_value(item: str) -> str | None:
    """The concrete value of an `env NAME=value` label (placeholders like <dir> are none)."""
    m = re.match(r"env\s+[\w.]+\s*=\s*(\S.*)$", item.strip())
    if not m or "<" in m.group(1):
        return None
    return m.group(1).strip().lower()


def validate(cases: object, root: Path) -> list[str]:
    """Schema errors of cases.yaml (empty when valid)."""
    errs: list[str] = []
    if not isinstance(cases, list):
        return ["cases.yaml must be a list of cases"]
    seen: set[str] = set()
    for i, c in enumerate(cases):
        where = f"case {i}"
        if not isinstance(c, dict):
            errs.append(f"{where}: not a mapping")
            continue
        where = f"case {i} ({c.get('file', '?')})"
        for key, typ in REQUIRED.items():
            if key not in c:
                errs.append(f"{where}: missing {key}")
            elif not isinstance(c[key], typ):
                errs.append(f"{where}: {key} must be {typ.__name__}, got {type(c[key]).__name__}")
        for key, typ in OPTIONAL.items():
            if key in c and not isinstance(c[key], typ):
                errs.append(f"{where}: {key} has type {type(c[key]).__name__}")
        unknown = set(c) - set(REQUIRED) - set(OPTIONAL)
        if unknown:
            errs.append(f"{where}: unknown fields {sorted(unknown)}")
        if c.get("family") not in FAMILIES:
            errs.append(f"{where}: family {c.get('family')!r} not in {sorted(FAMILIES)}")
        if c.get("provenance") not in PROVENANCE:
            errs.append(f"{where}: provenance {c.get('provenance')!r}")
        if c.get("shape") not in SHAPES:
            errs.append(f"{where}: shape {c.get('shape')!r}")
        if not all(isinstance(t, str) for t in c.get("tags", []) or []):
            errs.append(f"{where}: tags must be strings")
        items = c.get("expected_fix")
        if isinstance(items, list):
            for item in items:
                if not isinstance(item, str):
                    errs.append(f"{where}: expected_fix item {item!r} is a {type(item).__name__}, not a string")
                    continue
                if item == "evidence":
                    continue
                kind, name, direction = parse_expected(item)
                m = re.match(r"\s*(?:docker\s+)?--?[\w-]+\s*:\s*(\w+)", item)
                if m and m.group(1).lower() not in DIRECTION:
                    errs.append(f"{where}: unknown direction {m.group(1)!r} in {item!r}")
                if kind == "note" and not item.startswith("note"):
                    errs.append(f"{where}: {item!r} parses as nothing (write 'note: ...' for prose)")
            healthy = c.get("cause") == "healthy"
            if healthy and items:
                errs.append(f"{where}: a healthy case has no expected fix")
            if not healthy and not [x for x in items if isinstance(x, str) and not x.startswith("note")]:
                errs.append(f"{where}: a failure case needs a matchable expected fix or 'evidence'")
            if "evidence" in items and not c.get("key_lines"):
                errs.append(f"{where}: 'evidence' needs key_lines")
        if not all(isinstance(k, str) for k in c.get("key_lines", []) or []):
            errs.append(f"{where}: key_lines must be strings")
        f = c.get("file")
        if isinstance(f, str):
            if f in seen:
                errs.append(f"{where}: duplicate file")
            seen.add(f)
            p = root / f
            if not p.is_file():
                errs.append(f"{where}: no file {f}")
            else:
                text = p.read_text(errors="replace")
                for k in c.get("key_lines", []) or []:
                    if isinstance(k, str) and k not in text:
                        errs.append(f"{where}: key line not in the log: {k[:60]!r}")
    return errs


# ---------------------------------------------------------------- matching

def fix_keys(fix: dict) -> tuple[str, str, str | None]:
    kind = fix.get("kind", "flag")
    action = DIRECTION.get(str(fix.get("action", "")).lower())
    if kind == "env":
        return "env", str(fix.get("name", "")), action
    if kind in ("flag", "docker"):
        return kind, canon_flag(str(fix.get("flag", ""))), action
    if kind in ("package", "system"):
        return kind, str(fix.get("name", "")).lower(), action
    return kind, "", action


def as_number(x: object) -> float | None:
    try:
        return float(str(x).strip().rstrip("gGbB"))
    except (TypeError, ValueError):
        return None


def matches_strict(expected: tuple[str, str, str | None], value: str | None, fix: dict) -> bool:
    ek, ename, edir = expected
    fk, fname, fdir = fix_keys(fix)
    if ename != fname:
        return False
    if ek == "docker":
        if fk not in ("docker", "flag"):
            return False
    elif fk != ek:
        return False
    if value is not None and str(fix.get("value", "")).strip().lower() != value:
        return False
    if edir is None:
        return True
    if edir == "set":
        return fix.get("value") not in (None, "") or fdir in ("add", "remove")
    if fdir == edir:
        return True
    if fdir == "set" and edir in ("raise", "lower"):
        new, old = as_number(fix.get("value")), as_number(fix.get("from"))
        return new is not None and old is not None and (new > old if edir == "raise" else new < old)
    return False


def matches_lenient(expected: tuple[str, str, str | None], got: tuple[str, str, str | None]) -> bool:
    ek, ename, edir = expected
    fk, fname, fdir = got
    if ename != fname:
        return False
    if ek == "docker" and fk not in ("docker", "flag"):
        return False
    if ek in ("flag", "env", "package", "system", "note") and fk != ek:
        return False
    if edir is None or edir == "set" or fdir is None:
        return True
    if edir in ("add", "remove") and fdir == "set":
        return True
    return edir == fdir


def root_finding(findings: list[dict]) -> dict | None:
    for sev in ("error", "warning"):
        for f in findings:
            if f.get("severity") == sev:
                return f
    return None


def cites_key_line(finding: dict, keys: list[str]) -> bool:
    keys = [k.strip() for k in keys if k.strip()]
    return any(k in ev.get("text", "") for ev in finding.get("evidence", []) for k in keys)


def strict_ok(case: dict, findings: list[dict]) -> bool:
    expected = case.get("expected_fix", [])
    root = root_finding(findings)
    if root is None:
        return False
    if "evidence" in expected and cites_key_line(root, case.get("key_lines", [])):
        return True
    fixes = [fx for fx in root.get("fixes", []) if fx.get("kind") != "note"][:2]
    items = [x for x in expected if x != "evidence"]
    for i, item in enumerate(items):
        exp = parse_expected(item)
        if exp[0] == "note" or (exp in CATCH_ALLS and i > 0):
            continue
        if any(matches_strict(exp, expected_value(item), fx) for fx in fixes):
            return True
    return False


def lenient_ok(case: dict, findings: list[dict]) -> bool:
    serious = [f for f in findings if f.get("severity") in ("error", "warning")]
    expected = [parse_expected(x) for x in case.get("expected_fix", []) if x != "evidence"]
    got = [fix_keys(fx) for f in serious for fx in f.get("fixes", [])]
    if any(matches_lenient(e, g) for e in expected for g in got):
        return True
    return "evidence" in case.get("expected_fix", []) and any(
        cites_key_line(f, case.get("key_lines", [])) for f in serious)


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
    ap.add_argument("--dir", default=str(DEFAULT_DIR))
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    ap.add_argument("--json", metavar="OUT", help="write per-case results as JSON")
    ap.add_argument("--validate-only", action="store_true", help="check the labels and stop")
    a = ap.parse_args()
    root = Path(a.dir)
    cases = yaml.safe_load((root / "cases.yaml").read_text())
    errs = validate(cases, root)
    if errs:
        print("label schema errors:", *errs, sep="\n  ", file=sys.stderr)
        return 2
    if a.validate_only:
        print(f"{len(cases)} labels valid")
        return 0
    results = []
    with tempfile.TemporaryDirectory() as cwd:
        for c in cases:
            report, err = run_doctor(a.doctor, root / c["file"], cwd)
            findings = report.get("findings", []) if report else []
            rootf = root_finding(findings)
            r = {
                "file": c["file"], "family": c["family"], "tags": c.get("tags", []) or [],
                "healthy": c["cause"] == "healthy", "error": err,
                "strict": bool(report) and c["cause"] != "healthy" and strict_ok(c, findings),
                "lenient": bool(report) and c["cause"] != "healthy" and lenient_ok(c, findings),
                "errors": sum(1 for f in findings if f.get("severity") == "error"),
                "rules": [f"{f.get('rule')}:{f.get('severity')}" for f in findings],
                "root": rootf.get("rule") if rootf else None,
                "root_fixes": [(fx.get("kind"), fx.get("flag") or fx.get("name") or "", fx.get("action"),
                                fx.get("value")) for fx in (rootf or {}).get("fixes", [])[:2]],
                "expected": c["expected_fix"],
            }
            results.append(r)
    overall = Tally()
    fam: dict[str, Tally] = defaultdict(Tally)
    tag: dict[str, Tally] = defaultdict(Tally)
    for r in results:
        overall.add(r)
        fam[r["family"]].add(r)
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
