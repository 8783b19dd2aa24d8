"""Mutation check: does the fast test subset notice when a rule computes the wrong advice?

    .venv/bin/python bench/mutation.py [-v] [--rule ID ...] [--json OUT]

Every computed formula of the rule files is inverted in turn, one mutant at a time:

* in each `let` expression, each arithmetic operator (`+` ↔ `-`, `*` ↔ `/`, `//` → `*`), each
  `min` ↔ `max`, `round_up` ↔ `round_down`, `ceil` ↔ `floor`, each comparison (`<` ↔ `>`,
  `<=` ↔ `>=`, `==` ↔ `!=`);
* each fix whose action is `raise` or `lower` gets the other one.

A mutant is KILLED when the fast subset of the suite fails on it: `rules test` (every fixture's
fires/quiet verdict, its `.expect.yaml` and its snapshot, as `sglang_doctor.ruledev.fixture_test`
checks them) or the real-log test (`tests/test_real_logs.py`'s verdict for each case). Only the inputs
where the mutated rule matched some record in the unmutated run are analyzed again (a rule's formulas
cannot change the report of an input it never matched). A mutant that SURVIVES is advice that can be
inverted without any test noticing. Prints the surviving mutants with -v, then the figure.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

from sglang_doctor._speed.deferred import materialize  # noqa: E402
from sglang_doctor.engine.rules import Rule, load_rules  # noqa: E402
from sglang_doctor.model import to_json  # noqa: E402
from sglang_doctor.pipeline.run import Options, diagnose  # noqa: E402
from sglang_doctor.pipeline.why import WhyTrace  # noqa: E402
from sglang_doctor.ruledev.fixture_test import check_fixture  # noqa: E402

BINOP_SWAP: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
                                ast.FloorDiv: ast.Mult}
CMP_SWAP: dict[type, type] = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE,
                              ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
CALL_SWAP = {"min": "max", "max": "min", "round_up": "round_down", "round_down": "round_up",
             "ceil": "floor", "floor": "ceil"}
ACTION_SWAP = {"raise": "lower", "lower": "raise"}


@dataclasses.dataclass
class Mutant:
    rule: str
    where: str  # "let.new_mfs: min -> max" / "fixes[2].action: raise -> lower"
    mutated: Rule


def load_real_test() -> ModuleType:
    """tests/test_real_logs.py as a module (its CASES, REAL and case_problem)."""
    sys.path.insert(0, str(TESTS))
    spec = importlib.util.spec_from_file_location("test_real_logs", TESTS / "test_real_logs.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _expression_mutants(source: str) -> Iterator[tuple[str, str]]:
    """(description, mutated source) for each mutation point of one expression."""
    tree = ast.parse(source, mode="eval")
    points = [n for n in ast.walk(tree)
              if isinstance(n, ast.BinOp) and type(n.op) in BINOP_SWAP
              or isinstance(n, ast.Compare) and any(type(o) in CMP_SWAP for o in n.ops)
              or isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in CALL_SWAP]
    for i in range(len(points)):
        copy = ast.parse(source, mode="eval")
        node = [n for n in ast.walk(copy)
                if isinstance(n, ast.BinOp) and type(n.op) in BINOP_SWAP
                or isinstance(n, ast.Compare) and any(type(o) in CMP_SWAP for o in n.ops)
                or isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in CALL_SWAP][i]
        if isinstance(node, ast.BinOp):
            old, node.op = type(node.op).__name__, BINOP_SWAP[type(node.op)]()
            desc = f"{old} -> {type(node.op).__name__}"
        elif isinstance(node, ast.Compare):
            j = next(k for k, o in enumerate(node.ops) if type(o) in CMP_SWAP)
            old = type(node.ops[j]).__name__
            node.ops[j] = CMP_SWAP[type(node.ops[j])]()
            desc = f"{old} -> {type(node.ops[j]).__name__}"
        else:
            assert isinstance(node.func, ast.Name)
            old, node.func.id = node.func.id, CALL_SWAP[node.func.id]
            desc = f"{old} -> {node.func.id}"
        yield desc, ast.unparse(copy)


def mutants(rule: Rule) -> Iterator[Mutant]:
    for name, source in rule.let.items():
        if not isinstance(source, str):
            continue
        for desc, new in _expression_mutants(source):
            yield Mutant(rule.id, f"let.{name}: {desc}",
                         dataclasses.replace(rule, let={**rule.let, name: new}))
    for i, fix in enumerate(rule.fixes):
        if fix.action in ACTION_SWAP:
            fixes = list(rule.fixes)
            fixes[i] = dataclasses.replace(fix, action=ACTION_SWAP[fix.action])
            yield Mutant(rule.id, f"fixes[{i}].action: {fix.action} -> {ACTION_SWAP[fix.action]}",
                         dataclasses.replace(rule, fixes=fixes))


@dataclasses.dataclass
class Input:
    path: Path
    owner: Rule | None  # the rule whose fixture it is; None for a real log
    case: dict[str, Any] | None  # the real case


def problems(inp: Input, rules: list[Rule], real: ModuleType) -> tuple[list[str], set[str]]:
    """(what the fast subset says is wrong on this input, the rules that matched some record in it)."""
    trace = WhyTrace()
    run = diagnose([str(inp.path)], rules, Options(trace=trace))
    hit = set(trace.inputs[0].hits) if trace.inputs else set()
    if inp.owner is not None:
        return check_fixture(inp.owner, inp.path, run.report), hit
    found = [to_json(f) for f in run.report.findings]
    problem = real.case_problem(inp.case, found)
    return ([] if problem is None else [problem]), hit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-v", "--verbose", action="store_true", help="list the surviving mutants")
    ap.add_argument("--rule", action="append", help="only mutate these rules")
    ap.add_argument("--json", metavar="OUT", help="write every mutant's outcome as JSON")
    a = ap.parse_args()
    materialize()
    rules = load_rules(cache=False)
    real = load_real_test()
    inputs = [Input(p, r, None) for r in rules for p in sum(r.fixtures(), [])]
    inputs += [Input(real.REAL / c["file"], None, c) for c in real.CASES]
    t0 = time.monotonic()
    baseline: dict[int, bool] = {}
    touching: dict[str, list[int]] = defaultdict(list)
    for i, inp in enumerate(inputs):
        bad, hit = problems(inp, rules, real)
        baseline[i] = not bad
        for rid in hit:
            touching[rid].append(i)
    index = {r.id: k for k, r in enumerate(rules)}
    picked = [r for r in rules if not a.rule or r.id in a.rule]
    results: list[dict[str, Any]] = []
    for rule in picked:
        for m in mutants(rule):
            mutated = list(rules)
            mutated[index[rule.id]] = m.mutated
            killed_by = ""
            for i in touching.get(rule.id, []):
                if not baseline[i]:
                    continue  # failing already: not evidence against this mutant
                bad, _ = problems(inputs[i], mutated, real)
                if bad:
                    killed_by = f"{inputs[i].path.name}: {bad[0]}"
                    break
            results.append({"rule": m.rule, "mutation": m.where, "killed": bool(killed_by), "by": killed_by,
                            "inputs": len(touching.get(rule.id, []))})
    killed = sum(r["killed"] for r in results)
    if a.verbose:
        for r in results:
            if not r["killed"]:
                print(f"SURVIVED {r['rule']:45s} {r['mutation']}  ({r['inputs']} inputs)")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    failing = sum(not ok for ok in baseline.values())
    per_rule = defaultdict(lambda: [0, 0])
    for r in results:
        per_rule[r["rule"]][0] += r["killed"]
        per_rule[r["rule"]][1] += 1
    clean = sum(1 for k, n in per_rule.values() if k == n)
    print(f"mutants killed: {killed}/{len(results)} ({100 * killed / max(len(results), 1):.0f} %); "
          f"rules with every mutant killed: {clean}/{len(per_rule)}; "
          f"inputs failing before mutation (ignored): {failing}; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
