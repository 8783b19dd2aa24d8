"""Lines that hold several log records: a paste that lost its line breaks, a traceback kept as an
escaped string.

A web page or chat that flattens a pasted log puts a whole traceback - header, frames, source lines,
exception - on one line, often with Ray's `(Worker pid=N)` before each former line. Such a line is
split back at the places where a record starts (an SGLang log header, `Traceback (most recent call
last):`, a chain marker, a `File "…", line N, in f` frame, a `[rankN]: ` tag), a frame's source line
is separated from it, and the exception after the last frame (or after a `raise …` source line pasted
with it) gets a line of its own. A traceback
held in one line as an escaped string (a warm-up error's JSON body: `Traceback (most recent call
last):\\n  File \\"…\\"`) is split at its `\\n` escapes. Each piece keeps the line number of the line.
"""

from __future__ import annotations

import re

from sglang_doctor.read.reader import clean

_TRACEBACK = "Traceback (most recent call last):"
_CHAINS = ("During handling of the above exception, another exception occurred:",
           "The above exception was the direct cause of the following exception:")
# Where a record starts inside a line.
_MARK = re.compile(
    r"(?P<header>(?:\((?:[\w.:-]+ )?pid=\d+(?:,\s*ip=[^)]*)?\)\s*)?\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}[^\]]{0,60}\])"
    r"|(?P<tb>Traceback \(most recent call last\):)"
    r"|(?P<chain>During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)"
    r"|(?P<frame>File \"[^\"\n]{1,500}\", line \d+, in [\w.<>]+)"
    r"|(?P<rank>\[rank\d+\]: )"
    r"|(?P<ray>\((?:[\w.:-]+ )?pid=\d+(?:,\s*ip=[^)]*)?\)\s)")
# The exception line after the last frame's source (`… raise x ValueError: bad`).
_EXC = re.compile(r"(?:^|(?<=\s))(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Failed)|Exception)"
                  r"(?=:\s|:$|\s*$)")
MAX_PIECES = 4000


# A frame's source line and the exception it raised pasted on one line: `raise RuntimeError( RuntimeError: …`.
_RAISE_THEN = re.compile(r"^\s*raise \S[^\n]{0,300}?\s(?=(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S)")


def _maybe(text: str) -> bool:
    """Cheap test for a line worth looking at (most lines are not)."""
    return ('File "' in text or _TRACEBACK in text or "pid=" in text[1:] or text.find("[20", 1) >= 0
            or "\\n" in text or text.lstrip().startswith("raise "))


def _escaped(text: str) -> list[str] | None:
    """A traceback or exception held as an escaped string, split at its `\\n` escapes."""
    if "\\n" not in text or not (_TRACEBACK + "\\n" in text or '\\n  File \\"' in text or "\\nRuntimeError: " in text):
        return None
    head, sep, rest = text.partition(_TRACEBACK + "\\n") if _TRACEBACK + "\\n" in text else ("", "", text)
    pieces = ([head + _TRACEBACK] if sep else []) + rest.replace('\\"', '"').replace("\\'", "'").split("\\n")
    return [p for p in pieces if p.strip()] or None


def split_flattened(text: str) -> list[str] | None:
    """The records a flattened line holds, each a line as it was printed; None for an ordinary line."""
    if not _maybe(text):
        return None
    escaped = _escaped(text)
    if escaped is not None:
        return escaped
    m = _RAISE_THEN.match(text)
    if m is not None:
        return ["    " + text[:m.end()].strip(), text[m.end():].strip()]
    marks = list(_MARK.finditer(text))
    if len(marks) < 2:
        return None
    cuts: list[tuple[int, str]] = []
    for m in marks:
        kind = m.lastgroup or ""
        start = m.start()
        if kind == "tb" and start > 0:
            before = text[:start].rstrip()
            # a head that introduces its traceback ("Scheduler hit an exception: Traceback …") keeps it
            if before.endswith(":") and not before.endswith(_CHAINS):
                continue
        if kind == "rank" and start > 0 and text[start - 1] not in " \t)":
            continue
        cuts.append((start, kind))
        if kind == "chain":
            cuts.append((m.end(), "after-chain"))
    if len([c for c in cuts if c[0] > 0]) < 2:
        # one record start inside the line is a line that ran on (a progress bar without its newline
        # before a log line): rules read it as it is
        return None
    bounds = [c[0] for c in cuts]
    if bounds[0] != 0:
        bounds.insert(0, 0)
    segments = [clean(text[a:b]) for a, b in zip(bounds, bounds[1:] + [len(text)])]
    segments = [seg for seg in segments if seg.strip()]
    pieces: list[str] = []
    for i, seg in enumerate(segments):
        if seg.lstrip().startswith('File "') and _MARK.match(seg.lstrip()):
            nxt = segments[i + 1].lstrip() if i + 1 < len(segments) else ""
            pieces.extend(_frame_pieces(seg.strip(), last=not nxt.startswith('File "')))
        else:
            pieces.append(seg.strip() if not seg[:1].isspace() or seg.strip().startswith(_TRACEBACK) else seg.rstrip())
        if len(pieces) > MAX_PIECES:
            break
    return pieces if len(pieces) > 1 else None


def _frame_pieces(piece: str, last: bool) -> list[str]:
    """A frame, its source line and (after the last frame) the exception line."""
    m = _MARK.match(piece)
    assert m is not None
    frame, rest = piece[:m.end()], piece[m.end():].strip()
    out = ["  " + frame]
    if not rest:
        return out
    if last:
        e = _EXC.search(rest)
        if e is not None:
            source, exc = rest[:e.start()].strip(), rest[e.start():].strip()
            if source:
                out.append("    " + source)
            out.append(exc)
            return out
    out.append("    " + rest)
    return out
