from __future__ import annotations

import re
from pathlib import Path

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sglang_doctor.read.reader import iter_lines_from_text
from sglang_doctor.read.records import frame_of, parse_header, segment, ts_seconds

DATA = Path(__file__).resolve().parent / "data"
STRICT_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')


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


# --- frame lines as people paste them ----------------------------------------------------------

TB_END = '    raise ValueError("x")\nValueError: Unsupported compute capability: 12.0\n'


@pytest.mark.parametrize("frame, read", [
    ('  File "/x/sglang/srt/multiplex/pdmux_context.py", line 57, in get_arch_constraints',
     'File "/x/sglang/srt/multiplex/pdmux_context.py", line 57, in get_arch_constraints'),
    # sglang#32933 pasted its frame without the line number
    ('  File "/x/sglang/srt/multiplex/pdmux_context.py", in get_arch_constraints',
     'File "/x/sglang/srt/multiplex/pdmux_context.py", line 0, in get_arch_constraints'),
    ('  File "/x/a.py", line ?, in f', 'File "/x/a.py", line 0, in f'),
    ('  File "/x/a.py", line ?', 'File "/x/a.py", line 0, in ?'),
    ('  File "C:\\Users\\me\\sglang\\srt\\a.py", line 3, in f', 'File "C:/Users/me/sglang/srt/a.py", line 3, in f'),
    ('  File "C:\\Users\\me\\a.py", in <module>', 'File "C:/Users/me/a.py", line 0, in <module>'),
    ('File "/x/a.pyx", line 12, in sglang.srt.a.f', 'File "/x/a.pyx", line 12, in sglang.srt.a.f'),
    ('  File "<frozen runpy>", line 198, in _run_module_as_main', 'File "<frozen runpy>", line 198, in _run_module_as_main'),
])
def test_frame_shapes_are_read_as_frames(frame: str, read: str) -> None:
    assert frame_of(frame) == read
    for text in (f"Traceback (most recent call last):\n{frame}\n{TB_END}", f"{frame}\n{TB_END}"):
        (rec,) = records(text)
        assert rec.kind == "traceback" and rec.frames == [read]
        assert rec.exception == "ValueError: Unsupported compute capability: 12.0"


@pytest.mark.parametrize("line", [
    'File "/models/Qwen3-8B/config.json" not found',
    '  File "/x/a.py", in f and then some words',
    '  File "/x/a.py"',
    'File "a.py", in',
    'Saving to File "/tmp/a.py", line 3, in f',
    # a real frame its issue's stored copy cut mid-path: no closing quote, no frame
    '  File "/home/user/miniconda3/envs/sglang2/lib/python3.10/site-packages/sglang/srt/model_executor/model_runner',
    '[2025-01-01 10:00:00 TP0] File "/x/a.py", line 3, in f',
])
def test_lines_that_only_mention_a_file_are_not_frames(line: str) -> None:
    assert frame_of(line) is None
    assert all(r.kind == "line" for r in records(line + "\nnext line\n"))


def test_ordinary_log_lines_never_become_frames() -> None:
    # Over every shipped log, the lenient frame shapes accept only the frames that lost their line
    # number (302's), nothing the strict `File "…", line N` shape would not.
    extra = []
    for path in [*DATA.glob("real/*.log"), *DATA.glob("healthy/*.log")]:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if frame_of(line) is not None and not STRICT_FRAME.match(line):
                extra.append((path.name, line.strip()))
    assert extra == [("302-pdmux-unsupported-compute-capability.log",
                      'File "/opt/conda/lib/python3.12/site-packages/sglang/srt/multiplex/pdmux_context.py", '
                      "in get_arch_constraints")]


def test_frame_without_line_number_is_quoted_as_logged_and_read_canonically() -> None:
    (rec,) = records('Traceback (most recent call last):\n  File "/x/a.py", in f\n    g()\nValueError: boom\n')
    assert rec.lines[1].text == '  File "/x/a.py", in f'
    assert '\n  File "/x/a.py", line 0, in f\n' in rec.text


