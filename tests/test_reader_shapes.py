"""The shapes real logs come in: line prefixes (journald, kubectl, Ray), flattened and escaped pastes,
wrapped exception messages, compressed and truncated files, rotated files in directories, empty and
non-SGLang input."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
from pathlib import Path

import pytest

from helpers_cli import isolate, run
from sglang_doctor.read.flattened import split_flattened
from sglang_doctor.read.reader import clean, iter_lines_from_text, log_files
from sglang_doctor.read.records import segment

DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo" / "qwen3.6-27b-awq-dtype-crash.log"
DEMO_LOG = DEMO.read_text()
SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
INDEX_PUT = ("RuntimeError: Index put requires the source and destination dtypes match, "
             "got BFloat16 for the destination and Half for the source.")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)


def _json(args, input=None):
    r = run(["--format", "json", "--no-baseline", *args], input=input)
    return r, json.loads(r.stdout) if r.stdout.strip().startswith("{") else None


def _prefixed(prefix: str) -> str:
    return "".join(prefix + ln + "\n" for ln in DEMO_LOG.splitlines())


@pytest.mark.parametrize("line, want", [
    ("Mar 03 10:00:00 gpu-host python3[123]: [2025-03-03 10:00:00] Load weight begin.", "[2025-03-03 10:00:00] Load weight begin."),
    ("Mar 18 11:23:46 janus-pro[4711]: Traceback (most recent call last):", "Traceback (most recent call last):"),
    ("Mar  3 09:00:00.123456 host sglang[9]: x", "x"),
    ("2025-03-03T10:00:00+0000 gpu-host python3[123]: [2025-03-03 10:00:00 TP0] x", "[2025-03-03 10:00:00 TP0] x"),
    ("[pod/sgl-0/sglang] 2025-07-25T07:53:08.21748708Z [2025-07-25 07:53:08 TP0] y", "[2025-07-25 07:53:08 TP0] y"),
    ("(SGLangWorker pid=38138) [2025-10-01 10:00:00 TP0] z", "[2025-10-01 10:00:00 TP0] z"),
    ("(WorkerDict pid=209740, ip=10.0.0.2) RuntimeError: boom [repeated 7x across cluster]", "RuntimeError: boom"),
    ("[36m(TaskRunner pid=2947)[0m Traceback (most recent call last):", "Traceback (most recent call last):"),
    ("(pid=12, ip=10.0.0.3)   File \"/x/a.py\", line 3, in f", "  File \"/x/a.py\", line 3, in f"),
], ids=["journald", "journald-no-host", "journald-precise", "journald-iso", "kubectl-prefix-timestamps", "ray-actor",
        "ray-ip-repeated", "ray-lost-escapes", "ray-bare-pid"])
def test_prefixes_are_peeled(line, want):
    assert clean(line) == want


@pytest.mark.parametrize("line", ["Mar 03 10:00:00 a plain sentence", "(raylet) something", "[pod] not kubectl"])
def test_lookalikes_are_kept(line):
    assert clean(line) == line


@pytest.mark.parametrize("prefix", ["Mar 03 10:00:00 gpu-host python3[123]: ", "Mar 18 11:23:46 sglang[4711]: ",
                                    "[pod/sgl-0/sglang] 2025-07-25T07:53:08.21748708Z ", "(SGLangWorker pid=38138) ",
                                    "(WorkerDict pid=209740, ip=10.0.0.2) "],
                         ids=["journald", "journald-no-host", "kubectl", "ray", "ray-ip"])
def test_startup_summary_and_diagnosis_under_prefixes(prefix):
    r, rep = _json(["-"], input=_prefixed(prefix))
    assert rep["findings"][0]["code"] == "SGD401"
    assert rep["startup"]["model"] == "Qwen3_5ForConditionalGeneration"
    assert rep["startup"]["cuda_graph"] == "captured"


def test_a_flattened_traceback_is_split_back_into_records():
    flat = ("[2025-10-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last): "
            f'File "{SITE}/managers/scheduler.py", line 2313, in run_scheduler_process scheduler.event_loop_overlap() '
            f'File "{SITE}/layers/attention/linear/gdn_backend.py", line 438, in forward '
            f"conv_states[idx] = x {INDEX_PUT} "
            "[2025-10-01 10:00:01] Received sigquit from a child process. It usually means the child failed.")
    recs = list(segment(iter_lines_from_text(flat + "\n")))
    tb = [r for r in recs if r.kind == "traceback"]
    assert len(tb) == 1 and len(tb[0].frames) == 2 and tb[0].exception == INDEX_PUT
    assert any("Received sigquit" in r.message for r in recs)
    r, rep = _json(["-"], input=flat + "\n")
    assert rep["findings"][0]["code"] == "SGD401"


def test_a_flattened_ray_paste_keeps_the_source_line_out_of_the_exception():
    flat = ("(SGLangWorker pid=1) Traceback (most recent call last): (SGLangWorker pid=1)   File \"/x/a.py\", line 1, "
            "in f (SGLangWorker pid=1)     foo() (SGLangWorker pid=1) ValueError: x")
    assert split_flattened(flat) == ["Traceback (most recent call last):", '  File "/x/a.py", line 1, in f',
                                     "    foo()", "ValueError: x"]


def test_a_raise_pasted_with_its_exception_is_split():
    line = ("raise RuntimeError( RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method")
    assert split_flattened(line) == ["    raise RuntimeError(", line[len("raise RuntimeError( "):]]


def test_a_multi_line_message_that_is_no_wrap_stays_apart():
    """ptxas's stderr under a PTXASError is more output, not the exception's sentence: not joined."""
    tb = ("Traceback (most recent call last):\n  File \"/x/triton/compiler.py\", line 442, in make_cubin\n"
          "    raise PTXASError(x)\ntriton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
          "`ptxas` stderr:\nptxas /tmp/t.ptx, line 606; error   : Feature '.tile::gather4' not supported on .t\n")
    rec = [r for r in segment(iter_lines_from_text(tb)) if r.kind == "traceback"][0]
    assert rec.joined() is None


@pytest.mark.parametrize("line", [
    "[2025-10-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "[2025-10-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 20, token usage: 0.00, gen throughput (token/s): 1.0",
    'File "config.json" not found in /models/x and File "tokenizer.json" either',
])
def test_ordinary_lines_are_not_split(line):
    assert split_flattened(line) is None


def test_a_traceback_in_an_escaped_string_is_read():
    line = ('[2025-10-01 10:00:50] Initialization failed. warmup error: {"error": "Traceback (most recent call last):'
            '\\n  File \\"' + SITE + '/layers/attention/linear/gdn_backend.py\\", line 438, in forward\\n    x = y\\n'
            + INDEX_PUT + '\\n"}')
    r, rep = _json(["-"], input=line + "\n")
    assert rep["findings"][0]["code"] == "SGD401"


WRAPPED = INDEX_PUT.replace(" got BFloat16", "\ngot BFloat16") + "\n"


def test_a_wrapped_exception_message_is_recognised_by_check_and_explain():
    r, rep = _json(["-"], input=WRAPPED)
    assert rep["findings"][0]["code"] == "SGD401" and rep["findings"][0]["evidence"][0]["line"] == 1
    r = run(["explain", "--format", "json"], input=WRAPPED)
    assert json.loads(r.stdout)["findings"][0]["code"] == "SGD401"
    tb = ("Traceback (most recent call last):\n" f'  File "{SITE}/layers/attention/linear/gdn_backend.py", line 438, '
          "in forward\n    x[i] = y\n" + WRAPPED)
    r, rep = _json(["-"], input=tb)
    assert rep["findings"][0]["code"] == "SGD401" and rep["findings"][0]["evidence"][0]["line"] == 4


def test_a_terminal_cut_mid_word_is_joined_without_a_space():
    r, rep = _json(["-"], input=INDEX_PUT[:80] + "\n" + INDEX_PUT[80:] + "\n")
    assert rep["findings"][0]["code"] == "SGD401"


def test_a_line_after_a_finished_sentence_is_not_a_continuation():
    recs = list(segment(iter_lines_from_text("ValueError: bad value.\nnext thing the log says\n")))
    assert len(recs) == 2


def _compressed(kind: str, data: bytes) -> bytes:
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard")
        return zstandard.ZstdCompressor().compress(data)
    return {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](data)


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zst"])
def test_compressed_files_and_stdin_by_content(tmp_path, kind):
    blob = _compressed(kind, DEMO_LOG.encode())
    p = tmp_path / "launch.log"  # the name says nothing: the magic bytes do
    p.write_bytes(blob)
    r, rep = _json([p])
    assert rep["findings"][0]["code"] == "SGD401"
    r, rep = _json(["-"], input=blob)
    assert rep["findings"][0]["code"] == "SGD401"


def test_a_truncated_archive_is_read_up_to_the_break_with_a_warning(tmp_path):
    tail = "".join(f"[2026-05-02 09:20:{i % 60:02d}] line {i} {i * 7919 % 104729}\n" for i in range(4000))
    blob = gzip.compress((DEMO_LOG + tail).encode())
    p = tmp_path / "cut.log.gz"
    p.write_bytes(blob[: len(blob) * 2 // 3])
    r, rep = _json([p])
    assert r.exit_code == 1 and rep["findings"][0]["code"] == "SGD401"
    assert "truncated" in r.stderr and "read up to the break" in r.stderr


def test_zstd_without_zstandard_is_a_one_line_error(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_zstd(name, *a, **k):
        if name == "zstandard":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_zstd)
    p = tmp_path / "x.log.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    r = run([p])
    assert r.exit_code == 2 and "zstd input needs `pip install zstandard`" in r.stderr


def test_rotated_and_txt_logs_in_a_directory(tmp_path):
    for name in ("server.log", "server.log.1", "server.log.2.gz", "paste.txt", "notes.md", "core.bin"):
        (tmp_path / name).write_bytes(gzip.compress(b"x\n") if name.endswith(".gz") else b"x\n")
    assert [p.name for p in log_files(tmp_path)] == ["paste.txt", "server.log", "server.log.1", "server.log.2.gz"]


@pytest.mark.parametrize("data", [b"", b"\n\n\n", b"\x00" * 1000, b"\r" * 1000, b"\xef\xbb\xbf"])
def test_empty_input_is_exit_2(data):
    r = run(["-"], input=data)
    assert r.exit_code == 2 and "empty input" in r.stderr


def test_text_that_is_not_an_sglang_log_gets_a_warning():
    r = run(["-"], input="Dear diary,\ntoday was a good day.\n")
    assert r.exit_code == 0 and "no SGLang launch found" in r.stderr
    r = run(["-"], input="[2025-10-01 10:00:00] Load weight begin. avail mem=20.00 GB\n")
    assert "no SGLang launch found" not in r.stderr
