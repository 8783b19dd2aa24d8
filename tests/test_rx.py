"""Rule regexes run on `re` only where that is safe, and both engines agree on every match."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers_cli import command_runs
from sglang_doctor.read.records import Segmenter
from sglang_doctor.read.reader import lines_of_chunk
from sglang_doctor.engine.rules import load_rules
from sglang_doctor.engine.rx import FAST_MAX_CHARS, RuleRegex

RULES = load_rules(cache=False)
PATTERNS = {p.regex: p for r in RULES for p in (*r.match.any, *r.match.require, *r.match.exclude)}


def test_every_shipped_pattern_is_backtrack_safe():
    # All shipped patterns pass lint, so all of them are searched by `re` on normal records.
    unsafe = [p.regex for r in RULES for p in r.match.any if not p.safe]
    assert not unsafe


def test_short_text_uses_re_and_long_text_the_timed_engine():
    rx = RuleRegex(r"KV Cache is allocated\. #tokens: (?P<tokens>\d+)", safe=True)
    assert rx.search("KV Cache is allocated. #tokens: 2048").group("tokens") == "2048"
    assert rx._re is not None and rx._regex is None
    long = "x" * FAST_MAX_CHARS + " KV Cache is allocated. #tokens: 7"
    assert rx.search(long).group("tokens") == "7"
    assert rx._regex is not None


def test_a_hazardous_pattern_never_runs_on_re():
    rx = RuleRegex("(a|a)+$", safe=False)
    with pytest.raises(TimeoutError):
        rx.search("a" * 40 + "b")
    assert rx._re is None


def test_syntax_re_lacks_falls_back_to_regex():
    rx = RuleRegex(r"\p{Lu}+ failed", safe=True)  # a Unicode property: the `regex` module only
    assert rx.search("NCCL failed") is not None
    assert rx.safe is False and rx._regex is not None


def test_pickled_rule_regex_carries_no_compiled_engine():
    import pickle

    rx = RuleRegex("abc(?P<n>\\d)", safe=True)
    rx.search("abc1")
    back = pickle.loads(pickle.dumps(rx))
    assert (back.pattern, back.safe, back._re, back._regex) == (rx.pattern, True, None, None)


def _records() -> list[str]:
    root = Path(__file__).resolve().parent
    logs = [*root.glob("data/real/*.log"), *root.glob("data/healthy/*.log"),
            *(f for r in RULES for f in sum(r.fixtures(), []))]
    out: list[str] = []
    for path in logs:
        seg = Segmenter()
        recs = []
        for line in lines_of_chunk(1, path.read_bytes()):
            recs.extend(seg.feed(line) or [])
        recs.extend(seg.finish() or [])
        out.extend(r.text for r in recs)
    return out


def test_re_and_regex_agree_on_every_real_record():
    import re

    import regex

    texts = _records()
    assert len(texts) > 1000
    for pattern, p in PATTERNS.items():
        fast, slow = re.compile(pattern, re.ASCII), regex.compile(pattern, regex.ASCII)
        for t in texts:
            if p.literal is not None and p.literal not in t:  # as the engine: never searched
                continue
            a, b = fast.search(t), slow.search(t)
            assert (a and (a.span(), a.groupdict())) == (b and (b.span(), b.groupdict())), (pattern, t[:200])


def test_a_normal_run_does_not_import_regex(tmp_path):
    # The first run validates the rule files (with `regex`) and caches them; the second must not need it.
    first, second = command_runs(tmp_path, "'regex' in sys.modules")
    assert second.stderr.strip().splitlines()[-1] == "False", second.stderr