def test_rank_tagged_traceback_is_one_record_read_without_its_tags() -> None:
    # torchrun / elastic put "[rank0]: " before every line a rank prints (sglang#851's paste).
    text = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/x/transformer_engine/pytorch/cpp_extensions/__init__.py", line 6, in <module>\n'
            "[rank0]:     from transformer_engine_extensions import *\n"
            "[rank0]: ImportError: /x/transformer_engine_extensions.so: undefined symbol: _ZN2at4_ops5zeros\n")
    (rec,) = records(text)
    assert rec.kind == "traceback" and len(rec.frames) == 1
    assert rec.exception == "ImportError: /x/transformer_engine_extensions.so: undefined symbol: _ZN2at4_ops5zeros"
    assert "[rank0]" not in rec.text and rec.lines[1].text.startswith("[rank0]:   File")


def test_another_ranks_tagged_line_inside_a_traceback_stands_alone() -> None:
    text = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/x/a.py", line 6, in f\n'
            '[rank1]:   File "/x/b.py", line 7, in g\n'
            "[rank0]:     g()\n"
            "[rank0]: ValueError: boom\n")
    recs = records(text)
    tb = [r for r in recs if r.kind == "traceback"]
    assert len(tb) == 1 and tb[0].frames == ['File "/x/a.py", line 6, in f'] and tb[0].exception == "ValueError: boom"
    assert [r.start for r in recs if r.kind == "line"] == [3]


def test_c10_log_line_with_a_rank_tag_is_not_peeled() -> None:
    (rec,) = records("[rank1]:[E0502 09:24:33.512345678 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught\n")
    assert rec.message.startswith("[rank1]:[E0502")


@pytest.mark.parametrize("marker", ["  [Previous line repeated 996 more times]", "[Previous line repeated 2 more times]"])
def test_frames_after_the_recursion_marker_stay_in_the_traceback(marker: str) -> None:
    text = (f'Traceback (most recent call last):\nFile "/x/a.py", line 6, in f\nf()\n{marker}\n'
            'File "/x/b.py", line 7, in g\nh()\nRecursionError: maximum recursion depth exceeded\n')
    (rec,) = records(text)
    assert len(rec.frames) == 2 and rec.exception == "RecursionError: maximum recursion depth exceeded"


@pytest.mark.parametrize("indent", ["", "           "])
def test_python_311_position_markers_are_part_of_the_frame(indent: str) -> None:
    text = (f'Traceback (most recent call last):\n  File "/x/a.py", line 6, in f\n    return self.x[i]\n'
            f'{indent}~~~~~~^^^\n  File "/x/b.py", line 7, in g\n    h()\n    ^^^\nIndexError: list index out of range\n')
    (rec,) = records(text)
    assert len(rec.frames) == 2 and rec.exceptions == ["IndexError: list index out of range"]


def test_flush_left_re_raise_is_a_source_line() -> None:
    (rec,) = records('File "/x/a.py", line 6, in f\nraise\nValueError: boom\n')
    assert rec.exceptions == ["ValueError: boom"]


@pytest.mark.parametrize("head", ["Exception in thread Thread-2 (worker):", "Exception in thread Thread-2:"])
def test_thread_report_is_one_traceback_with_its_head(head: str) -> None:
    text = (f'{head}\nTraceback (most recent call last):\n'
            '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n    self.run()\n'
            "RuntimeError: boom\n")
    (rec,) = records(text)
    assert rec.kind == "traceback" and rec.message.startswith("Exception in thread")
    assert len(rec.frames) == 1 and rec.exception == "RuntimeError: boom"


def test_thread_head_without_a_traceback_stays_a_line() -> None:
    recs = records("Exception in thread Thread-2:\nsome other line\n")
    assert [(r.kind, r.message) for r in recs] == [("line", "Exception in thread Thread-2:"), ("line", "some other line")]


def test_a_new_exception_report_closes_the_exception_before_it() -> None:
    text = ('Traceback (most recent call last):\n  File "/x/a.py", line 1, in f\nValueError: one\n'
            "Exception in thread Thread-1:\nTraceback (most recent call last):\n"
            '  File "/x/b.py", line 2, in g\nRuntimeError: two\n')
    assert [r.exceptions for r in records(text)] == [["ValueError: one"], ["RuntimeError: two"]]


# --- an exception line and its continuation lines --------------------------------------------


