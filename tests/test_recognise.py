"""The catalog recognisers (engine/recognise.py): a failure that is one of SGLang's own messages."""

from __future__ import annotations

import json
from pathlib import Path

from helpers_cli import run

from sglang_doctor.engine.recognise import advice_fixes
from sglang_doctor.registry import messages

FIXTURES = Path(__file__).resolve().parent.parent / "sglang_doctor" / "rules" / "process" / "sglang-message-recognised"

VGQA = """\
[2025-10-01 10:00:00] server_args=ServerArgs(model_path='nvidia/Llama-3_3-Nemotron-Super-49B-v1', tp_size=2)
[2025-10-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
ValueError: Variable GQA (VGQA) is not yet supported for nemotron-nas in sglang
"""


def _report(path: Path) -> dict:
    res = run(["--format", "json", "--no-baseline", str(path)])
    return json.loads(res.output)


def test_unexplained_sglang_message_names_its_check_with_origin():
    report = _report(FIXTURES / "fires-message-without-rule.log")
    root = next(f for f in report["findings"] if f["severity"] == "error")
    assert root["rule"] == "sglang-message-recognised"
    assert root["origin"]["package"] == "sglang"
    assert root["origin"]["file"] == "srt/model_executor/model_runner.py"
    assert root["origin"]["function"] == "ModelRunner.__init__"
    assert root["origin"]["line"] > 0 and root["origin"]["releases"]
    # the generic "no rule for this exception" finding follows it instead of being a second error
    assert [f["rule"] for f in report["findings"] if f["severity"] == "error"] == ["sglang-message-recognised"]


def test_a_generic_rule_on_the_same_line_takes_the_origin(tmp_path):
    log = tmp_path / "vgqa.log"
    log.write_text(VGQA)
    report = _report(log)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [f["rule"] for f in errors] == ["feature-not-supported"]
    assert errors[0]["origin"]["function"] == "ModelConfig.get_total_num_kv_heads"


def test_explained_launch_loads_no_catalog(monkeypatch):
    # A launch a specific rule explains never runs the recognisers (late_findings).
    called = []
    monkeypatch.setattr(messages, "load", lambda *a, **k: called.append(1) or (_ for _ in ()).throw(AssertionError))
    report = _report(FIXTURES.parent / "crash-unrecognized" / "quiet-known-exception.log")
    assert any(f["severity"] == "error" for f in report["findings"]) and not called


def test_advice_becomes_fixes_spelled_for_the_release():
    entry = messages.lookup("Capture cuda graph failed: CUDA error: out of memory")[0]
    old = [(f["flag"], f["action"]) for f in advice_fixes(entry.advice, entry.flags, "0.5.13.post1", entry.template)]
    assert old[:4] == [("--mem-fraction-static", "lower"), ("--cuda-graph-max-bs", "lower"),
                       ("--enable-torch-compile", "remove"), ("--disable-cuda-graph", "add")]
    new = [(f["flag"], f["action"], f["value"]) for f in advice_fixes(entry.advice, entry.flags, "0.5.23", entry.template)]
    assert ("--cuda-graph-max-bs-decode", "lower", None) in new
    assert ("--cuda-graph-backend-decode", "set", "disabled") in new


def test_a_sentence_without_numbered_advice_gives_the_direction():
    fixes = advice_fixes((), ("--mem-fraction-static",), None, "Not enough memory. Please try to increase --mem-fraction-static.")
    assert [(f["flag"], f["action"]) for f in fixes] == [("--mem-fraction-static", "raise")]
