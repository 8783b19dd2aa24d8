from __future__ import annotations

import gzip
import io

import pytest

from sglang_doctor.read.reader import InputError, clean, iter_lines, iter_lines_from_binary


def lines_of(data: bytes) -> list[tuple[int, str]]:
    return [(ln.number, ln.text) for ln in iter_lines_from_binary(io.BytesIO(data))]


def test_invalid_utf8_is_replaced_not_fatal():
    out = lines_of(b"ok\n\xff\xfe bad \xc3\n")
    assert out[0] == (1, "ok")
    assert "bad" in out[1][1] and "\ufffd" in out[1][1]


def test_ansi_and_crlf_are_stripped():
    out = lines_of(b"\x1b[1;33mdeprecated\x1b[0m\r\nplain\r\n")
    assert out == [(1, "deprecated"), (2, "plain")]


def test_tqdm_carriage_return_keeps_last_state():
    assert clean("Capturing  10%\rCapturing  50%\rCapturing 100%") == "Capturing 100%"


@pytest.mark.parametrize("prefix", [
    "2025-06-10T14:02:11.123456789Z ",
    "2025-07-25T07:53:08.21748708+08:00 stdout F ",  # Kubernetes CRI log file
    "sglang-1  | ",
    "[pod/sglang-0/server] ",
    "(SchedulerActor pid=1234) ",
    "sglang-1  | 2025-06-10T14:02:11.123456789Z ",
    "ERROR 2025-04-05T00:01:19.209237575Z ",  # a cloud log viewer's export (sglang#5096's paste)
    "INFO 2025-04-05T00:01:19Z ",
])
def test_container_prefixes_are_peeled(prefix):
    assert clean(prefix + "[2025-06-10 14:02:11 TP0] Load weight begin.") == "[2025-06-10 14:02:11 TP0] Load weight begin."


def test_a_severity_word_alone_is_not_a_prefix():
    assert clean("ERROR 2025 was a bad year") == "ERROR 2025 was a bad year"
    assert clean("INFO:     127.0.0.1:41710 - \"GET /health HTTP/1.1\" 200 OK").startswith("INFO:")


def test_line_numbers_survive_chunk_boundaries(monkeypatch):
    import sglang_doctor.read.reader as reader

    monkeypatch.setattr(reader, "CHUNK_SIZE", 7)
    data = "".join(f"line {i}\n" for i in range(1, 51)).encode()
    out = lines_of(data)
    assert len(out) == 50 and out[-1] == (50, "line 50")
    # a multi-byte character split across chunks decodes whole
    out = lines_of(("é" * 20 + "\n").encode())
    assert out == [(1, "é" * 20)]


def test_giant_line_is_cut_without_growing(monkeypatch):
    import sglang_doctor.read.reader as reader

    monkeypatch.setattr(reader, "CHUNK_SIZE", 1024)
    data = b"x" * 300_000 + b"\nafter\n"
    out = lines_of(data)
    assert len(out[0][1]) <= reader.MAX_LINE_CHARS + 1024
    assert out[1] == (2, "after")


def test_no_trailing_newline():
    assert lines_of(b"a\nb") == [(1, "a"), (2, "b")]


def test_gzip_is_read_transparently(tmp_path):
    p = tmp_path / "x.log.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(b"hello\nworld\n")
    assert [ln.text for ln in iter_lines(str(p))] == ["hello", "world"]


def test_missing_file_and_directory_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        list(iter_lines(str(tmp_path / "nope.log")))
    with pytest.raises(InputError, match="is a directory"):
        list(iter_lines(str(tmp_path)))


def test_line_hard_wrapped_at_1000_characters_is_joined() -> None:
    # Stored copies of issue threads cut long lines into 1000-character pieces ("sm_1" / "20'").
    head = "x" * 995 + " sm_1"
    assert len(head) == 1000
    out = lines_of((head + "\n20' is not defined\nnext line\n").encode())
    assert out == [(1, head + "20' is not defined"), (2, ""), (3, "next line")]


def test_1000_character_line_before_a_new_log_line_or_blank_stays_alone() -> None:
    head = "y" * 1000
    out = lines_of((head + "\n[2025-01-01 10:00:00 TP0] Load weight begin.\n" + head + "\n\nz\n").encode())
    assert [n for n, _ in out] == [1, 2, 3, 4, 5]
    assert out[0][1] == head and out[2][1] == head and out[3][1] == ""


def test_lines_of_other_lengths_are_never_joined() -> None:
    out = lines_of(("a" * 999 + "\nb\n" + "c" * 1001 + "\nd\n").encode())
    assert [t for _, t in out] == ["a" * 999, "b", "c" * 1001, "d"]


def test_markdown_bold_dunder_of_a_pasted_frame_is_restored() -> None:
    assert clean('File "/x/cuda_graph_runner.py", line 338, in **init** (pid=1) raise') == \
        'File "/x/cuda_graph_runner.py", line 338, in __init__ (pid=1) raise'
    assert clean('File "/x/quantization/**init**.py", line 9, in <module>') == \
        'File "/x/quantization/__init__.py", line 9, in <module>'
    assert clean("**Note**: bold prose stays") == "**Note**: bold prose stays"


def test_markdown_quote_marks_of_a_quoted_log_are_peeled() -> None:
    assert clean("> [2025-09-18 03:27:45 DP1 TP0] Scheduler hit an exception: Traceback") == \
        "[2025-09-18 03:27:45 DP1 TP0] Scheduler hit an exception: Traceback"
    assert clean("> > RuntimeError: boom") == "RuntimeError: boom"
    assert clean(">") == ">"
    assert clean('>   File "/x/decode_cuda_graph_runner.py", line 350, in __init__') == \
        '  File "/x/decode_cuda_graph_runner.py", line 350, in __init__'  # its own indentation kept
    assert clean(">     self.capture()") == "    self.capture()"


def test_a_quoted_log_is_diagnosed_like_the_log(tmp_path) -> None:
    """Frame patterns read a `> `-quoted copy too: the same findings and fixes as the log itself."""
    from pathlib import Path

    from sglang_doctor.engine.rules import load_rules
    from sglang_doctor.pipeline.run import diagnose

    log = (Path(__file__).resolve().parent.parent / "sglang_doctor" / "rules" / "memory" /
           "cuda-oom-cuda-graph-capture" / "fires-0.5.14-decode-runner.log").read_text()
    quoted = "".join("> " + ln for ln in log.splitlines(keepends=True))
    rules = load_rules()

    def diagnosis(text: str) -> list[tuple[str, list[str | None]]]:
        rep = diagnose(["x.log"], rules, texts={"x.log": text}).report
        return [(f.code, [x.flag for x in f.fixes]) for f in rep.findings]

    assert diagnosis(quoted) == diagnosis(log)
    assert diagnosis(log)[0][1][0] == "--cuda-graph-max-bs-decode"  # read off the decode runner's frame


@pytest.mark.parametrize("line", ["```", "```python", "```log", "> ```", "~~~", "<details>", "</details>",
                                  "<summary>Full log</summary>", "<pre>", "  ```  "])
def test_markdown_and_html_furniture_reads_as_a_blank_line(line):
    assert clean(line) == ""


@pytest.mark.parametrize("line", ["`x` is unset", "~/models/qwen", "<frozen runpy>", "<details><summary>x</summary> log",
                                  "           ~~~~~~^^^", "```python print(1)"])
def test_text_that_only_starts_like_furniture_is_kept(line):
    assert clean(line) == line