@pytest.mark.parametrize("continuation", [
    "/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:350",  # sglang#11957
    "./csrc/allreduce/custom_all_reduce.cuh:350:7",
    "C:\\src\\kernel.cu:12",
    "  while capturing the graph",
    "at /pytorch/aten/src/ATen/native/cuda/Indexing.cu:1289",
    "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f in /x/libc10.so)",
])
def test_bare_exception_line_keeps_its_continuation(continuation: str) -> None:
    recs = records(f"torch.ops.sgl_kernel.get_graph_buffer_ipc_meta.default(fa)\nRuntimeError: invalid argument\n"
                   f"{continuation}\nnext record\n")
    assert [(r.start, r.end) for r in recs] == [(1, 1), (2, 3), (4, 4)]
    assert recs[1].text == f"RuntimeError: invalid argument\n{continuation}"


@pytest.mark.parametrize("nxt", [
    # real lines of the corpus that follow an error and are records of their own
    "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is deprecated.",
    "/sgl-workspace/sglang/python/sglang/srt/layers/moe/ep_moe/kernels.py:606:42: error: Unsupported conversion",
    "/home/user/venv/bin/python: error while loading shared libraries: libcudart.so.13: cannot open shared object",
    "[2025-01-01 10:00:05] Received sigquit from a child process. It usually means the child failed.",
    "[rank1]:[E0502 09:24:33.512345678 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation timeout",
    "Received sigquit from a child process. It usually means the child failed.",
    "Traceback (most recent call last):",
    '  File "/x/a.py", line 1, in f',
    "",
])
def test_bare_exception_line_does_not_take_a_new_record(nxt: str) -> None:
    recs = records(f"RuntimeError: invalid argument\n{nxt}\n")
    assert (recs[0].start, recs[0].end, recs[0].text) == (1, 1, "RuntimeError: invalid argument")


def test_exception_pasted_above_its_traceback_is_still_its_prelude() -> None:
    recs = records("TypeError: object of type 'NoneType' has no len()\n"
                   '  File "/x/sglang/srt/a.py", line 10, in run\n    scheduler.run()\n')
    tb = recs[-1]
    assert tb.kind == "traceback" and tb.truncated and tb.exception.startswith("TypeError")


def test_traceback_exception_keeps_a_kernel_location_continuation() -> None:
    (rec,) = records('Traceback (most recent call last):\n  File "/x/custom_all_reduce.py", line 3, in capture\n'
                     "RuntimeError: invalid argument\n/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:350\n")
    assert rec.exception == "RuntimeError: invalid argument\n/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:350"


def test_shipped_healthy_logs_have_no_exception_with_continuation_lines() -> None:
    for path in DATA.glob("healthy/*.log"):
        recs = records(path.read_text(encoding="utf-8", errors="replace"))
        assert not [r.start for r in recs if r.kind == "line" and len(r.lines) > 1], path.name


def test_exception_pasted_above_a_gap_marker_and_its_traceback_is_its_prelude() -> None:
    # the error first, an excerpt marker, then the cut traceback (702's shape)
    recs = records("torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\n"
                   "# [...]\n"
                   'File ".../sglang/srt/layers/rotary_embedding.py", line 210, in _ensure_cos_sin_cache_length\n'
                   "    t_new = torch.arange(start, new_len, device=device)\n")
    tb = recs[-1]
    assert tb.kind == "traceback" and tb.truncated and tb.exception.startswith("torch.AcceleratorError")


# --- tracebacks pasted indented, faulthandler's stacks -----------------------------------------


def test_indented_exception_line_under_the_last_frame_is_the_exception() -> None:
    # the excerpt's last frames and the exception line indented by two more spaces (930's shape)
    text = ('  File "/w/sglang/srt/managers/scheduler.py", line 3918, in run_scheduler_process\n'
            "    scheduler = Scheduler(\n"
            "# [...]\n"
            '  File "/w/sglang/srt/layers/quantization/fp8.py", line 350, in validate_block_quant_shapes\n'
            "      raise ValueError(\n"
            "  ValueError: Weight output_partition_size = 320 is not divisible by weight quantization block_n = 128.\n")
    (rec,) = records(text)
    assert not rec.truncated and len(rec.frames) == 2
    assert rec.exceptions == ["ValueError: Weight output_partition_size = 320 is not divisible by weight "
                              "quantization block_n = 128."]


