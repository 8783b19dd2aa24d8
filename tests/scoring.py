"""How a labelled real log is scored: the label schema and the strict and lenient matching.

One definition for tests/test_real_logs.py, tools/score_holdout.py (hold-out and real sets) and
tools/holdout.py. It restates the rules of the shared evaluation (shared/eval/score.py), because the
product repository must not read ../shared:

* the ROOT finding is the first finding of severity error, else the first warning;
* STRICT: one of the root finding's first two fixes (fixes of kind `note` skipped) matches an expected
  fix: same kind (flag / env / docker / package / system) and name (flag aliases folded), the same
  direction where the label gives one (a `raise`/`lower` label also accepts `set` with a value on the
  right side of `from`; a `set` label needs a fix with a value or an add/remove), and the same value
  where an `env NAME=value` label gives a concrete one; the catch-alls `package sglang: raise` and
  `system gpu: raise` count only when listed first; `evidence` is met when the root finding cites a
  key line;
* LENIENT: any fix of any error/warning finding, directions loosely compared (a label without a
  direction or with `set` matches any action), or any serious finding citing a key line for
  `evidence` cases.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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

# The label schema. Vocabularies: who states the fix, how much of the source the log keeps, where
# its `# cmd:` lines come from.
PROVENANCE = {"maintainer", "reporter", "labeller"}
SHAPES = {"verbatim", "excerpt", "reconstructed"}
CMD_SOURCES = {"log", "thread-prose"}
REQUIRED = {"file": str, "source": str, "family": str, "cause": str, "expected_fix": list,
            "fix_known": bool, "key_lines": list, "provenance": str, "shape": str, "notes": str}
OPTIONAL = {"sglang_version": (str, type(None)), "hardware": (str, type(None)), "tags": list, "cmd_source": str}
CMD_LINE = "# cmd:"

Expected = tuple[str, str, "str | None"]


# ---------------------------------------------------------------- labels

def canon_flag(name: str) -> str:
    name = name.strip()
    return ALIASES.get(name, name)


def parse_expected(item: str) -> Expected:
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


def validate(cases: object, root: Path, families: set[str] | None = None, real_set: bool = False) -> list[str]:
    """Schema errors of a cases.yaml (empty when valid). `families`: the allowed family names (None: any).

    `real_set`: also one case per source thread, and `cmd_source` on every case whose log has a `# cmd:`
    line (the hold-out's README already says its `# cmd:` lines copy a command printed in the source).
    """
    errs: list[str] = []
    if not isinstance(cases, list):
        return ["cases.yaml must be a list of cases"]
    seen: set[str] = set()
    sources: set[str] = set()
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
        if families is not None and c.get("family") not in families:
            errs.append(f"{where}: family {c.get('family')!r} not in {sorted(families)}")
        if c.get("provenance") not in PROVENANCE:
            errs.append(f"{where}: provenance {c.get('provenance')!r} not in {sorted(PROVENANCE)}")
        if c.get("shape") not in SHAPES:
            errs.append(f"{where}: shape {c.get('shape')!r} not in {sorted(SHAPES)}")
        if "cmd_source" in c and c["cmd_source"] not in CMD_SOURCES:
            errs.append(f"{where}: cmd_source {c['cmd_source']!r} not in {sorted(CMD_SOURCES)}")
        if not all(isinstance(t, str) for t in c.get("tags", []) or []):
            errs.append(f"{where}: tags must be strings")
        if real_set and isinstance(c.get("source"), str):
            if c["source"] in sources:
                errs.append(f"{where}: the same source as another case (merge them)")
            sources.add(c["source"])
        errs += [f"{where}: {e}" for e in _label_errors(c)]
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
                has_cmd = any(line.startswith(CMD_LINE) for line in text.splitlines())
                if real_set and has_cmd and "cmd_source" not in c:
                    errs.append(f"{where}: the log has a '{CMD_LINE}' line: say where it comes from (cmd_source)")
                if not has_cmd and "cmd_source" in c:
                    errs.append(f"{where}: cmd_source without a '{CMD_LINE}' line in the log")
    return errs


def _label_errors(c: dict[str, Any]) -> list[str]:
    errs: list[str] = []
    items = c.get("expected_fix")
    if not isinstance(items, list):
        return errs
    for item in items:
        if not isinstance(item, str):
            errs.append(f"expected_fix item {item!r} is a {type(item).__name__}, not a string")
            continue
        if item == "evidence":
            continue
        kind, _, _ = parse_expected(item)
        m = re.match(r"\s*(?:docker\s+)?--?[\w-]+\s*:\s*(\w+)", item)
        if m and m.group(1).lower() not in DIRECTION:
            errs.append(f"unknown direction {m.group(1)!r} in {item!r}")
        if kind == "note" and not item.startswith("note"):
            errs.append(f"{item!r} parses as nothing (write 'note: ...' for prose)")
    healthy = c.get("cause") == "healthy"
    if healthy and items:
        errs.append("a healthy case has no expected fix")
    if not healthy and not [x for x in items if isinstance(x, str) and not x.startswith("note")]:
        errs.append("a failure case needs a matchable expected fix or 'evidence'")
    if "evidence" in items and not c.get("key_lines"):
        errs.append("'evidence' needs key_lines")
    if not all(isinstance(k, str) for k in c.get("key_lines", []) or []):
        errs.append("key_lines must be strings")
    return errs


# ---------------------------------------------------------------- matching

def fix_keys(fix: dict[str, Any]) -> Expected:
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


def matches_strict(expected: Expected, value: str | None, fix: dict[str, Any]) -> bool:
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


def matches_lenient(expected: Expected, got: Expected) -> bool:
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


def serious(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f.get("severity") in ("error", "warning")]


def root_finding(findings: list[dict[str, Any]]) -> dict[str, Any] | None:
    for sev in ("error", "warning"):
        for f in findings:
            if f.get("severity") == sev:
                return f
    return None


def cites_key_line(finding: dict[str, Any], keys: list[str]) -> bool:
    keys = [k.strip() for k in keys if k.strip()]
    return any(k in ev.get("text", "") for ev in finding.get("evidence", []) for k in keys)


def carries_expected_fix(case: dict[str, Any], finding: dict[str, Any]) -> bool:
    """The lenient test on one finding: some fix of it matches some expected fix, or it cites a key
    line of an 'evidence' case."""
    expected = [parse_expected(x) for x in case.get("expected_fix", []) if x != "evidence"]
    if any(matches_lenient(e, fix_keys(fx)) for e in expected for fx in finding.get("fixes", [])):
        return True
    return "evidence" in case.get("expected_fix", []) and cites_key_line(finding, case.get("key_lines", []))


def strict_ok(case: dict[str, Any], findings: list[dict[str, Any]]) -> bool:
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


def lenient_ok(case: dict[str, Any], findings: list[dict[str, Any]]) -> bool:
    return any(carries_expected_fix(case, f) for f in serious(findings))


def root_fixes(findings: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The root finding's first two fixes, for messages: (kind, flag or name, action, value)."""
    root = root_finding(findings) or {}
    return [(fx.get("kind"), fx.get("flag") or fx.get("name") or "", fx.get("action"), fx.get("value"))
            for fx in root.get("fixes", [])[:2]]


def without_curated_commands(text: str) -> str:
    """A log's text without its `# cmd:` lines (a curator wrote them from the thread's prose)."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(CMD_LINE))
