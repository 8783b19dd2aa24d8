"""Clean lines in, log records out.

A record is either one logged line (`[time TP0] message`, or any header-less line; a
header-less exception line with its continuation lines) or a whole Python traceback: its
head (`Scheduler hit an exception: Traceback …`, `Exception in thread …:`), frames, chained
sections (`During handling of the above exception …`) and the final exception line with
its continuation lines. Frames are read in the shapes people paste them (no line number,
Windows paths, `[rank0]: ` tags). Segmentation is streaming: at most one open record is
buffered, and it is bounded in size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, NamedTuple

import re

from sglang_doctor.read.flattened import split_flattened
from sglang_doctor.read.reader import Line, decode_line
from sglang_doctor.read.request_log import is_request_echo

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
# A frame as people paste it without its line number (`File "…/x.py", in f`), or as Python prints
# it for a line it cannot place (`line ?`): only with a function name (or `line ?`) and nothing
# after it, so that a message about a file (`File "config.json" not found`) stays a message.
_LOOSE_FRAME = re.compile(
    r'^(?P<indent>\s*)File "(?P<path>[^"]+)", (?:line \?(?:, in (?P<f1>[\w.<>]+))?|in (?P<f2>[\w.<>]+))\s*$')
# The final line of a traceback: `ValueError: …`, `torch.OutOfMemoryError: …`, `KeyboardInterrupt`.
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Timeout|error)|[A-Za-z_][\w.]*)(?::(?P<msg> .*|$)|$)")
# Statements a frame's source line can be on its own, flush left (`raise`), which _EXC_LINE would take.
_BARE_STATEMENTS = frozenset(("raise", "return", "pass", "break", "continue", "yield", "else:", "try:", "finally:"))
# An exception line standing on its own, outside a traceback (`TypeError: object of type …`).
# (`[A-Za-z_][\w.]*Exception` alone would need a character before "Exception": the base class is named.)
_LONE_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception)|Exception): \S")
# PyTorch's launcher (torchrun, elastic) puts `[rank0]: ` before every line a rank prints; its own
# C++ log lines follow the tag without the space (`[rank1]:[E0502 …`) and keep it.
_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]: ")
# threading's report of an uncaught exception, the line before its traceback.
_THREAD_HEAD = re.compile(r"^Exception in thread .{1,200}:$")
# Python's faulthandler report of a native crash: `Fatal Python error: Segmentation fault`, then the
# stack of each thread under these lines, frames as `File "x.py", line 12 in f` (no comma).
_FATAL = "Fatal Python error: "
_DUMP_LINE = re.compile(r"^(?:(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):|"
                        r"Stack \(most recent call first\):|Python runtime state: |Extension modules: |<no Python frame>)")
# The recursion marker between frames; pasted flush left it would read as an exception line.
_REPEATED = "[Previous line repeated "
# What continues a header-less exception line: indented text, a source location alone on its line
# (`/sgl-kernel/csrc/…/custom_all_reduce.cuh:350`, `C:\…`), an `at …` location, the c10 backtrace
# (`Exception raised from …`, `frame #0: …`). A path with a message after it (a `warnings` line, a
# compiler's `kernels.py:606:42: error: …`, the loader's `python: error while loading …`) is a
# record of its own.
_PATH_LINE = re.compile(r"^(?:\.{0,2}/|~/|[A-Za-z]:[\\/])[^\s:]+(?::\d+){0,2}:?\s*$")
_CONTINUATION_STARTS = ("at ", "frame #", "Exception raised from ")
# How a header-less line that may start a record begins (besides a frame or a Traceback line): a
# rank's tag, faulthandler's report, threading's.
_OPENERS = ("[rank", _FATAL, "Exception in ")
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
    frames: list[str] = field(default_factory=list)  # as rules read them, see frame_of()
    truncated: bool = False  # a traceback cut before its exception line
    # The record's lines as rules read them, when one differs from the log's (a `[rank0]: ` tag
    # peeled, a frame without its line number in the canonical form); evidence quotes `lines`.
    read: list[str] | None = None

    @property
    def start(self) -> int:
        return self.lines[0].number

    @property
    def end(self) -> int:
        return self.lines[-1].number

    @property
    def text(self) -> str:
        if self.read is not None:
            if len(self.read) == 1:
                return self.message if self.kind == "line" else self.read[0]
            return self.message + "\n" + "\n".join(self.read[1:])
        if len(self.lines) == 1:
            return self.message if self.kind == "line" else self.lines[0].text
        return self.message + "\n" + "\n".join(ln.text for ln in self.lines[1:])

    @property
    def exception(self) -> str:
        """The last exception line of the chain (what Python printed last)."""
        return self.exceptions[-1] if self.exceptions else ""

    def joined(self) -> str | None:
        """The exception message with its wrapped lines joined (a message a terminal or a web page
        wrapped over several lines); None when no message spans lines. Rules whose pattern finds no
        match in the record as printed are tried on it."""
        if self.kind == "traceback":
            if not any("\n" in e for e in self.exceptions):
                return None
            joined = "\n".join(join_wrapped(e.split("\n")) for e in self.exceptions)
            return joined if joined != "\n".join(self.exceptions) else None
        if len(self.lines) > 1 and _LONE_EXC_LINE.match(self.message.strip()):
            joined = join_wrapped(self.text.split("\n"))
            return joined if joined != self.text else None
        return None


# Request logging (--log-requests) echoes users' prompts and the model's answers into the log; their
# text is user data, never a diagnostic, whatever error messages it quotes.
REQUEST_ECHO = ("Receive: obj=", "Finish: obj=")


def ts_seconds(s: str) -> int:
    """A log time (`2025-01-01 10:00:00`, `2025-01-01T10:00:00.5`) in whole seconds on one scale (for
    differences); ValueError when it is not a valid date and time."""
    # (by hand, not datetime: these differences are all a run needs of it, and its import is a
    # fiftieth of a cold start)
    head = s.replace("T", " ")[:19]
    if len(head) != 19 or head[4] != "-" or head[7] != "-" or head[10] != " " or head[13] != ":" or head[16] != ":":
        raise ValueError(f"not a timestamp: {s!r}")
    parts = (head[0:4], head[5:7], head[8:10], head[11:13], head[14:16], head[17:19])
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise ValueError(f"not a timestamp: {s!r}")
    y, mo, d, h, mi, sec = map(int, parts)
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    if not (1 <= y and 1 <= mo <= 12 and 1 <= d <= _MONTH_DAYS[mo] + (mo == 2 and leap) and h < 24 and mi < 60
            and sec < 60):
        raise ValueError(f"not a timestamp: {s!r}")
    # days since 0000-03-01 (a year from March: the leap day comes last)
    y -= mo <= 2
    era_days = 365 * y + y // 4 - y // 100 + y // 400
    days = era_days + (153 * ((mo + 9) % 12) + 2) // 5 + d - 1
    return ((days * 24 + h) * 60 + mi) * 60 + sec


_MONTH_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


# Terminal widths at which a wrapped line was cut mid-word (joined without a space).
_TERMINAL_WIDTHS = frozenset((80, 100, 120, 132, 160, 200))


def join_wrapped(lines: list[str]) -> str:
    """Lines of one message with the wrapped ones joined: a space between a line that broke off and
    its continuation, none where a terminal cut a word; other line breaks stay."""
    out = lines[0].rstrip()
    for prev, ln in zip(lines, lines[1:]):
        piece = ln.strip()
        if not piece:
            out += "\n"
            continue
        if not _wraps(prev, piece):
            out += "\n" + piece
            continue
        hard = len(prev) in _TERMINAL_WIDTHS and not prev.endswith(" ") and prev[-1:].isalnum() and piece[:1].isalnum()
        out += piece if hard else " " + piece
    return out


WRAPPED_MIN_CHARS = 60  # a line a terminal or page wrapped is at least this long


def _wraps(prev: str, text: str) -> bool:
    """`text`, flush left, continues the exception message on the line above it: the message breaks
    off mid-sentence (no closing punctuation) and `text` goes on in lower case, as a line wrapped by a
    terminal or a web page does."""
    if prev[:1].isspace() or prev.startswith(_CONTINUATION_STARTS) or _PATH_LINE.match(prev):
        return False  # the message is over: a backtrace or a location follows it
    prev = prev.rstrip()
    end = prev[-1:]
    # (a short line that ends without a comma is a message of its own, not one a width cut)
    broken = end in (",", "(", "-") or (len(prev) >= WRAPPED_MIN_CHARS and end not in ".!?:;)")
    return broken and text[:1].islower() and frame_of(text) is None and not _LONE_EXC_LINE.match(text)


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


def frame_of(text: str) -> str | None:
    """The frame a line states, as rules read it (`File "PATH", line N, in FUNC`), or None.

    A frame pasted without its line number, or with `line ?`, reads `line 0`, faulthandler's
    `line 12 in f` reads `line 12, in f`, and a Windows path has forward slashes: a rule's
    `sglang/srt/…\\.py", line \\d+` pattern reads any of them.
    """
    m = _FRAME.match(text)
    if m is not None:
        if text.startswith(" in ", m.end()):  # faulthandler's `line 12 in f`
            text = text[:m.end()] + "," + text[m.end():]
        frame = text.strip()
        return frame.replace("\\", "/") if "\\" in frame else frame
    if 'File "' not in text:
        return None
    m = _LOOSE_FRAME.match(text)
    if m is None:
        return None
    return f'File "{m["path"].replace(chr(92), "/")}", line 0, in {m["f1"] or m["f2"] or "?"}'


def _as_read(text: str, frame: str) -> str:
    """A frame line of the log as rules read it: its indentation, then the canonical frame."""
    return text[:len(text) - len(text.lstrip())] + frame


def _continues_bare(text: str) -> bool:
    """`text`, a header-less line, continues the exception line above it."""
    if text[:1].isspace():
        # (A frame or a traceback below the exception line starts a record of its own: the
        # exception pasted above its traceback.)
        return bool(text.strip()) and _TRACEBACK_START not in text and frame_of(text) is None
    if text.startswith(_CONTINUATION_STARTS):
        return True
    return _PATH_LINE.match(text) is not None


class _Open:
    """A record still taking lines: a traceback, or an exception line with its continuation."""

    __slots__ = ("record", "state", "prelude", "tag", "after_frame", "last_frame")

    def __init__(self, record: Record, state: str, prelude: str = "", tag: str = "") -> None:
        self.record = record
        # An exception line pasted just above the traceback (the error first, then its trace):
        # the exception of a traceback that was cut before its own.
        self.prelude = prelude
        # frames: reading frames; exc: read the exception line, taking continuation lines;
        # after: a blank line followed the exception; chain: saw a chain marker, waiting for the
        # next Traceback line; head: threading's `Exception in thread …:` line, waiting for its
        # traceback; bare: a header-less exception line outside a traceback, taking continuations;
        # fatal / dump: faulthandler's `Fatal Python error: …` line, then the threads' stacks.
        self.state = state
        self.tag = tag  # the `[rankN]: ` tag of its lines, "" without one
        self.after_frame = False  # the last line was a frame (the next flush-left one is its source)
        self.last_frame = -1  # index in the record's lines of its last frame

    def add(self, line: Line, read: str) -> None:
        rec = self.record
        rec.lines.append(line)
        if rec.read is not None:
            rec.read.append(read)

    def add_frame(self, line: Line, text: str, frame: str) -> None:
        self.record.frames.append(frame)
        self.add(line, _as_read(text, frame))
        self.last_frame = len(self.record.lines) - 1

    def indented_exception(self) -> str:
        """The exception line of a traceback pasted indented (`  ValueError: …` under the last frame's
        source line), with the lines after it; "" when there is none."""
        rec = self.record
        texts = rec.read if rec.read is not None else [ln.text for ln in rec.lines]
        tail = [t.strip() for t in texts[self.last_frame + 1:]] if self.last_frame >= 0 else []
        for i, t in enumerate(tail):
            if _LONE_EXC_LINE.match(t):
                return "\n".join(x for x in tail[i:] if x)
        return ""


class Segmenter:
    """Streaming segmenter: feed lines one at a time, get the records they complete."""

    def __init__(self) -> None:
        self._open: _Open | None = None
        self._last_exc = ""  # the last header-less exception line, while only blank lines follow it

    @property
    def idle(self) -> bool:
        """No record is open: the next line cannot continue an earlier record."""
        return self._open is None

    def _close(self) -> Record:
        assert self._open is not None
        op, self._open = self._open, None
        rec = op.record
        if op.state == "bare":
            self._last_exc = rec.message.strip()
        elif op.state == "head":
            rec.kind, rec.read = "line", None  # no traceback came: the line stands alone
        elif not rec.exceptions:
            exc = op.indented_exception()
            if exc:
                rec.exceptions.append(exc)
            else:
                rec.truncated = True
                if op.prelude:
                    rec.exceptions.append(op.prelude)
        return rec

    def _drop_request_echo(self) -> list[Record]:
        """A logged request or response (request_log.py) is data, never a record: it ends the
        open record, like any logged line, and is dropped."""
        self._last_exc = ""
        return self.finish()

    def finish(self) -> list[Record]:
        return [self._close()] if self._open is not None else []

    def feed(self, line: Line) -> list[Record]:
        if len(line.text) <= 60:
            return self._feed_one(line)
        header = parse_header(line.text)
        if is_request_echo(line.text if header is None else header.message):
            return self._drop_request_echo()  # (before any splitting: a prompt may quote a whole log)
        pieces = split_flattened(line.text)
        if pieces is None:
            return self._feed_one(line, header)
        # A flattened paste: each record it holds is fed as the line it was (same line number).
        out: list[Record] = []
        for piece in pieces:
            out.extend(self._feed_one(Line(line.number, piece)))
        return out

    def _feed_one(self, line: Line, header: Header | None | bool = False) -> list[Record]:
        """`header`: the line's parsed header when the caller has it (False: not parsed yet)."""
        out: list[Record] = []
        text = line.text
        tag = ""
        if header is False:
            header = parse_header(text)
        special = False  # a header-less line that may open a record
        if header is not None:
            body = header.message
            if is_request_echo(body):
                return self._drop_request_echo()
            if self._open is None and _TRACEBACK_START not in body:
                # The common case, a logged line between records (kept inline: it is most lines).
                self._last_exc = ""
                return [Record("line", [line], header.ts, header.rank, body)]
        else:
            body = text
            if is_request_echo(text):
                return self._drop_request_echo()
            if text.startswith(_OPENERS):
                special = True
                m = _RANK_PREFIX.match(text)  # (a tagged line is never a header: peeled, the rest may be one)
                if m is not None:
                    tag, text = m[1], text[m.end():]
                    header = parse_header(text)
                    body = header.message if header is not None else text

        if self._open is not None:
            op = self._open
            if op.tag and tag and tag != op.tag:
                # Another rank's line interleaved into this one's record: on its own, keep collecting.
                out.append(Record("line", [line], header.ts if header else None, header.rank if header else "", body))
                return out
            if op.state == "bare":
                if header is None and len(op.record.lines) < MAX_RECORD_LINES and (
                        _continues_bare(text) or _wraps(op.record.lines[-1].text, text)):
                    op.add(line, text)
                    return out
                out.append(self._close())
            elif self._in_traceback(op, line, text, header, body, out):
                return out

        # Not inside a record (or the open one just closed).
        if special or header is not None or 'File "' in text or _TRACEBACK_START in text:
            return self._start(line, text, tag, header, body, out)
        # A header-less line (inline: most lines of a pasted excerpt are).
        prelude, self._last_exc = self._last_exc, ""
        stripped = text.strip()
        if not stripped or stripped.startswith("# "):
            # (a blank line, or an excerpt's gap marker `# [...]`, between an exception line and the
            # traceback pasted under it)
            self._last_exc = prelude
        elif _LONE_EXC_LINE.match(stripped):
            # Held open for its continuation lines (a kernel's `file.cuh:350` under `RuntimeError: …`).
            self._open = _Open(Record("line", [line], None, "", text, read=[text]), "bare", tag=tag)
            return out
        out.append(Record("line", [line], None, "", text))
        return out

    def _in_traceback(self, op: _Open, line: Line, text: str, header: Header | None, body: str,
                      out: list[Record]) -> bool:
        """Feed a line to the open traceback; False when it closed it and the line starts anew."""
        rec = op.record
        if header is not None:
            if _TRACEBACK_START not in body and header.rank and rec.rank and header.rank != rec.rank:
                # Another rank's line interleaved into this traceback: emit it on its own and keep
                # collecting.
                out.append(Record("line", [line], header.ts, header.rank, body))
                return True
            out.append(self._close())
            return False
        if len(rec.lines) >= MAX_RECORD_LINES:
            out.append(self._close())
            return False
        stripped = text.strip()
        if op.state == "head":
            if stripped.startswith(_TRACEBACK_START):
                op.add(line, text)
                op.state = "frames"
                return True
            out.append(self._close())
            return False
        if stripped.startswith("# "):
            # A comment inside a pasted traceback (`# [...]` marks a gap in an excerpt): part of the
            # record, never its exception line.
            op.add(line, text)
            op.after_frame = False
            return True
        if op.state in ("fatal", "dump"):
            frame = frame_of(text)
            if frame is not None:
                op.add_frame(line, text, frame)
                op.state = "dump"
                return True
            if not stripped or text[:1].isspace() or _DUMP_LINE.match(stripped):
                op.add(line, text)  # thread headers; an indented piece of a frame cut by another write
                return True
            out.append(self._close())
            return False
        if op.state == "chain":
            if stripped.startswith(_TRACEBACK_START) or not stripped:
                op.add(line, text)
                if stripped:
                    op.state = "frames"
                return True
            out.append(self._close())
            return False
        if stripped in _CHAIN_MARKERS:
            op.add(line, text)
            op.state = "chain"
            return True
        frame = frame_of(text) if op.state in ("frames", "exc") else None
        if op.state == "frames":
            after_frame, op.after_frame = op.after_frame, False
            if not stripped:
                # A blank line inside frames (pasted logs) - keep going.
                op.add(line, text)
                return True
            if frame is not None:
                op.add_frame(line, text, frame)
                op.after_frame = True
                return True
            if _GLOG.match(text):
                # A c10 log line (it carries its own time) printed between two frames.
                out.append(Record("line", [line], None, "", text))
                op.after_frame = after_frame
                return True
            if (text[:1].isspace() or stripped in ("...", "…") or stripped.startswith(("^", "~", _REPEATED))
                    or _TRACEBACK_START in stripped):
                op.add(line, text)  # source line of a frame, caret markers, the recursion marker
                return True
            if after_frame and (stripped in _BARE_STATEMENTS or not _EXC_LINE.match(stripped)):
                # A traceback pasted without its indentation: the frame's source line
                # (`self.grammar.fill_vocab_mask(vocab_mask, idx)`) is flush left too, but it is
                # code, not an exception line.
                op.add(line, text)
                return True
            # First unindented line after the frames: the exception line.
            rec.exceptions.append(stripped)
            op.add(line, text)
            op.state = "exc"
            return True
        if op.state == "exc":  # continuation lines of the exception message
            if not stripped:
                op.state = "after"
                op.add(line, text)
                return True
            if _TRACEBACK_START in stripped or frame is not None or _GLOG.match(text) \
                    or _THREAD_HEAD.match(stripped):
                out.append(self._close())
                return False
            op.add(line, text)
            rec.exceptions[-1] += "\n" + stripped
            return True
        # after: a blank line followed the exception; only a chain marker continues
        if not stripped:
            op.add(line, text)
            return True
        out.append(self._close())
        return False

    def _start(self, line: Line, text: str, tag: str, header: Header | None, body: str,
               out: list[Record]) -> list[Record]:
        prelude, self._last_exc = self._last_exc, ""
        if _TRACEBACK_START in body:
            rec = Record("traceback", [line], header.ts if header else None,
                         header.rank if header else "", body, read=[text])
            self._open = _Open(rec, "frames", prelude, tag)
            return out
        if header is not None:
            out.append(Record("line", [line], header.ts, header.rank, body))
            return out
        frame = frame_of(text) if 'File "' in text else None
        if frame is not None:
            # A traceback pasted without its first line.
            rec = Record("traceback", [line], None, "", frame, frames=[frame], read=[_as_read(text, frame)])
            self._open = _Open(rec, "frames", prelude, tag)
            self._open.after_frame = True
            self._open.last_frame = 0
        elif text.startswith(_FATAL):
            # faulthandler's report: its first line says what killed the process; the stacks follow.
            rec = Record("traceback", [line], None, "", text, exceptions=[text.strip()], read=[text])
            self._open = _Open(rec, "fatal", tag=tag)
        elif text.startswith("Exception in ") and _THREAD_HEAD.match(text.rstrip()):
            # (threading writes its report to stderr, never through the logger: no header)
            self._open = _Open(Record("traceback", [line], None, "", text, read=[text]), "head", prelude, tag)
        elif _LONE_EXC_LINE.match(text.strip()):  # a rank's tagged exception line
            self._open = _Open(Record("line", [line], None, "", text, read=[text]), "bare", tag=tag)
        else:
            # (a line that only mentions a file, or starts like a report without being one)
            self._last_exc = prelude if not text.strip() else ""
            out.append(Record("line", [line], None, "", text))
        return out


def segment(lines: Iterable[Line]) -> Iterator[Record]:
    """Group cleaned lines into records."""
    seg = Segmenter()
    for line in lines:
        yield from seg.feed(line)
    yield from seg.finish()


def last_header_time(block: bytes, lo: int, hi: int) -> str | None:
    """The time of the last header line in block[lo:hi]."""
    for _ in range(8):  # a "[20" that starts no header (bs=[20, 40]) costs one more look
        i = block.rfind(b"[20", lo, hi)
        if i < 0:
            return None
        start = block.rfind(b"\n", lo, i) + 1 or lo
        header = parse_header(decode_line(block[start:block.find(b"\n", i)]))
        if header is not None:
            return header.ts
        hi = start
    return None
