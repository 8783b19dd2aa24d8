"""Leave-the-diagnosing-rules-out estimate over the real logs (tests/data/real/cases.yaml).

For each case: run sglang-doctor, take the rules whose finding carries an expected fix (the
lenient matching of tests/scoring.py), run again with exactly those rules disabled (a temporary
config file), and record whether another rule still diagnoses the case: leniently (the first
error/warning finding carries an expected fix, or any finding cites a key line for 'evidence'
cases) and strictly (tests/scoring.py's strict_ok: the root finding's first two fixes, directions
and values compared), and whether any error/warning finding remains. This estimates how the tool
does on a failure it has no specific rule for.

Usage: .venv/bin/python tools/holdout.py [-v] [-j N] [case-file-substring ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
DOCTOR = ROOT / ".venv" / "bin" / "sglang-doctor"


def load_matching() -> ModuleType:
    """tests/test_real_logs.py as a module (its diagnosed, REAL and CASES; its `scoring` module)."""
    sys.path.insert(0, str(TESTS))  # it imports helpers_cli from tests/
    spec = importlib.util.spec_from_file_location("test_real_logs", TESTS / "test_real_logs.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def serious_findings(path: Path, disabled: list[str], workdir: Path) -> list[dict[str, Any]]:
    """Error/warning findings of one run, with `disabled` rules turned off (in report order)."""
    cfg = workdir / f"{path.stem}.sglang-doctor.yaml"
    cfg.write_text("disable:\n" + "".join(f"  - {r}\n" for r in disabled) if disabled else "{}\n")
    out = subprocess.run([str(DOCTOR), "--format", "json", "--no-baseline", "--config", str(cfg), str(path)],
                         capture_output=True, text=True, cwd=workdir)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"{path.name}: exit {out.returncode}: {out.stderr.strip()}")
    return [f for f in json.loads(out.stdout)["findings"] if f["severity"] in ("error", "warning")]


@dataclass
class Outcome:
    file: str
    left_out: list[str]  # the rules that diagnosed it in the full run
    diagnosed: bool  # another rule still gives an expected fix (root cause first)
    strict: bool  # ... and the root finding's first two fixes carry it, strictly compared
    some_finding: bool  # any error/warning finding remains
    lead: str  # the first error/warning rule after leaving out, or '-'
    errors: int  # error findings after leaving out (more than one: the generic layer disagrees with itself)


def is_diagnosed(m: ModuleType, case: dict[str, Any], serious: list[dict[str, Any]]) -> bool:
    if not serious:
        return False
    if "evidence" in case.get("expected_fix", []):
        return any(m.diagnosed(case, f) for f in serious)
    return m.diagnosed(case, serious[0])


def run_case(m: ModuleType, case: dict[str, Any], workdir: Path) -> Outcome:
    path = m.REAL / case["file"]
    full = serious_findings(path, [], workdir)
    left_out = sorted({f["rule"] for f in full if m.diagnosed(case, f)})
    rest = serious_findings(path, left_out, workdir) if left_out else full
    return Outcome(case["file"], left_out, is_diagnosed(m, case, rest), m.scoring.strict_ok(case, rest),
                   bool(rest), rest[0]["rule"] if rest else "-", sum(f["severity"] == "error" for f in rest))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("only", nargs="*", help="only cases whose file name contains one of these")
    args = ap.parse_args()
    m = load_matching()
    cases = [c for c in m.CASES if not args.only or any(s in c["file"] for s in args.only)]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(lambda c: run_case(m, c, Path(tmp)), cases))
    if args.verbose:
        for o in outcomes:
            state = ("DIAG" if o.strict else "diag") if o.diagnosed else ("some" if o.some_finding else "NONE")
            many = f"  ({o.errors} errors)" if o.errors > 1 else ""
            print(f"{state:4}  {o.file:55} left out: {','.join(o.left_out) or '-':45} lead: {o.lead}{many}")
    n = len(outcomes)
    diag = sum(o.diagnosed for o in outcomes)
    strict = sum(o.strict for o in outcomes)
    some = sum(o.some_finding for o in outcomes)
    many = sum(o.errors > 1 for o in outcomes)
    print(f"leave-the-diagnosing-rules-out: {diag}/{n} still diagnosed ({strict}/{n} strictly), "
          f"{some}/{n} with some error/warning finding, {many} with more than one error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
