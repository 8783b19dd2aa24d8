"""Stage one of a stretch of an input, done apart (another process) and handed back.

The analysis of an input is sequential (records, launches, tracebacks across blocks), but stage one
is not: the scanner's hit lines, the line counts and the decode statistics of a block depend on that
block alone. pipeline/split.py has a second process do stage one for the second half of a big file
while this one reads the first; `feed_prescan` then feeds the few hit lines of that half and adds its
decode statistics to the launches they belong to, so the result is the one a single pass gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple

from sglang_doctor.facts.decode import DecodeStats
from sglang_doctor.read.reader import Line, decode_line, newlines
from sglang_doctor.read.records import last_header_time

if TYPE_CHECKING:
    from sglang_doctor.engine.analyze import _Analysis

_LAUNCH = b"server_args="  # where a new launch may begin (engine.analyze._Analysis._record)


class Hit(NamedTuple):
    """A hit line of a block, with what feeding it needs (engine.analyze._Analysis.feed_hits)."""

    offset: int  # in the block
    line: int  # lines before it in the block
    raw: bytes
    ts: str | None  # the time of the last header line between the previous hit line and this one
    ids: tuple[int, ...] = ()  # the scanner's pattern ids that matched there


class Block(NamedTuple):
    size: int
    lines: int
    hits: list[Hit]
    ts: str | None  # the time of the last header line after the last hit line


@dataclass
class Prescan:
    """Stage one of a stretch of an input whose first line is numbered 1 here."""

    offset: int  # where the stretch starts in the file
    blocks: list[Block] = field(default_factory=list)
    # Decode statistics, a new stretch at every line that may start a launch: (its first line, stats)
    decode: list[tuple[int, DecodeStats]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(b.size for b in self.blocks)


def prescan(chunks: Iterable[tuple[int, bytes]], scanner: Any, offset: int) -> Prescan:
    """Hit lines, line counts and decode statistics of `chunks` (numbered from 1)."""
    out = Prescan(offset)
    stats = DecodeStats()
    out.decode.append((1, stats))
    pending: tuple[int, bytes, list[Hit], str | None] | None = None  # a block whose line count comes next
    for first, block in chunks:
        if pending is not None:  # (the reader counted its lines: up to this block's first)
            p_first, p_block, p_hits, p_ts = pending
            out.blocks.append(Block(len(p_block), first - p_first, p_hits, p_ts))
        hits, ts = _hits(block, *scanner.hits(block))
        lo = 0
        # A new launch may begin on a `server_args=` line: a stage-one pattern, so only hit lines can hold one.
        for hit in hits:
            if _LAUNCH not in hit.raw:
                continue
            number = first + hit.line
            if number != out.decode[-1][0]:
                stats.add_block(block, first, lo, hit.offset)
                stats = DecodeStats()
                out.decode.append((number, stats))
                lo = hit.offset
        stats.add_block(block, first, lo)
        pending = (first, block, hits, ts)
    if pending is not None:
        p_first, p_block, p_hits, p_ts = pending
        out.blocks.append(Block(len(p_block), newlines(p_block), p_hits, p_ts))
    return out


def _hits(block: bytes, starts: list[int], ids: list[tuple[int, ...]]) -> tuple[list[Hit], str | None]:
    """The hit lines of a block, and the time of the last header line after the last of them."""
    hits = []
    pos = line = 0
    for at, pattern_ids in zip(starts, ids):
        if at < pos:
            continue
        ts = last_header_time(block, pos, at)
        line += block.count(b"\n", pos, at)
        nl = block.find(b"\n", at)
        hits.append(Hit(at, line, block[at:nl], ts, pattern_ids))
        line += 1
        pos = nl + 1
    return hits, last_header_time(block, pos, len(block))


def feed_prescan(a: _Analysis, part: Prescan, first: int, read: Callable[[int, int], bytes]) -> int:
    """Feed `part` (its first line is line `first` of the input) to the analysis; the number of the
    input's last line. `read(offset, size)` gives the bytes of a block that has hit lines."""
    a._tail = None  # the end of the input is this half's, which only its hit lines carry
    pos = part.offset
    line = first
    last = first + sum(b.lines for b in part.blocks) - 1
    for block in part.blocks:
        _feed(a, block, line, lambda: read(pos, block.size), last)
        a._switches.clear()  # (its decode lines were counted with the part)
        pos += block.size
        line += block.lines
    launches = sorted([*a.closed, a.launch], key=lambda la: la.first_line)
    for start, stats in part.decode:
        start += first - 1
        stats.shift_lines(first - 1)
        owner = launches[0]
        for la in launches:
            if la.first_line <= start:
                owner = la
        owner.ctx.decode.merge(stats)
    return line - 1


def _feed(a: _Analysis, block: Block, first: int, read: Callable[[], bytes], last: int) -> None:
    """As a.feed_hits would, from the hit lines alone while no traceback is open; the block is read
    again only to go on line by line through an open one. `last`: the input's last line (always read:
    how the log ends)."""
    if not a.seg.idle:
        a.feed_hits(first, read(), [h.offset for h in block.hits], ids=[h.ids for h in block.hits])
        return
    for i, hit in enumerate(block.hits):
        if hit.ts is not None:
            a.last_ts = hit.ts
        a._at = hit.offset
        number = first + hit.line
        if number != last and a.counted(number, hit.raw, hit.ids):
            continue
        a.feed(Line(number, decode_line(hit.raw)), decode=False)
        if not a.seg.idle:
            rest = block.hits[i + 1:]
            a.feed_hits(first, read(), [h.offset for h in rest], hit.offset + len(hit.raw) + 1, number + 1,
                        ids=[h.ids for h in rest])
            return
    if block.ts is not None:
        a.last_ts = block.ts
