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


# --- CUDA / NCCL result codes (cuda_code, SGD761) ------------------------------------------------

CUDA_FIXTURES = FIXTURES.parent / "cuda-code-recognised"


def _errors(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["severity"] == "error"]


def test_a_cuda_code_no_rule_explains_gets_its_class_fix_and_origin():
    report = _report(CUDA_FIXTURES / "fires-insufficient-driver-flashinfer.log")
    errors = _errors(report)
    assert [f["rule"] for f in errors] == ["cuda-code-recognised"]
    assert errors[0]["origin"] == {"package": "cuda", "name": "cudaErrorInsufficientDriver", "code": 35}
    assert "older than the CUDA runtime library" in errors[0]["explanation"]  # the header's doc comment
    first = errors[0]["fixes"][0]
    assert (first["kind"], first["name"], first["action"]) == ("system", "nvidia-driver", "raise")


def test_a_kernel_fault_gets_the_switches_of_its_subsystem():
    errors = _errors(_report(CUDA_FIXTURES / "fires-launch-failure-in-cuda-graph.log"))
    assert errors[0]["origin"]["name"] == "CUDA_ERROR_LAUNCH_FAILED"
    fixes = [(f["kind"], f.get("flag") or f.get("name"), f.get("action")) for f in errors[0]["fixes"]]
    assert ("env", "CUDA_LAUNCH_BLOCKING", "set") in fixes
    assert ("flag", "--disable-cuda-graph", "add") in fixes  # engine/isolate.py for the cuda-graph frames


def test_out_of_memory_is_left_to_the_memory_rules():
    report = _report(CUDA_FIXTURES / "quiet-out-of-memory-left-to-memory-rules.log")
    assert not any(f["rule"] == "cuda-code-recognised" for f in report["findings"])


def test_an_sglang_check_that_only_passes_a_code_on_gives_way_to_the_code(tmp_path):
    # sglang's checkCudaErrors ("CUDA error {result}(...)") is a catalog message without advice.
    log = tmp_path / "code.log"
    log.write_text(VGQA.replace("ValueError: Variable GQA (VGQA) is not yet supported for nemotron-nas in sglang",
                                "RuntimeError: CUDA error cudaError_t.cudaErrorSystemDriverMismatch(b'system has "
                                "unsupported display driver / cuda driver combination')"))
    errors = _errors(_report(log))
    assert [f["rule"] for f in errors] == ["cuda-code-recognised"]
    assert errors[0]["origin"]["name"] == "cudaErrorSystemDriverMismatch"


def test_every_class_fix_is_a_valid_rule_fix():
    from sglang_doctor.engine.rules import Fix
    from sglang_doctor.registry import cuda_codes

    for name, body in cuda_codes.classes().items():
        for fx in body["fixes"]:
            Fix(**fx)  # raises on a fix the engine cannot render (e.g. a docker fix without its flag)


CUT_CHAIN = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py", line 240, in __init__
    min_per_gpu_memory = self.init_torch_distributed()
RuntimeError: CUDA error: system has unsupported display driver / cuda driver combination

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 2410, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 310, in __init__
"""


def test_a_chain_cut_in_its_second_part_quotes_the_exception_not_the_cut_frame(tmp_path):
    log = tmp_path / "cut.log"
    log.write_text(CUT_CHAIN)
    errors = _errors(_report(log))
    assert [f["rule"] for f in errors] == ["cuda-code-recognised"]
    assert errors[0]["origin"]["name"] == "cudaErrorSystemDriverMismatch"
    assert [(e["line"], e["text"]) for e in errors[0]["evidence"]] == [
        (4, "RuntimeError: CUDA error: system has unsupported display driver / cuda driver combination")]
