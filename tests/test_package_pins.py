"""Package versions a log shows become facts, and the rules quote the detected release's pins
(data/pins.json) instead of a hand-typed table: 'sglang X pins Y==Z; this log shows Y W'."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sglang_doctor.engine.analyze import Matcher, analyze_chunks
from sglang_doctor.engine.expr import MissingValue, compile_expr, evaluate
from sglang_doctor.read.reader import iter_chunks

CHECK_ENV = """Python: 3.12.3 (main, Nov  6 2025, 13:44:16) [GCC 13.3.0]
CUDA available: True
PyTorch: 2.9.0+cu128
sglang: 0.5.5
sgl_kernel: 0.3.16.post5
vllm: Module Not Found
"""
REGISTERED = """Traceback (most recent call last):
  File "/usr/local/lib/python3.12/site-packages/sglang/srt/configs/qwen2_5_vl_config.py", line 1005, in <module>
    AutoImageProcessor.register(Qwen2_5_VLConfig, None, Qwen2_5_VLImageProcessor, None)
  File "/usr/local/lib/python3.12/site-packages/transformers/models/auto/auto_factory.py", line 833, in register
    raise ValueError(f"'{key}' is already used by a Transformers model.")
ValueError: '<class 'sglang.srt.configs.qwen2_5_vl_config.Qwen2_5_VLConfig'>' is already used by a Transformers model.
"""


def _run(text: str, rules):
    return analyze_chunks(iter_chunks(io.BytesIO(text.encode())), Matcher(rules))


def _pin(expr: str, **names):
    return evaluate(compile_expr(expr), names)


def test_sglang_pin_reads_the_release_requirements() -> None:
    assert _pin("sglang_pin('transformers', v)", v="0.5.5") == "4.57.1"
    assert _pin("sglang_pin('torch', v)", v="0.5.5") == "2.8.0"
    assert _pin("sglang_pin('flashinfer_python', v)", v="0.5.5") == "0.5.0"  # a pip spelling
    assert _pin("sglang_pin('torch', v)", v="0.5.10-0.5.10.post1") == "2.9.1"  # one pin over the range


@pytest.mark.parametrize("release", ["0.9.99", "0.5.0rc0-0.5.23", "0.5.10-"])
def test_sglang_pin_does_not_invent_a_value(release: str) -> None:
    # a release the data lacks, a range whose releases disagree, an open range
    with pytest.raises(MissingValue):
        _pin("sglang_pin('torch', v)", v=release)
    with pytest.raises(MissingValue):  # not pinned exactly
        _pin("sglang_pin('numpy', v)", v="0.5.5")


def test_versions_the_log_shows_are_facts(rules) -> None:
    text = CHECK_ENV + "transformers==5.0.0\n" + REGISTERED.replace("site-packages/sglang/", "site-packages/xgrammar/", 1)
    facts = _run(text, rules).context.names()
    assert facts["package.torch"] == "2.9.0+cu128"
    assert facts["package.sgl_kernel"] == "0.3.16.post5"
    assert facts["package.transformers"] == "5.0.0"
    assert facts["package_installed.vllm"] is False  # check_env: Module Not Found
    assert facts["package_installed.xgrammar"] is True  # a site-packages path: present, no version
    assert "package.xgrammar" not in facts
    assert facts["sglang.version"] == "0.5.5"


def _finding(result, rule: str):
    return next(f for f in result.findings if f.rule == rule)


def test_a_dependency_rule_states_the_pin_and_fixes_with_its_value(rules) -> None:
    f = _finding(_run("sglang==0.5.5\ntransformers==5.0.0\n" + REGISTERED, rules), "transformers-config-already-registered")
    assert "SGLang 0.5.5 pins transformers==4.57.1; this log shows transformers 5.0.0." in f.explanation
    fix = next(x for x in f.fixes if x.name == "transformers")
    assert fix.value == "==4.57.1"


def test_without_the_release_no_value_is_given(rules) -> None:
    """Not stated, and not bounded by the frame either: line 99999 of the config module is in no release
    (an edited checkout)."""
    edited = REGISTERED.replace("line 1005,", "line 99999,")
    f = _finding(_run("transformers==5.0.0\n" + edited, rules), "transformers-config-already-registered")
    assert "pins transformers==" not in f.explanation
    assert next(x for x in f.fixes if x.name == "transformers").value is None


def test_a_release_bounded_by_the_frames_gives_the_pin(rules) -> None:
    """The same traceback as released: the releases whose qwen2_5_vl_config.py reaches line 1005 agree on
    the transformers pin (registry/frames.py)."""
    f = _finding(_run("transformers==5.0.0\n" + REGISTERED, rules), "transformers-config-already-registered")
    value = next(x for x in f.fixes if x.name == "transformers").value
    assert value is not None and value.startswith("==") and f"pins transformers{value}" in f.explanation


_HINT_WORDS = ["torch", "TORCH", "Triton", "vllm", "sgl-kernel", "sgl_Kernel", "==", "site-packages/", "lmsysorg/sglang:",
               "Python", "CUDA available", "version", " is ", ": ", "  ", "1.2", "v0.5", "3", "Module Not Found",
               "[2026-05-02 00:00:01 TP0] ", "token usage: 0.04, ", "ſ", "K", "İ", "\t", "-", "."]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_HINT_WORDS), max_size=10).map("".join))
def test_the_hint_prefilter_never_skips_a_line_the_hint_matches(text):
    """`_may_hint` only saves the regex where it cannot match: a version line is never lost."""
    from sglang_doctor.facts.packages import _HINT, _may_hint

    if _HINT.search(text):
        assert _may_hint(text)


def test_the_hint_prefilter_skips_serving_lines():
    from sglang_doctor.facts.packages import _may_hint

    assert not _may_hint("[2026-05-02 00:00:01 DP0 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.04, "
                         "cuda graph: False, gen throughput (token/s): 451.20, #queue-req: 0, ")
    assert _may_hint("[2026-05-02 00:00:01] torch 2.8.0")
