"""Clean lines in, log records out.

A record is either one logged line (`[time TP0] message`, or any header-less line) or a
whole Python traceback: its head (`Scheduler hit an exception: Traceback …`), frames,
chained sections (`During handling of the above exception …`) and the final exception
line with its continuation lines. Segmentation is streaming: at most one open traceback
is buffered, and it is bounded in size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, NamedTuple

import re

from .reader import Line

# Header of SGLang's logger, all releases (see the log anatomy): time, optional ms, rank
# tags. The leading "[" may be lost when a user cut the line when pasting.
_HEADER = re.compile(
    r"^\[?(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{1,6}))?"
    r"(?P<ranks>(?: (?:DP-?\d+|PP\d+|ATTN_CP\d+|MOE_DP\d+|TP\d+|EP\d+))*)"
    r"(?: encode_server| encode_dp_worker\[\d+\])?\] ?(?P<msg>.*)$"
)
_TRACEBACK_START = "Traceback (most recent call last):"
_CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
# The final line of a traceback: `ValueError: …`, `torch.OutOfMemoryError: …`, `KeyboardInterrupt`.
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Timeout|error)|[A-Za-z_][\w.]*)(?::(?P<msg> .*|$)|$)")
# An exception line standing on its own, outside a traceback (`TypeError: object of type …`).
_LONE_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception): \S")
# Bound on one traceback record so a runaway block cannot hold unbounded memory.
MAX_RECORD_LINES = 2000


@dataclass(slots=True)
class Record:
    """A log line, or a whole Python traceback, with the lines it spans."""

    kind: str  # "line" or "traceback"
    lines: list[Line]
    ts: str | None = None
    rank: str = ""  # "TP0", "DP1 TP3", "" when none
    message: str = ""  # text after the header of the first line
    exceptions: list[str] = field(default_factory=list)  # exception lines, chain order
    frames: list[str] = field(default_factory=list)
    truncated: bool = False  # a traceback cut before its exception line

    @property
    def start(self) -> int:
        return self.lines[0].number

    @property
    def end(self) -> int:
        return self.lines[-1].number

    @property
    def text(self) -> str:
        if len(self.lines) == 1:
            return self.message if self.kind == "line" else self.lines[0].text
        return self.message + "\n" + "\n".join(ln.text for ln in self.lines[1:])

    @property
    def exception(self) -> str:
        """The last exception line of the chain (what Python printed last)."""
        return self.exceptions[-1] if self.exceptions else ""


class Header(NamedTuple):
    """What an SGLang log header says: time and rank tags."""

    ts: str
    rank: str
    message: str


def parse_header(text: str) -> Header | None:
    if not text or not (text[0] == "[" or text[0].isdigit()):
        return None
    m = _HEADER.match(text)
    if not m:
        return None
    return Header(m["ts"], m["ranks"].strip(), m["msg"])


# PyTorch's C++ log lines (c10, glog style) - the NCCL watchdog among them - carry month, day
# and time but no year: `[rank1]:[E0502 09:24:33.512345678 ProcessGroupNCCL.cpp:629] …`.
_GLOG = re.compile(r"^(?:\[rank\d+\]:)?\[?[IWEF](?P<mon>[01]\d)(?P<day>[0-3]\d) (?P<time>\d\d:\d\d:\d\d)[.\d]* ")


def glog_time(text: str, before: str | None) -> str | None:
    """The time of a c10/glog line as `YYYY-MM-DD HH:MM:SS`, its year from `before` (a header
    time logged earlier; the next year when the month went backwards), None without one."""
    if before is None or len(before) < 7:
        return None
    m = _GLOG.match(text)
    if m is None:
        return None
    year = int(before[:4]) + (1 if m["mon"] < before[5:7] else 0)
    return f"{year:04d}-{m['mon']}-{m['day']} {m['time']}"


class _Traceback:
    """An open traceback being collected."""

    __slots__ = ("record", "state", "prelude")

    def __init__(self, record: Record, state: str, prelude: str = "") -> None:
        self.record = record
        # An exception line pasted just above the traceback (the error first, then its trace):
        # the exception of a traceback that was cut before its own.
        self.prelude = prelude
        # frames: reading frames; exc: read the exception line, taking continuation lines;
        # chain: saw a chain marker, waiting for the next Traceback line.
        self.state = state


class Segmenter:
    """Streaming segmenter: feed lines one at a time, get the records they complete."""

    def __init__(self) -> None:
        self._open: _Traceback | None = None
        self._last_exc = ""  # the last header-less exception line, while only blank lines follow it

    @property
    def idle(self) -> bool:
        """No traceback is open: the next line cannot continue an earlier record."""
        return self._open is None

    def _close(self) -> Record:
        assert self._open is not None
        rec = self._open.record
        if not rec.exceptions:
            rec.truncated = True
            if self._open.prelude:
                rec.exceptions.append(self._open.prelude)
        self._open = None
        return rec

    def finish(self) -> list[Record]:
        return [self._close()] if self._open is not None else []

    def feed(self, line: Line) -> list[Record]:
        out: list[Record] = []
        text = line.text
        header = parse_header(text)
        body = header.message if header else text

        if self._open is not None:
            tb = self._open
            rec = tb.record
            if header is not None:
                if _TRACEBACK_START in body:
                    out.append(self._close())
                elif header.rank and rec.rank and header.rank != rec.rank:
                    # Another rank's line interleaved into this traceback: emit it on its
                    # own and keep collecting.
                    out.append(Record("line", [line], header.ts, header.rank, body))
                    return out
                else:
                    out.append(self._close())
            elif len(rec.lines) >= MAX_RECORD_LINES:
                out.append(self._close())
            else:
                stripped = text.strip()
                if stripped.startswith("# "):
                    # A comment inside a pasted traceback (`# [...]` marks a gap in an excerpt):
                    # part of the record, never its exception line.
                    rec.lines.append(line)
                    return out
                if tb.state == "chain":
                    if stripped.startswith(_TRACEBACK_START) or not stripped:
                        rec.lines.append(line)
                        if stripped:
                            tb.state = "frames"
                        return out
                    out.append(self._close())
                elif stripped in _CHAIN_MARKERS:
                    rec.lines.append(line)
                    tb.state = "chain"
                    return out
                elif tb.state == "frames":
                    if not stripped:
                        # A blank line inside frames (pasted logs) - keep going.
                        rec.lines.append(line)
                        return out
                    if _FRAME.match(text):
                        rec.frames.append(stripped)
                        rec.lines.append(line)
                        return out
                    if text[:1].isspace() or stripped in ("...", "…") or stripped.startswith(("^", "~")):
                        rec.lines.append(line)  # source line of a frame, caret markers
                        return out
                    if _TRACEBACK_START in stripped:
                        rec.lines.append(line)
                        return out
                    if _FRAME.match(rec.lines[-1].text) and not _EXC_LINE.match(stripped):
                        # A traceback pasted without its indentation: the frame's source line
                        # (`self.grammar.fill_vocab_mask(vocab_mask, idx)`) is flush left too,
                        # but it is code, not an exception line.
                        rec.lines.append(line)
                        return out
                    # First unindented line after the frames: the exception line.
                    rec.exceptions.append(stripped)
                    rec.lines.append(line)
                    tb.state = "exc"
                    return out
                elif tb.state == "exc":  # continuation lines of the exception message
                    if not stripped:
                        tb.state = "after"
                        rec.lines.append(line)
                        return out
                    if _TRACEBACK_START in stripped or _FRAME.match(text):
                        out.append(self._close())
                    else:
                        rec.lines.append(line)
                        rec.exceptions[-1] += "\n" + stripped
                        return out
                else:  # after: a blank line followed the exception; only a chain marker continues
                    if not stripped:
                        rec.lines.append(line)
                        return out
                    out.append(self._close())

        # Not inside a traceback (or the traceback just closed).
        prelude, self._last_exc = self._last_exc, ""
        if _TRACEBACK_START in body:
            rec = Record("traceback", [line], header.ts if header else None,
                         header.rank if header else "", body)
            self._open = _Traceback(rec, "frames", prelude)
            return out
        if header is None and _FRAME.match(text):
            # A traceback pasted without its first line.
            rec = Record("traceback", [line], None, "", text.strip(), frames=[text.strip()])
            self._open = _Traceback(rec, "frames", prelude)
            return out
        if header is not None:
            out.append(Record("line", [line], header.ts, header.rank, body))
        else:
            stripped = text.strip()
            if not stripped:
                self._last_exc = prelude
            elif _LONE_EXC_LINE.match(stripped):
                self._last_exc = stripped
            out.append(Record("line", [line], None, "", text))
        return out


def segment(lines: Iterable[Line]) -> Iterator[Record]:
    """Group cleaned lines into records."""
    seg = Segmenter()
    for line in lines:
        yield from seg.feed(line)
    yield from seg.finish()
