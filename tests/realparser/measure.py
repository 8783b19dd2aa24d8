"""Measure the corrected commands against SGLang's real parser, and (re)write known_failures.yaml.

    python -m tests.realparser.measure [--reports DUMP.jsonl] [--write-known]

Runs the product over every input (or reads a dump of `python -m tests.realparser.collect`),
parses each corrected command with EVERY covered release (for the numbers) and with the nearest
one (what the test uses), and prints counts by release and by category with examples.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from tests.realparser import collect as col
from tests.realparser.harness import releases, releases_for, sglang_parse_releases
from tests.realparser.known import write_known


def load_cases(dump: Path | None) -> list[col.Case]:
    if dump is None:
        with tempfile.TemporaryDirectory() as tmp:
            return col.collect(Path(tmp))
    cases = []
    for line in dump.read_text().splitlines():
        d = json.loads(line)
        cases.append(col.Case(d["id"], d["argv"], d["id"].endswith("+standin"), d["report"], d["error"]))
    return cases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reports", type=Path)
    ap.add_argument("--write-known", action="store_true")
    opts = ap.parse_args()
    t0 = time.monotonic()
    cases = load_cases(opts.reports)
    t_collect = time.monotonic() - t0
    by_input: dict[str, col.Case] = {}
    for c in cases:
        base = c.id.removesuffix("+standin")
        if c.corrected or base not in by_input:
            by_input[base] = c
    with_cmd = {cid: c for cid, c in by_input.items() if c.corrected}
    launches = {cid: col.launch_args(c.corrected) for cid, c in with_cmd.items()}
    routers = [cid for cid, (_, how) in launches.items() if how == "router"]
    no_launch = [cid for cid, (argv, how) in launches.items() if not argv and how != "router"]
    order = [cid for cid in with_cmd if launches[cid][0]]
    argvs = {cid: launches[cid][0] for cid in order}
    t1 = time.monotonic()
    results = sglang_parse_releases({rel: [argvs[cid] for cid in order] for rel in releases()})
    t_parse = time.monotonic() - t1

    kinds = Counter(cid.split(":")[0] + ("+standin" if c.standin else "") for cid, c in with_cmd.items())
    fixtures = [cid for cid in by_input if cid.startswith("fixture:")]
    fix_bearing = [cid for cid in fixtures if by_input[cid].flag_fixes]
    print(f"doctor runs: {len(cases)} ({t_collect:.0f} s); inputs: {len(by_input)}; "
          f"with a corrected command: {len(with_cmd)} {dict(kinds)}")
    print(f"fixtures with a flag fix: {len(fix_bearing)}, of which with a command: "
          f"{sum(1 for cid in fix_bearing if cid in with_cmd)}")
    print(f"router launches (not parsed): {len(routers)}; no launch found: {no_launch}")
    print(f"parsed: {len(order)} commands x {len(releases())} releases in {t_parse:.0f} s")
    print("detected releases:", dict(Counter(str(with_cmd[cid].detected_release) for cid in order).most_common()))
    checked_with = {cid: releases_for(with_cmd[cid].target_releases) for cid in order}
    known: dict[str, dict] = {}
    cats: Counter[str] = Counter()
    for rel in releases():
        res = dict(zip(order, results[rel]))
        bad = {cid: r for cid, r in res.items() if not r.ok}
        mine = [cid for cid in order if rel in checked_with[cid]]
        mine_bad = [cid for cid in mine if not res[cid].ok]
        print(f"\n== sglang {rel}: rejects {len(bad)}/{len(order)} of all commands; "
              f"{len(mine_bad)}/{len(mine)} of those it is the release to check with")
        print("   by category (all):", dict(Counter(r.category for r in bad.values()).most_common()))
        print("   by category (its own):", dict(Counter(res[cid].category for cid in mine_bad).most_common()))
        for cid in mine_bad:
            if cid not in known:  # the first failing release, as the test reports it
                r = res[cid]
                cats[r.category] += 1
                known[cid] = {"release": rel, "category": r.category, "error": r.error,
                              "command": with_cmd[cid].corrected}
        for cid in mine_bad[:15]:
            print(f"   {cid}: {res[cid].error}\n      {with_cmd[cid].corrected}")
    print(f"\nrejected (first failing release per command): {len(known)}/{len(order)}; by category: {dict(cats)}")
    if opts.write_known:
        write_known(known)
        print("wrote tests/realparser/known_failures.yaml")


if __name__ == "__main__":
    main()
