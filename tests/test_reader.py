from __future__ import annotations

import gzip
import io

import pytest

from sglang_doctor.reader import InputError, clean, iter_lines, iter_lines_from_binary


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
])
def test_container_prefixes_are_peeled(prefix):
    assert clean(prefix + "[2025-06-10 14:02:11 TP0] Load weight begin.") == "[2025-06-10 14:02:11 TP0] Load weight begin."


def test_line_numbers_survive_chunk_boundaries(monkeypatch):
    import sglang_doctor.reader as reader

    monkeypatch.setattr(reader, "CHUNK_SIZE", 7)
    data = "".join(f"line {i}\n" for i in range(1, 51)).encode()
    out = lines_of(data)
    assert len(out) == 50 and out[-1] == (50, "line 50")
    # a multi-byte character split across chunks decodes whole
    out = lines_of(("é" * 20 + "\n").encode())
    assert out == [(1, "é" * 20)]


def test_giant_line_is_cut_without_growing(monkeypatch):
    import sglang_doctor.reader as reader

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
