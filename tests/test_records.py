from __future__ import annotations

from sglang_doctor.reader import iter_lines_from_text
from sglang_doctor.records import parse_header, segment


def records(text: str):
    return list(segment(iter_lines_from_text(text)))


def test_header_with_ranks_and_ms():
    h = parse_header("[2025-11-10 19:59:09.123 DP1 TP3 EP3] Capture cuda graph end.")
    assert h is not None and h.rank == "DP1 TP3 EP3" and h.message == "Capture cuda graph end."
    assert parse_header("[2025-11-10 19:59:09 DP-1 TP0] x").rank == "DP-1 TP0"
    assert parse_header("2025-09-13 09:09:15 TP0] Decode batch").rank == "TP0"  # pasted without '['
    assert parse_header("no header here") is None


SCHED = """[2025-01-01 10:00:05 TP0] Load weight end. type=X, avail mem=4.21 GB
[2025-01-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/x/scheduler.py", line 10, in run_scheduler_process
    scheduler = Scheduler(
  File "/x/model_runner.py", line 20, in init
    raise RuntimeError(
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.

[2025-01-01 10:00:05] Received sigquit from a child process. It usually means the child failed.
"""


def test_scheduler_traceback_is_one_record():
    recs = records(SCHED)
    kinds = [r.kind for r in recs]
    assert kinds == ["line", "traceback", "line"]
    tb = recs[1]
    assert tb.rank == "TP0" and tb.start == 2 and len(tb.frames) == 2
    assert tb.exception.startswith("RuntimeError: Not enough memory")
    assert recs[2].message.startswith("Received sigquit")


def test_chained_exceptions_stay_in_one_record():
    text = """Traceback (most recent call last):
  File "/x/cpp_extension.py", line 2104, in _run_ninja_build
    subprocess.run(
subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/x/cuda_graph_runner.py", line 267, in __init__
    self.capture()
Exception: Capture cuda graph failed: boom
Possible solutions: lower --cuda-graph-max-bs

next plain line
"""
    recs = records(text)
    assert recs[0].kind == "traceback"
    assert [e.split(":")[0] for e in recs[0].exceptions] == ["subprocess.CalledProcessError", "Exception"]
    assert "Possible solutions" in recs[0].exception  # continuation lines belong to the exception
    assert recs[-1].message == "next plain line"


def test_interleaved_rank_line_does_not_break_traceback():
    text = """[2025-01-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/x/a.py", line 1, in f
[2025-01-01 10:00:05 TP1] Load weight end. type=X, avail mem=4.21 GB
    g()
ValueError: boom
"""
    recs = records(text)
    tb = [r for r in recs if r.kind == "traceback"]
    assert len(tb) == 1 and tb[0].exception == "ValueError: boom"
    assert any(r.rank == "TP1" for r in recs if r.kind == "line")


def test_log_cut_mid_traceback_is_marked_truncated():
    recs = records('Traceback (most recent call last):\n  File "/x/a.py", line 1, in f\n    g()\n')
    assert recs[0].kind == "traceback" and recs[0].truncated and not recs[0].exceptions


def test_pasted_traceback_without_first_line():
    text = 'File "/x/pynccl.py", line 110, in __init__\nself.comm = init()\nRuntimeError: NCCL error: unhandled system error\n'
    recs = records(text)
    assert recs[0].kind == "traceback" and "NCCL error" in recs[0].text


def test_two_tracebacks_two_records():
    one = "Traceback (most recent call last):\n  File \"a\", line 1, in f\nValueError: one\n"
    recs = records(one + one.replace("one", "two"))
    assert [r.exception for r in recs] == ["ValueError: one", "ValueError: two"]


def test_gap_marker_inside_a_pasted_traceback_is_not_the_exception():
    text = ('Traceback (most recent call last):\n  File "/x/a.py", line 1, in f\n    g()\n# [...]\n'
            "ImportError: cannot import name 'awq_dequantize' from 'sgl_kernel'\n")
    recs = records(text)
    assert recs[0].exception == "ImportError: cannot import name 'awq_dequantize' from 'sgl_kernel'"


def test_traceback_pasted_without_indentation_keeps_its_source_lines():
    # sglang#14464 pasted its callstack flush left: source lines are code, not the exception line.
    text = """File "/x/sglang/srt/constrained/reasoner_grammar_backend.py", line 72, in fill_vocab_mask
self.grammar.fill_vocab_mask(vocab_mask, idx)
File "/x/sglang/srt/constrained/xgrammar_backend.py", line 100, in fill_vocab_mask
self.matcher.fill_next_token_bitmask(vocab_mask, idx)
^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: Check failed: GrammarMatcher has terminated
"""
    recs = records(text)
    assert [r.kind for r in recs] == ["traceback"]
    assert len(recs[0].frames) == 2
    assert recs[0].exceptions == ["RuntimeError: Check failed: GrammarMatcher has terminated"]


def test_bare_exception_right_after_a_frame_is_still_the_exception():
    recs = records('  File "/x/a.py", line 3, in f\nAssertionError\n')
    assert recs[0].exceptions == ["AssertionError"]


def test_exception_pasted_above_a_cut_traceback_is_its_exception() -> None:
    # "TypeError: ..." first, then the traceback, cut before its own exception line.
    recs = records("TypeError: object of type 'NoneType' has no len()\n\nTraceback (most recent call last):\n"
                   'File "sglang/srt/managers/scheduler.py", line 10, in run\nscheduler.run()\n'
                   'File "sglang/srt/mem_cache/unified_radix_cache.py", line 22, in init_load_back\n'
                   "if self.load_back(node):\n")
    tb = [r for r in recs if r.kind == "traceback"][0]
    assert tb.truncated and tb.exception == "TypeError: object of type 'NoneType' has no len()"
    assert len(tb.frames) == 2


def test_exception_line_far_above_a_traceback_is_not_borrowed() -> None:
    recs = records("ValueError: an earlier failure\nsome other line\nTraceback (most recent call last):\n"
                   '  File "/x/a.py", line 1, in f\n    g()\n')
    tb = [r for r in recs if r.kind == "traceback"][0]
    assert tb.truncated and tb.exceptions == []
