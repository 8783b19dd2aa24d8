"""Bytes in, clean text lines out.

The reader streams an input in fixed-size chunks (constant memory for any log size),
decodes UTF-8 with replacement, strips ANSI escapes and carriage returns, and peels the
prefixes that container tooling puts in front of each line (docker `--timestamps`,
compose `service  |`, kubectl `--prefix`, Ray actor tags) and the quote marks of a log quoted
in an issue comment (`> `). Line numbers are those of the
original input, 1-based.
"""

from __future__ import annotations

import codecs
import io
import sys
from pathlib import Path
from typing import BinaryIO, Iterator, NamedTuple

import re

from sglang_doctor._speed import native

CHUNK_SIZE = 1 << 20
# A single line longer than this is cut: nothing diagnostic lives past it, and holding a
# multi-GB line would break the constant-memory promise.
MAX_LINE_CHARS = 64 * 1024

# CSI sequences (colours, cursor moves), OSC sequences, and lone escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff]")  # + stray BOMs (concatenated files)

# docker logs --timestamps: RFC3339 with nanoseconds, e.g. 2025-01-02T03:04:05.123456789Z; the
# Kubernetes CRI log files (/var/log/pods, containerd) add the stream and a partial/full tag:
# "2025-07-25T07:53:08.21748708+08:00 stdout F "; a cloud log viewer's export puts the entry's
# severity first: "ERROR 2025-04-05T00:01:19.509514570Z ".
_DOCKER_TS = re.compile(r"^(?:(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY) )?"
                        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}) (?:(?:stdout|stderr) [FP] )?")
# docker compose: "sglang-1  | " / "sglang_1 | "
_COMPOSE = re.compile(r"^[\w.-]{1,64}\s+\| ")
# kubectl logs --prefix: "[pod/name/container] "
_KUBECTL = re.compile(r"^\[pod/[^\]\s]+\] ")
# Ray: "(SchedulerActor pid=123) ", "(WorkerDict pid=209740, ip=10.0.0.2) ", "(pid=123, ip=10.0.0.1) " (the shape
# SGLang's own debug_utils/log_parser.py peels), also with the colour codes of a paste that lost its ESC
# bytes ("[36m(SGLangWorker pid=38138)[0m ").
_RAY = re.compile(r"^(?:\[[\d;]{0,12}m)*\((?:[\w.:-]+ )?pid=\d+(?:,\s*ip=[^)]*)?\)(?:\[[\d;]{0,12}m)*(?: |$)")
# Ray's log deduplication appends this to a line it printed once for several workers.
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
# journald (journalctl's default short format, and short-iso / short-precise): "Mar 03 10:00:00 host python3[123]: ",
# also without the host field ("Mar 18 11:23:46 unit-name[4711]: "), and "2025-03-03T10:00:00+0000 host python3[123]: ".
_JOURNALD = re.compile(r"^(?:[A-Z][a-z]{2} [ 0-3]?\d \d{2}:\d{2}:\d{2}(?:\.\d+)?|"
                       r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?) "
                       r"(?:[\w.-]{1,64} )?[\w.@:/-]{1,64}\[\d+\]: ")
# A log quoted in an issue comment: Markdown's "> " (nested: "> > ") before every line; what follows
# keeps its own indentation (`>   File "…"` is an indented frame).
_QUOTE = re.compile(r"^(?:> ?)+(?=.)")


class Line(NamedTuple):
    """One input line, numbered, cleaned of terminal codes and container prefixes.

    (Immutable records made per run are NamedTuples: a dataclass costs ~0.5 ms of start-up
    to generate its methods, a NamedTuple a fifth of that.)
    """

    number: int
    text: str


class InputError(Exception):
    """An input that cannot be read at all (missing file, directory, permission)."""


# A log pasted outside a code block is rendered as Markdown, and the stored copy of the thread
# keeps the rendering: `__init__` became bold, `**init**` ("in **init**", "quantization/**init**.py").
_MD_DUNDER = re.compile(r"(?<=, in )\*\*(\w+)\*\*|\*\*(\w+)\*\*(?=\.py\b)")


# The furniture of a log pasted into an issue, around or inside it: Markdown code fences and the HTML of
# a collapsed section. Such a line reads as a blank line: a fence the paste put between two parts of
# a traceback is not its exception line.
_FURNITURE = re.compile(r"(?:`{3,}|~{3,})[\w+.-]*|</?(?:details|pre|code)>|<summary>.{0,200}</summary>|</?summary>",
                        re.IGNORECASE)


