"""Stage one's narrowed patterns (engine/narrow.py): a superset of the lines, the rare part kept."""

from __future__ import annotations

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_doctor.engine import scan
from sglang_doctor.engine.narrow import BULK_LINES, stage_one_form
from sglang_doctor.read.records import parse_header
from sglang_doctor.read.reader import clean


def test_the_decode_rules_keep_only_their_rare_tail(rules):
    by_id = {r.id: r.match.any[0].regex for r in rules if r.match.any}
    assert stage_one_form(by_id["decode-without-cuda-graph"]) == "cuda graph: False, gen throughput"
    assert stage_one_form(by_id["kv-pool-saturated-queue"]) == (
        r"(?:full )?token usage: (?P<usage>0\.9[5-9]|1\.00)[^\n]*?#queue-req: (?P<queue>[1-9]\d*)")
    for line in BULK_LINES:  # (so that no healthy serving line is a stage-one hit)
        assert not regex.search(stage_one_form(by_id["decode-without-cuda-graph"]), line)
    if scan.hyperscan_available():  # the scanner hands Hyperscan these forms
        plan = scan.Scanner([by_id["decode-without-cuda-graph"]]).plan
        assert plan.hs_patterns == ["cuda graph: False, gen throughput"]


@pytest.mark.parametrize("pattern", [
    r"Not enough memory[^\n]*?Decode batch",  # the first part is rare already
    r"Decode batch[^\n]*?#queue-req: \d+",  # every part is common: nothing rare to keep
    r"(?P<a>Decode batch)[^\n]*?rare (?P=a)",  # a back-reference into a dropped part
    r"(?s)Decode batch.*?rare",  # `.` crosses lines here
    r"Decode batch (?:[^\n]*?x)",  # the gap is inside a group
    r"Decode batch[^\n]*?{bad",
])
def test_patterns_kept_whole(pattern):
    assert stage_one_form(pattern) == pattern


def test_the_parts_after_the_rare_one_keep_their_gaps():
    assert stage_one_form(r"Decode batch, [^\n]*?rare (?P<x>\d+)[^\n]*?#queue-req: 3") == (
        r"rare (?P<x>\d+)[^\n]*?#queue-req: 3")


def test_leading_flags_stay():
    assert stage_one_form(r"(?i)decode BATCH[^\n]*?OUT of pages") == r"(?i)OUT of pages"
    assert stage_one_form(r"Decode batch.*?page fault [\]x]+") == r"page fault [\]x]+"


WORDS = ["Decode batch", ", ", "#running-req: ", "token usage: ", "0.97", "cuda graph: ", "False", "True",
         "gen throughput", "#queue-req: ", "3", "0", "Prefill batch", "rare", "\\"]
atom = st.one_of(st.sampled_from([regex.escape(w) for w in WORDS]),
                 st.sampled_from([r"[^\n]*?", r"[^\n]*", r".*?", r"\d+", r"(?P<n>\d+)", r"(?:True|False)"]))
patterns = st.lists(atom, min_size=1, max_size=7).map("".join)
lines = st.lists(st.sampled_from(WORDS + [" ", "12", "x"]), min_size=0, max_size=14).map("".join)


@pytest.mark.skipif(not scan.hyperscan_available(), reason="hyperscan wheel not importable")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pats=st.lists(patterns, min_size=1, max_size=4), body=st.lists(lines, min_size=1, max_size=20))
def test_narrowed_scanner_finds_every_line_the_full_regex_matches(pats, body):
    compiled = [regex.compile(p, regex.ASCII) for p in pats]
    sc = scan.Scanner(pats)  # (it narrows them)
    raw_lines = ["[2025-01-01 10:00:00 TP0] " + b for b in body]
    starts = set(sc.hits(("\n".join(raw_lines) + "\n").encode())[0])
    offset = 0
    for raw in raw_lines:
        h = parse_header(clean(raw))
        if any(rx.search(h.message if h else raw) for rx in compiled):
            assert offset in starts, (pats, raw)
        offset += len(raw.encode()) + 1
