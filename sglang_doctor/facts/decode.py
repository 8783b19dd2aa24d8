"""Serving statistics from the scheduler's `Decode batch` lines, exact at any log size.

Which numbers count, per line (the same on both paths below):

- throughput: every number after `gen throughput (token/s): ` (only the decode line has it);
- queue: the `#queue-req: N` right after that number;
- token usage: the first pool's `token usage` of a decode line (`#token: N, token usage: X`, hybrid
  models `#full token: N, full token usage: X`, HiSparse `#gpu token: …`), the field SGLang's own
  `srt/debug_utils/log_parser.py` reads;
- CUDA graphs: the `cuda graph: True|False` right before the throughput.

Quantiles are linear interpolations between order statistics (numpy's default, polars'
`quantile(q, interpolation="linear")`; the median is the 0.5 quantile), so the numbers equal what
log_parser's DataFrame gives on the lines it reads.

Two ways in: `add_line` (one decoded line; the line-by-line path) and `add_block` (a raw block of
whole lines; the fast path: a few compiled regexes over the bytes, `Counter` at C speed). Printed
throughputs have two decimals, so the exact histogram keyed on the printed text is bounded by the
distinct values; past MAX_VALUES of them (weeks of a fast server) it becomes a log-bucket sketch of
relative error ≤ SKETCH_ERROR, and the summary says so (`approximate`).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from itertools import accumulate, repeat
from operator import itemgetter
from typing import Any

from sglang_doctor.read.reader import decode_line

TP_LITERAL = "gen throughput (token/s): "
_TP_BYTES = TP_LITERAL.encode()
_QUEUE_SEP = b", #queue-req: "
# One group per decode line, the throughput and the queue after it as printed ("463.21, #queue-req: 0"):
# one object per line, counted by Counter in C.
_TPQ = re.compile(rb"gen throughput \(token/s\): ([0-9.]+(?:, #queue-req: \d+)?)")
_USAGE = re.compile(rb"Decode batch(?: \[\d+\])?[,.] #running-req: \d+, #(?:full |gpu )?token: \d+, "
                    rb"(?:full |gpu )?token usage: ([0-9.]+)")
GRAPH_LITERALS = {True: b"cuda graph: True, " + _TP_BYTES, False: b"cuda graph: False, " + _TP_BYTES}

MAX_KEYS = 300_000  # distinct (throughput, queue) texts kept (~35 MB) before they are folded into values
MAX_VALUES = 300_000  # distinct throughput values kept exactly; past it, the sketch
SKETCH_ERROR = 0.005  # relative error of a quantile once the sketch is in use
_GAMMA_LOG = math.log((1 + SKETCH_ERROR) / (1 - SKETCH_ERROR))
HISTOGRAM_BINS = 24


def _number(text: bytes) -> float | None:
    try:
        v = float(text)
    except ValueError:  # "[0-9.]+" also matches "1.2.3"
        return None
    return v if math.isfinite(v) else None


class DecodeStats:
    """The decode lines of one launch (or of a stretch of one, see merge)."""

    def __init__(self) -> None:
        self._keys: Counter[bytes] = Counter()  # printed "tp[, #queue-req: q]" -> lines
        self._more: list[Counter[bytes]] = []  # the keys of stretches merged in (combined only at the end)
        self._values: dict[float, int] = {}  # throughput -> lines, once keys were folded
        self._buckets: dict[int, int] | None = None  # the sketch: log-bucket index -> lines
        self._zeros = 0  # (the sketch's bucket for throughput 0)
        self._queue: int | None = None  # the largest queue among folded keys
        self._usage: bytes | None = None  # the highest token usage, as printed
        self.graph_line: dict[bool, int] = {}  # first line with `cuda graph: True` / `False`

    # -- reading -----------------------------------------------------------------------
    def add_line(self, text: str, number: int) -> None:
        """One line (the line-by-line path)."""
        if TP_LITERAL not in text:
            return
        raw = text.encode("utf-8", "replace")
        self._keys.update(_TPQ.findall(raw))
        if b"Decode batch" in raw:
            self._take_usage(_USAGE.findall(raw))
        for flag, literal in GRAPH_LITERALS.items():
            if flag not in self.graph_line and literal in raw:
                self.graph_line[flag] = number
        self._bound()

    def add_block(self, block: bytes, first_line: int, lo: int = 0, hi: int | None = None) -> None:
        """The lines of block[lo:hi] (whole lines; `first_line` is the number of block's first line)."""
        hi = len(block) if hi is None else hi
        if block.find(_TP_BYTES, lo, hi) < 0:
            return
        if not _plain(block, lo, hi):
            self._add_cleaned(block, first_line, lo, hi)
            return
        self._keys.update(_TPQ.findall(block, lo, hi))
        self._take_usage(_USAGE.findall(block, lo, hi))
        for flag, literal in GRAPH_LITERALS.items():
            if flag not in self.graph_line:
                at = block.find(literal, lo, hi)
                if at >= 0:
                    self.graph_line[flag] = first_line + block.count(b"\n", 0, at)
        self._bound()

    def _add_cleaned(self, block: bytes, first_line: int, lo: int, hi: int) -> None:
        """Lines with escapes or carriage returns: read as the line-by-line path reads them."""
        number = first_line + block.count(b"\n", 0, lo)
        pos = lo
        while pos < hi:
            nl = block.find(b"\n", pos, hi)
            end = hi if nl < 0 else nl
            if block.find(_TP_BYTES, pos, end) >= 0:
                self.add_line(decode_line(block[pos:end]), number)
            number += 1
            pos = end + 1

    def merge(self, other: DecodeStats) -> None:
        """Add another stretch's lines (its keys are kept as they are: no loop over them here)."""
        self._more += [k for k in (other._keys, *other._more) if k]
        for v, n in other._values.items():
            self._values[v] = self._values.get(v, 0) + n
        if other._buckets is not None:
            self._sketch()
            for k, n in other._buckets.items():
                self._buckets[k] = self._buckets.get(k, 0) + n  # type: ignore[index]
            self._zeros += other._zeros
        if other._queue is not None:
            self._queue = max(self._queue if self._queue is not None else other._queue, other._queue)
        if other._usage is not None:
            self._take_usage([other._usage])
        for flag, line in other.graph_line.items():
            self.graph_line[flag] = min(line, self.graph_line.get(flag, line))
        self._bound()

    def _take_usage(self, texts: list[bytes]) -> None:
        best = self._usage
        top = _number(best) if best is not None else None
        for t in set(texts):
            v = _number(t)
            if v is not None and (top is None or v > top):
                best, top = t, v
        self._usage = best

    def shift_lines(self, by: int) -> None:
        """Renumber the lines kept (a stretch read apart, numbered from 1)."""
        self.graph_line = {flag: line + by for flag, line in self.graph_line.items()}

    # -- bounded memory ----------------------------------------------------------------
    def _bound(self) -> None:
        if len(self._keys) + sum(map(len, self._more)) > MAX_KEYS:
            self._fold()

    def _parsed(self) -> tuple[list[float], list[int]]:
        """The printed keys as throughput values and their counts (the queue peak folded into
        self._queue), a few C-level passes rather than a loop in Python."""
        keys: list[bytes] = []
        counts: list[int] = []
        for part in (self._keys, *self._more):
            keys += part
            counts += part.values()
        parts = list(map(bytes.partition, keys, repeat(_QUEUE_SEP)))
        texts = list(map(itemgetter(0), parts))
        try:
            values = list(map(float, texts))
        except ValueError:  # a "1.2.3" among them: value by value, leaving out what is no number
            pairs = [(v, n) for v, n in zip(map(_number, texts), counts) if v is not None]
            values, counts = [v for v, _ in pairs], [n for _, n in pairs]
        queues = set(map(itemgetter(2), parts))
        queues.discard(b"")
        if queues:
            top = max(map(int, queues))
            self._queue = top if self._queue is None else max(self._queue, top)
        return values, counts

    def _fold(self) -> None:
        """Printed keys -> throughput values (or the sketch's buckets): memory stays bounded."""
        values, counts = self._parsed()
        self._keys.clear()
        self._more = []
        folded = self._values
        for v, n in zip(values, counts):
            folded[v] = folded.get(v, 0) + n
        if self._buckets is not None or len(folded) > MAX_VALUES:
            self._sketch()

    def _sketch(self) -> None:
        if self._buckets is None:
            self._buckets = {}
        for v, n in self._values.items():
            if v <= 0:
                self._zeros += n
            else:
                k = math.ceil(math.log(v) / _GAMMA_LOG)
                self._buckets[k] = self._buckets.get(k, 0) + n
        self._values = {}

    # -- results -----------------------------------------------------------------------
    @property
    def approximate(self) -> bool:
        return self._buckets is not None

    def _sorted(self) -> tuple[list[float], list[int]]:
        """Throughputs ascending and the cumulative line counts up to each: exact values, or the
        sketch's bucket midpoints."""
        if self._buckets is not None:
            self._fold()
            g = math.exp(_GAMMA_LOG)
            items = [(2 * g ** k / (g + 1), n) for k, n in sorted(self._buckets.items())]
            if self._zeros:
                items.insert(0, (0.0, self._zeros))
            return [v for v, _ in items], list(accumulate(n for _, n in items))
        values, counts = self._parsed()
        if self._values:
            values += self._values.keys()
            counts += self._values.values()
        order = sorted(range(len(values)), key=values.__getitem__)
        return list(map(values.__getitem__, order)), list(accumulate(map(counts.__getitem__, order)))

    def summary(self) -> dict[str, Any] | None:
        """lines, median, p10, p90, queue_peak, usage_peak, histogram, approximate (None: no decode line)."""
        values, cum = self._sorted()
        if not values:
            return None
        out: dict[str, Any] = {"lines": cum[-1]}
        for name, q in (("median", 0.5), ("p10", 0.1), ("p90", 0.9)):
            out[name] = round(quantile(values, cum, q), 6)
        out["queue_peak"] = self._queue
        out["usage_peak"] = _number(self._usage) if self._usage is not None else None
        out["histogram"] = histogram(values, cum, min(HISTOGRAM_BINS, cum[-1]))
        out["approximate"] = self.approximate
        return out


def _plain(block: bytes, lo: int, hi: int) -> bool:
    """No byte the line reader would change around a number: escapes, carriage returns mid-line."""
    if block.find(b"\x1b", lo, hi) >= 0:
        return False
    if block.find(b"\r", lo, hi) < 0:
        return True
    return block.count(b"\r", lo, hi) == block.count(b"\r\n", lo, hi)  # (CRLF line ends change nothing)


def quantile(values: list[float], cum: list[int], q: float) -> float:
    """The q-quantile of the observations given as sorted values and cumulative counts: linear
    between the order statistics at floor and ceil of (lines - 1) * q (polars' and numpy's "linear")."""
    total = cum[-1]
    h = (total - 1) * q
    lo = math.floor(h)
    a = values[bisect_right(cum, lo)]
    if h == lo:
        return a
    b = values[bisect_right(cum, lo + 1)]
    return a + (b - a) * (h - lo)


def histogram(values: list[float], cum: list[int], bins: int = HISTOGRAM_BINS) -> list[int]:
    """Lines per equal-width throughput bin from the lowest to the highest value."""
    lo, span = values[0], values[-1] - values[0]
    if not span:
        return [cum[-1]] + [0] * (bins - 1)

    def bin_of(v: float) -> int:
        return min(bins - 1, int((v - lo) / span * bins))

    out, below = [], 0
    for b in range(bins):
        i = bisect_right(values, b, key=bin_of)  # (bin_of rises with the value)
        upto = cum[i - 1] if i else 0
        out.append(upto - below)
        below = upto
    return out