def _md_dunder(m: re.Match[str]) -> str:
    return f"__{m[1] or m[2]}__"


def clean(text: str) -> str:
    """Remove ANSI escapes, control characters and container prefixes from one line."""
    if "**" in text:
        text = _MD_DUNDER.sub(_md_dunder, text)
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        # tqdm redraws a bar with CR; the last state is what a terminal would show.
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    text = _CONTROL.sub("", text)
    # Prefixes can stack (compose + docker timestamps, kubectl --prefix + --timestamps), peel until none applies.
    # (None can come before SGLang's own `[2026-…` header: most lines of a log skip the five matches.)
    for _ in range(0 if text[:1] == "[" and text[5:6] == "-" and text[1:5].isdigit() else 4):
        m = (_JOURNALD.match(text) or _DOCKER_TS.match(text) or _COMPOSE.match(text) or _KUBECTL.match(text)
             or _RAY.match(text) or (_QUOTE.match(text) if text[:1] == ">" else None))
        if not m:
            break
        text = text[m.end():]
    if text.endswith("cluster]") and "[repeated " in text:
        text = _RAY_REPEATED.sub("", text)
    head = text[:1]
    if head == " ":  # (a fence indented under a list item)
        head = text.lstrip()[:1]
    if head and head in "`~<" and _FURNITURE.fullmatch(text.strip()):
        return ""
    return text


def _open_binary(path: str) -> BinaryIO:
    """The input's bytes, decompressed when its first bytes say gzip/bzip2/xz/zstd (stdin too)."""
    from sglang_doctor.read.decompress import DecompressError, decompressing

    if path == "-":
        fh: BinaryIO = sys.stdin.buffer
    else:
        p = Path(path)
        if p.is_dir():
            import os

            if not os.access(p, os.R_OK | os.X_OK):
                raise InputError(f"{path}: permission denied")
            raise InputError(f"{path}: is a directory without log files (*.log, *.log.N, *.txt, compressed or not)")
        try:
            fh = open(p, "rb")
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except PermissionError:
            raise InputError(f"{path}: permission denied") from None
        except OSError as e:
            raise InputError(f"{path}: {e.strerror or e}") from None
    try:
        return decompressing(fh)
    except DecompressError as e:
        if fh is not sys.stdin.buffer:
            fh.close()
        raise InputError(f"{display_name(path)}: {e}") from None
    except OSError as e:  # peeking a pipe or a special file
        raise InputError(f"{display_name(path)}: {e.strerror or e}") from None


_BOMS_UTF16 = (b"\xff\xfe", b"\xfe\xff")


def _raw_blocks(stream: BinaryIO) -> Iterator[bytes]:
    """The stream's bytes, CHUNK_SIZE at a time, as UTF-8.

    A UTF-8 byte-order mark is dropped. UTF-16 with a byte-order mark (what Windows
    PowerShell's `>` writes) is transcoded: the byte-level scanner and the header regexes
    only ever see UTF-8.
    """
    decoder = None
    first = True
    interrupted = False
    while True:
        if interrupted:
            raise KeyboardInterrupt
        try:
            data, interrupted = _fill(stream)
        except (OSError, EOFError) as e:  # truncated gzip, I/O errors mid-stream
            raise InputError(f"read error: {e}") from None
        if first:
            first = False
            if data[:3] == b"\xef\xbb\xbf":
                data = data[3:]
            elif data[:2] in _BOMS_UTF16:
                decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
        if decoder is not None:
            out = decoder.decode(data, final=not data).encode("utf-8", errors="replace")
            if out:
                yield out
        elif data:
            yield data
        if not data:
            return


def _fill(stream: BinaryIO) -> tuple[bytes, bool]:
    """Up to CHUNK_SIZE bytes (fewer only at the end), and whether Ctrl-C cut the read short.

    Filled by read1() calls so that a Ctrl-C while a quiet pipe blocks keeps the bytes that
    had already arrived (a plain read(n) would drop them with the exception).
    """
    read1 = getattr(stream, "read1", None)
    if read1 is None:
        return stream.read(CHUNK_SIZE), False
    parts: list[bytes] = []
    n = 0
    try:
        while n < CHUNK_SIZE:
            data = read1(CHUNK_SIZE - n)
            if not data:
                break
            parts.append(data)
            n += len(data)
    except KeyboardInterrupt:
        if not parts:
            raise
        return b"".join(parts), True  # the caller raises it again after this block
    return b"".join(parts), False


def newlines(block: bytes) -> int:
    """How many newlines a block holds."""
    return len(block) - len(block.replace(b"\n", b""))  # (measured ~1.5x faster than bytes.count)