def test_indented_source_line_that_is_not_an_exception_leaves_the_traceback_cut() -> None:
    (rec,) = records('  File "/x/a.py", line 3, in f\n    raise ValueError(msg)\n')
    assert rec.truncated and rec.exceptions == []


FAULTHANDLER = """Fatal Python error: Aborted

Thread 0x00007fe473fff640 (most recent call first):
  File "/usr/local/lib/python3.10/dist-packages/xgrammar/compiler.py", line 135 in compile_json_schema
  File "/sgl-workspace/sglang/python/sglang/srt/constrained/xgrammar_backend.py", line 182 in dispatch_json

Current thread 0x00007f3b8c9f5740 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 324 in wait
  <no Python frame>

Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)
./run.sh: line 19: 867080 Aborted (core dumped) python -m sglang.launch_server
"""


def test_faulthandler_report_is_one_record_with_its_stacks() -> None:
    recs = records(FAULTHANDLER)
    assert [r.kind for r in recs] == ["traceback", "line"]
    dump = recs[0]
    assert dump.exceptions == ["Fatal Python error: Aborted"] and not dump.truncated
    assert dump.frames[1] == ('File "/sgl-workspace/sglang/python/sglang/srt/constrained/xgrammar_backend.py", '
                              "line 182, in dispatch_json")
    assert len(dump.frames) == 3 and recs[1].message.startswith("./run.sh")


def test_faulthandler_line_without_stacks_stands_alone() -> None:
    recs = records("Fatal Python error: Segmentation fault\n[2025-01-01 10:00:00 TP0] Scheduler hit an exception: "
                   'Traceback (most recent call last):\n  File "/x/a.py", line 1, in f\nValueError: boom\n')
    assert [(r.kind, r.exceptions) for r in recs] == [("traceback", ["Fatal Python error: Segmentation fault"]),
                                                       ("traceback", ["ValueError: boom"])]


def test_a_base_class_exception_line_is_an_exception_line() -> None:
    # SGLang raises plain `Exception(...)` ("Capture cuda graph failed: …"): a name that is only "Exception"
    recs = records("Exception: Capture cuda graph failed: boom\n  while capturing batch size 8\n"
                   'Traceback (most recent call last):\n  File "/x/a.py", line 1, in f\n')
    assert (recs[0].start, recs[0].end) == (1, 2)
    assert recs[1].kind == "traceback" and recs[1].exception == "Exception: Capture cuda graph failed: boom"
    assert records("Error: no such container\nTraceback (most recent call last):\n")[1].exceptions == []


def test_code_fences_inside_a_pasted_traceback_do_not_split_it() -> None:
    # A traceback pasted in two code blocks: the fences between them are paste furniture.
    text = ('Traceback (most recent call last):\n  File "/x/a.py", line 1, in f\n    g()\n```\n\n```python\n'
            '  File "/x/b.py", line 2, in g\nValueError: boom\n```\n')
    (rec,) = [r for r in records(text) if r.kind == "traceback"]
    assert len(rec.frames) == 2 and rec.exceptions == ["ValueError: boom"]


@settings(max_examples=400, deadline=None)
@given(st.datetimes(min_value=datetime(1, 3, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)), st.booleans())
def test_log_times_count_seconds_as_datetime_does(when, iso_t):
    """ts_seconds (no datetime import on a run) against datetime's own arithmetic, leap days included."""
    text = when.strftime("%Y-%m-%dT%H:%M:%S.%f" if iso_t else "%Y-%m-%d %H:%M:%S").rjust(19, "0")
    if when.year < 1000:
        text = f"{when.year:04d}" + text[text.index("-"):]
    epoch = datetime(1, 3, 1)
    assert ts_seconds(text) - ts_seconds("0001-03-01 00:00:00") == int((when.replace(microsecond=0) - epoch).total_seconds())


@pytest.mark.parametrize("text", ["2025-02-29 00:00:00", "2024-13-01 00:00:00", "2024-04-31 10:00:00",
                                  "2024-01-01 24:00:00", "2024-01-01 10:60:00", "2024-01-01 1a:00:00", "2024-01-01",
                                  "0000-01-01 00:00:00", "2024/01/01 10:00:00", "２０２４-01-01 10:00:00"])
def test_what_is_not_a_date_and_time_is_a_value_error(text):
    with pytest.raises(ValueError):
        ts_seconds(text)
