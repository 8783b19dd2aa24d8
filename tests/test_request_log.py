"""Request logging (`--log-requests`) is user data: no rule ever reads a request or its answer."""

from __future__ import annotations

import json

import pytest

from helpers_cli import isolate, run
from sglang_doctor.read.reader import iter_lines_from_text
from sglang_doctor.read.records import segment
from sglang_doctor.read.request_log import is_request_echo

# A healthy launch: what follows the ready line is a served request.
_START = (
    "[2026-05-02 09:14:00] server_args=ServerArgs(model_path='/models/Qwen3-8B', mem_fraction_static=0.79, "
    "tp_size=1, port=30000)\n"
    "[2026-05-02 09:14:10 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=60.12 GB, "
    "mem usage=15.27 GB.\n"
    "[2026-05-02 09:14:12] The server is fired up and ready to roll!\n"
)
# What the answers quote: errors several rules know (SGD101, SGD120, SGD520, SGD711, SGD401).
_ANSWER = (
    "Traceback (most recent call last):\n  File \"/sgl-workspace/sglang/python/sglang/srt/model_executor/"
    "model_runner.py\", line 1020, in init_memory_pool\n    raise RuntimeError(\nRuntimeError: Not enough memory. "
    "Please try to increase --mem-fraction-static.\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "23.55 GiB of which 1.02 GiB is free.\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use\n"
    "RuntimeError: Index put requires the source and destination dtypes match, got BFloat16 for the destination "
    "and Half for the source."
)


def _text_format() -> str:
    """The text shapes: 0.4.0's `in=…, out=…`, `Receive:` / `Finish:` (0.4.1 on), `Receive OpenAI:`."""
    obj = f"GenerateReqInput(text={_ANSWER!r}, sampling_params={{'max_new_tokens': 64}}, rid='a1')"
    out = {"text": _ANSWER, "meta_info": {"id": "a1", "finish_reason": {"type": "length", "length": 64},
                                          "prompt_tokens": 12, "completion_tokens": 64, "e2e_latency": 1.2}}
    return (f"[2026-05-02 09:15:00] Receive: obj={obj}\n"
            f"[2026-05-02 09:15:00] Receive OpenAI: obj={{'messages': [{{'role': 'user', 'content': {_ANSWER!r}}}]}}\n"
            f"[2026-05-02 09:15:02] Finish: obj={obj}, headers={{'x-request-id': 'a1'}}, out={out}\n"
            f"[2026-05-02 09:15:03] in={obj}, out={out}\n"
            f"Finish: obj={obj}, out={out}\n")  # its header cut off when pasted


def _json_format() -> str:
    """`--log-requests-format json` (utils/log_utils.py log_json) under the request logger's header."""
    lines = []
    for event, extra in (("request.received", {}), ("request.received.openai", {}),
                         ("request.finished", {"out": {"text": _ANSWER, "meta_info": {"id": "a1"}}})):
        data = {"timestamp": "2026-05-02T09:15:00.123456", "event": event, "rid": "a1",
                "obj": {"text": _ANSWER, "sampling_params": {"max_new_tokens": 64}}, **extra}
        lines.append(f"[2026-05-02 09:15:02] {json.dumps(data, ensure_ascii=False)}")
    lines.append(json.dumps({"timestamp": "2026-05-02T09:15:05.5", "event": "scheduler.status", "rank": 0,
                             "running_rids": [], "queued_rids": []}))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("body", [_text_format(), _json_format(), (_text_format() + _json_format()) * 60],
                         ids=["text", "json", "both-past-256KB"])  # (the last on the scanner's fast path)
def test_request_bodies_never_give_a_finding(body: str, tmp_path, monkeypatch) -> None:
    isolate(tmp_path, monkeypatch)
    log = tmp_path / "serving.log"
    log.write_text(_START + body + "[2026-05-02 09:15:03] INFO:     127.0.0.1:53412 - \"POST /generate HTTP/1.1\" 200 OK\n")
    res = run(["--format", "json", log])
    report = json.loads(res.stdout)
    assert report["findings"] == [], [f["code"] for f in report["findings"]]
    assert res.exit_code == 0
    assert "exception.first" not in report["context"]  # no fact is read off a request either


def test_a_real_crash_after_request_lines_is_still_found(tmp_path, monkeypatch) -> None:
    isolate(tmp_path, monkeypatch)
    log = tmp_path / "serving.log"
    crash = ("[2026-05-02 09:16:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
             "  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 2302, in run_scheduler_process\n"
             "    scheduler.event_loop_overlap()\n"
             "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    log.write_text(_START + _text_format() + crash)
    report = json.loads(run(["--format", "json", log]).stdout)
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == ["SGD520"]
    assert report["findings"][0]["evidence"][0]["line"] == len((_START + _text_format()).splitlines()) + 4


def test_request_line_ends_an_open_traceback_and_is_no_record() -> None:
    text = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nValueError: boom\n"
            "[2026-05-02 09:15:02] Finish: obj=GenerateReqInput(text='RuntimeError: x'), out={'text': 'y'}\n"
            "[2026-05-02 09:15:03] next line\n")
    records = list(segment(iter_lines_from_text(text)))
    assert [r.kind for r in records] == ["traceback", "line"]
    assert records[0].exceptions == ["ValueError: boom"] and records[1].message == "next line"


@pytest.mark.parametrize("message, echo", [
    ("Receive: obj=GenerateReqInput(text='x')", True),
    ("Finish: obj=EmbeddingReqInput(text='x'), out={}", True),
    ("Receive OpenAI: obj={'model': 'x'}", True),
    ("in=GenerateReqInput(text='x'), out={'text': 'y'}", True),
    ('{"timestamp": "2026-05-02T09:15:00.1", "event": "request.finished", "rid": "a"}', True),
    ("Finished loading weights", False),
    ("Receive data from the detokenizer failed: RuntimeError: x", False),
    ('{"error": "RuntimeError: x"}', False),
    ("in=3 out=4", False),
])
def test_request_echo_shapes(message: str, echo: bool) -> None:
    assert is_request_echo(message) is echo