def iter_chunks(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Blocks of whole lines: (number of the first line, bytes ending with a newline).

    The line count of a block is the difference of consecutive first-line numbers; the
    last block's is `block.count(b"\\n")` (counted once, here, for every block).

    Memory stays bounded: a line longer than MAX_LINE_CHARS bytes is cut, the rest of it
    skipped up to its newline.
    """
    carry = b""
    number = 1
    skipping = False  # inside the tail of a giant line that was already emitted
    count = newlines
    for data in _raw_blocks(stream):
        if skipping:
            nl = data.find(b"\n")
            if nl < 0:
                continue
            data = data[nl + 1:]
            skipping = False
        buf = carry + data if carry else data
        nl = buf.rfind(b"\n")
        if nl < 0:
            if len(buf) > MAX_LINE_CHARS:
                yield number, buf[:MAX_LINE_CHARS] + b"\n"
                number += 1
                carry = b""
                skipping = True
            else:
                carry = buf
            continue
        chunk, carry = buf[:nl + 1], buf[nl + 1:]
        if number > 1 and count is newlines and (compiled := native()) is not None:  # (a second block)
            count = compiled.newlines
        yield number, chunk
        number += count(chunk)
    if carry:
        yield number, carry + b"\n"


def decode_line(raw: bytes) -> str:
    if len(raw) > MAX_LINE_CHARS:
        raw = raw[:MAX_LINE_CHARS]
    return clean(raw.decode("utf-8", errors="replace"))


# Issue trackers' stored copies of a pasted log cut every line longer than this many
# characters into pieces of exactly this width (a server_args line, a flattened Ray paste).
WRAP_WIDTH = 1000
# A piece that starts a log line of its own (a header time) is never the tail of a wrapped one.
_STARTS_LINE = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")


def _wrapped(raw: str, nxt: str) -> bool:
    """`raw` is a piece of a line hard-wrapped at WRAP_WIDTH characters and `nxt` its tail."""
    return len(raw.rstrip("\r")) == WRAP_WIDTH and bool(nxt.strip()) and not _STARTS_LINE.match(nxt)


def lines_of_chunk(first: int, chunk: bytes) -> Iterator[Line]:
    """The cleaned, numbered lines of a block. A line wrapped at WRAP_WIDTH characters is joined
    again: the whole line is reported on its first line number, each tail's number as an empty line."""
    text = chunk.decode("utf-8", errors="replace")
    parts = text.split("\n")
    parts.pop()  # the chunk ends with a newline
    i, n = 0, len(parts)
    while i < n:
        raw = parts[i]
        j = i
        while j + 1 < n and _wrapped(parts[j], parts[j + 1]) and len(raw) < MAX_LINE_CHARS:
            j += 1
            raw = raw.rstrip("\r") + parts[j]
        yield Line(first + i, clean(raw[:MAX_LINE_CHARS]))
        for k in range(i + 1, j + 1):
            yield Line(first + k, "")
        i = j + 1


def iter_lines_from_binary(stream: BinaryIO) -> Iterator[Line]:
    """Decode a byte stream chunk by chunk into cleaned, numbered lines."""
    for first, chunk in iter_chunks(stream):
        yield from lines_of_chunk(first, chunk)


# Log files in a directory: `x.log`, rotated `x.log.1`, `x.txt`, each also compressed.
_LOG_NAME = re.compile(r".+\.(?:log(?:\.\d+)?|txt)(?:\.(?:gz|bz2|xz|zst))?$")


def log_files(directory: Path) -> list[Path]:
    """The log files under a directory (walked), in name order."""
    return sorted(x for x in directory.rglob("*") if x.is_file() and _LOG_NAME.fullmatch(x.name))


def display_name(path: str) -> str:
    """How an input is named in reports: `-` is standard input."""
    return "<stdin>" if path == "-" else path


def open_input(path: str) -> BinaryIO:
    return _open_binary(path)


def iter_lines(path: str) -> Iterator[Line]:
    stream = _open_binary(path)
    try:
        yield from iter_lines_from_binary(stream)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def iter_lines_from_text(text: str) -> Iterator[Line]:
    yield from iter_lines_from_binary(io.BytesIO(text.encode("utf-8", errors="replace")))


def read_small_text(path: Path, what: str, error: type[Exception]) -> str:
    """A small settings file (config, baseline) as text, or `error` with a one-line reason."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"{path}: cannot read {what}: {getattr(e, 'strerror', None) or e}") from None
