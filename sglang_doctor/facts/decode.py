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
whole lines; the fast path). On the fast path one pass of the compiled scan (_speed/_native.c,
built where a C compiler is) counts the throughputs and finds the peaks and the first CUDA-graph
lines; without it the throughputs are one `findall` over the block and the peaks (usage, queue) are
looked for only above the highest seen so far, by a small Hyperscan database (`_Probe`), each of its
few hits read exactly on its line. Both read what the regexes below read (tests/test_native.py).

SGLang prints a throughput with two decimals (`:.2f`), so a value is a whole number of hundredths:
the exact histogram is an array of line counts indexed by hundredths (`_cents`, at most CENTS_CAP
entries), once a stretch has more than SPARSE_MAX distinct values (before that, a `Counter` of
hundredths: a launch of a few decode lines at 20,000 tok/s does not hold a 16 MB array). Counting
into the array costs about a fifth of a `Counter` keyed on the printed text (measured: 0.1 s against
0.5 s for 824,088 values, 118,792 distinct), and its order is its index: no sort at the end, and a
compact hand-over between processes. A value above the cap or printed otherwise goes
to a `Counter` keyed on its text; past MAX_KEYS of those it becomes a log-bucket sketch of relative
error ≤ SKETCH_ERROR, and the summary says so (`approximate`).
"""

from __future__ import annotations

import math
import re
from array import array
from bisect import bisect_right
from collections import Counter
from itertools import accumulate, compress, repeat
from operator import add, truediv
from typing import Any

from sglang_doctor._speed import native
from sglang_doctor.read.reader import decode_line


TP_LITERAL = "gen throughput (token/s): "
_TP_BYTES = TP_LITERAL.encode()
_TP = re.compile(rb"gen throughput \(token/s\): ([0-9.]+)")
_QUEUE = re.compile(rb"gen throughput \(token/s\): [0-9.]+, #queue-req: (\d+)")
_USAGE = re.compile(rb"Decode batch(?: \[\d+\])?[,.] #running-req: \d+, #(?:full |gpu )?token: \d+, "
                    rb"(?:full |gpu )?token usage: ([0-9.]+)")
GRAPH_LITERALS = {True: b"cuda graph: True, " + _TP_BYTES, False: b"cuda graph: False, " + _TP_BYTES}

CENTS_CAP = 1 << 21  # hundredths counted in the array: values below 20,971.52 tok/s (at most 16 MB)
_CENTS_START = 1 << 16  # its first size; it doubles as larger values come
SPARSE_MAX = 4096  # distinct hundredths kept in a Counter before the array
DENSE_AFTER = 1 << 16  # or lines counted in it (the compiled path counts into the array only)
_CENTS_FORM = re.compile(rb"(?:[0-9]+\.[0-9][0-9],)*[0-9]+\.[0-9][0-9]")  # every value with two decimals
MAX_KEYS = 300_000  # other printed throughputs kept exactly (~35 MB); past it, the sketch
SKETCH_ERROR = 0.005  # relative error of a quantile once the sketch is in use
_GAMMA_LOG = math.log((1 + SKETCH_ERROR) / (1 - SKETCH_ERROR))
HISTOGRAM_BINS = 24
PROBE_AFTER = 8 * 1024 * 1024  # bytes of decode-bearing blocks read exactly before the probe is built
PROBE_HITS = 64  # a stretch where the peak probe stops more often is read whole (findall)
PROBE_STALE = 8  # after a stretch with more hits than this the probe is rebuilt for the new peaks


def _number(text: bytes) -> float | None:
    try:
        v = float(text)
    except ValueError:  # "[0-9.]+" also matches "1.2.3"
        return None
    return v if math.isfinite(v) else None


def _higher(best: bytes | None, texts: Any) -> bytes | None:
    """The printed number of the largest value among `best` and `texts`."""
    top = _number(best) if best is not None else None
    for t in set(texts):
        v = _number(t)
        if v is not None and (top is None or v > top):
            best, top = t, v
    return best


class DecodeStats:
    """The decode lines of one launch (or of a stretch of one, see merge)."""

    def __init__(self) -> None:
        self._sparse: Counter[int] = Counter()  # hundredths -> lines, while there are few distinct ones
        self._sparse_lines = 0  # (lines counted there: past DENSE_AFTER the array is cheaper)
        self._cents = array("Q")  # then: hundredths -> lines (values printed with two decimals, below the cap)
        self._merged: list[array[int]] = []  # other stretches' arrays, added up only where a summary looks
        self._tp: Counter[bytes] = Counter()  # any other printed throughput -> lines
        self._buckets: dict[int, int] | None = None  # the sketch: log-bucket index -> lines
        self._zeros = 0  # (the sketch's count of throughput 0)
        self._usage: bytes | None = None  # the highest token usage, as printed
        self._queue: bytes | None = None  # the longest queue, as printed
        self._probed: tuple[bytes | None, bytes | None] = (None, None)  # the peaks the probe looks above
        self._read = 0  # bytes of blocks read (the probe costs a compile: only for long inputs)
        self.graph_line: dict[bool, int] = {}  # first line with `cuda graph: True` / `False`

    # -- reading -----------------------------------------------------------------------
    def add_line(self, text: str, number: int) -> None:
        """One line (the line-by-line path)."""
        if TP_LITERAL not in text:
            return
        raw = text.encode("utf-8", "replace")
        self._count(_TP.findall(raw))
        self._peaks_exact(raw, 0, len(raw))
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
        compiled = native()
        if compiled is not None:
            others, usage, queue, *graphs = compiled.decode_scan(block, lo, hi, self._cents)
            self._count(others)
            self._usage = _higher(self._usage, [usage] if usage is not None else [])
            self._queue = _higher(self._queue, [queue] if queue is not None else [])
        else:
            self._count(_TP.findall(block, lo, hi))
            self._peaks(block, lo, hi)
            graphs = [block.find(GRAPH_LITERALS[flag], lo, hi) if flag not in self.graph_line else -1
                      for flag in (False, True)]
        for flag, at in zip((False, True), graphs):
            if at >= 0 and flag not in self.graph_line:
                self.graph_line[flag] = first_line + block.count(b"\n", 0, at)
        self._bound()

    def _count(self, values: list[bytes]) -> None:
        """Count printed throughputs: into the array when all have two decimals (the C-level join,
        replace and split turn them into hundredths), one by one otherwise."""
        if not values:
            return
        joined = b",".join(values)
        if _CENTS_FORM.fullmatch(joined):
            self._count_cents(map(int, joined.translate(None, b".").split(b",")))
            return
        for text in values:
            if _CENTS_FORM.fullmatch(text):
                self._count_cents([int(text.replace(b".", b""))])
            else:
                self._tp[text] += 1

    def _count_cents(self, cents: Any) -> None:
        if not self._cents:
            sparse = self._sparse
            n = 0
            for n, v in enumerate(cents, 1):
                if v < CENTS_CAP:
                    sparse[v] += 1
                else:
                    self._past_cap(v)
            self._sparse_lines += n
            if len(sparse) > SPARSE_MAX or self._sparse_lines > DENSE_AFTER:
                self._densify()
            return
        counts = self._cents
        it = iter(cents)
        while True:
            try:
                for v in it:
                    counts[v] += 1
                return
            except IndexError:  # (v is the value past the end: grow the array, or past the cap)
                if v >= CENTS_CAP:
                    self._past_cap(v)
                else:
                    self._grow(v)
                    counts[v] += 1

    def _past_cap(self, v: int) -> None:
        self._tp[b"%d.%02d" % divmod(v, 100)] += 1

    def _grow(self, v: int) -> None:
        """The array long enough to hold hundredths v (v < CENTS_CAP): a power of two from _CENTS_START."""
        counts = self._cents
        size = _CENTS_START
        while size <= v:
            size *= 2
        if len(counts) < size:
            counts.frombytes(bytes(counts.itemsize * (min(size, CENTS_CAP) - len(counts))))

    def _densify(self) -> None:
        """The sparse counts into the array."""
        sparse, self._sparse = self._sparse, Counter()
        self._sparse_lines = 0
        self._grow(max(sparse))
        counts = self._cents
        for v, n in sparse.items():
            counts[v] += n

    def _peaks_exact(self, block: bytes, lo: int, hi: int) -> None:
        if block.find(b"Decode batch", lo, hi) >= 0:
            self._usage = _higher(self._usage, _USAGE.findall(block, lo, hi))
        self._queue = _higher(self._queue, _QUEUE.findall(block, lo, hi))

    def _peaks(self, block: bytes, lo: int, hi: int) -> None:
        """Usage and queue peaks of block[lo:hi]: the lines the probe finds above the peaks it was
        built for, read exactly; the whole stretch when it finds many."""
        self._read += hi - lo
        probe = _probe(self._probed) if self._read > PROBE_AFTER else None
        ends = probe.scan(block, lo, hi) if probe is not None else None
        if ends is None or len(ends) > PROBE_HITS:
            self._peaks_exact(block, lo, hi)
            self._probed = (self._usage, self._queue)
            return
        done = -1
        for end in ends:
            start = block.rfind(b"\n", lo, end) + 1 or lo
            if start == done:
                continue
            done = start
            stop = block.find(b"\n", end, hi)
            self._peaks_exact(block, start, hi if stop < 0 else stop)
        if len(ends) > PROBE_STALE:
            self._probed = (self._usage, self._queue)

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
        """Add another stretch's lines."""
        self._merged += [c for c in (other._cents, *other._merged) if len(c)]  # (`other` is not read again)
        self._sparse.update(other._sparse)
        if len(self._sparse) > SPARSE_MAX:
            self._densify()
        mine, theirs = self._tp, other._tp
        if len(theirs) > len(mine):  # (Counter.update loops in Python over what it adds: the smaller)
            mine, theirs = theirs.copy(), mine
        mine.update(theirs)
        self._tp = mine
        if other._buckets is not None:
            self._sketch()
            for k, n in other._buckets.items():
                self._buckets[k] = self._buckets.get(k, 0) + n  # type: ignore[index]
            self._zeros += other._zeros
        self._usage = _higher(self._usage, [other._usage] if other._usage is not None else [])
        self._queue = _higher(self._queue, [other._queue] if other._queue is not None else [])
        for flag, line in other.graph_line.items():
            self.graph_line[flag] = min(line, self.graph_line.get(flag, line))
        self._bound()

    def shift_lines(self, by: int) -> None:
        """Renumber the lines kept (a stretch read apart, numbered from 1)."""
        self.graph_line = {flag: line + by for flag, line in self.graph_line.items()}

    # -- bounded memory ----------------------------------------------------------------
    def _bound(self) -> None:
        if len(self._tp) > MAX_KEYS or (self._buckets is not None and self._tp):
            self._sketch()

    def _sketch(self) -> None:
        """Printed throughputs -> log buckets: from here on the quantiles are within SKETCH_ERROR."""
        if self._buckets is None:
            self._buckets = {}
        self._zeros += _into_buckets(self._buckets, ((v, n) for k, n in self._tp.items()
                                                     if (v := _number(k)) is not None))
        self._tp = Counter()

    def _arrays(self) -> list[array[int]]:
        return [c for c in (self._cents, *self._merged) if len(c)]

    def _exact(self) -> tuple[list[float], list[int]]:
        """Every value counted exactly, ascending, and its lines: the arrays' and the sparse hundredths
        (hundredths / 100: the float `float(text)` gives) and the other printed values."""
        parts = self._arrays()
        counts = parts[0] if len(parts) == 1 else _added(parts) if parts else array("Q")
        present = list(compress(range(len(counts)), counts))
        values, found = list(map(truediv, present, repeat(100))), [counts[i] for i in present]
        others = [(v / 100, n) for v, n in self._sparse.items()]
        others += [(v, n) for k, n in self._tp.items() if (v := _number(k)) is not None]
        if not others:
            return values, found
        every = dict(zip(values, found))
        for v, n in others:
            every[v] = every.get(v, 0) + n
        ordered = sorted(every)
        return ordered, [every[v] for v in ordered]

    # -- results -----------------------------------------------------------------------
    @property
    def approximate(self) -> bool:
        return self._buckets is not None

    def _sorted(self) -> tuple[list[float], list[int]]:
        """Throughputs ascending and the cumulative line counts up to each: exact values, or the
        sketch's bucket midpoints."""
        if self._buckets is not None:
            self._sketch()  # (the printed values into the buckets first: _exact then holds the hundredths)
            buckets = dict(self._buckets)  # (with the hundredths' values; the counts stay as they are)
            zeros = self._zeros + _into_buckets(buckets, zip(*self._exact()))
            g = math.exp(_GAMMA_LOG)
            items = [(2 * g ** k / (g + 1), n) for k, n in sorted(buckets.items())]
            if zeros:
                items.insert(0, (0.0, zeros))
            return [v for v, _ in items], list(accumulate(n for _, n in items))
        values, counts = self._exact()
        return values, list(accumulate(counts))

    def distribution(self) -> _Listed | _Hundredths | None:
        """The throughputs, as the summary reads them (None: no decode line)."""
        if self._buckets is None and not self._tp:  # (hundredths alone: arrays read where the summary looks)
            if self._sparse and self._arrays():
                self._densify()
            parts = self._arrays()
            if parts:
                return _Hundredths(parts)
        values, cum = self._sorted()
        return _Listed(values, cum) if values else None

    def summary(self) -> dict[str, Any] | None:
        """lines, median, p10, p90, queue_peak, usage_peak, histogram, approximate (None: no decode line)."""
        dist = self.distribution()
        if dist is None:
            return None
        out: dict[str, Any] = {"lines": dist.total}
        for name, q in (("median", 0.5), ("p10", 0.1), ("p90", 0.9)):
            out[name] = round(quantile(dist, q), 6)
        out["queue_peak"] = int(self._queue) if self._queue is not None else None
        out["usage_peak"] = _number(self._usage) if self._usage is not None else None
        out["histogram"] = histogram(dist, min(HISTOGRAM_BINS, dist.total))
        out["approximate"] = self.approximate
        return out


def _added(parts: list[array[int]]) -> array[int]:
    """Arrays of counts added up (C-level: ~25 ms a million entries)."""
    out = array("Q", parts[0])
    for p in parts[1:]:
        a, b = (out, p) if len(out) >= len(p) else (p, out)
        added = array("Q", map(add, a, b))
        added.extend(a[len(b):])
        out = added
    return out


class _Listed:
    """Distinct values ascending and the cumulative line counts up to each."""

    def __init__(self, values: list[float], cum: list[int]) -> None:
        self.values, self.cum, self.total = values, cum, cum[-1]

    def before(self, k: int) -> int:
        """Lines whose value is one of the first k."""
        return self.cum[k - 1] if k else 0

    def index_of_rank(self, r: int) -> int:
        """The index of the value of the r-th line (0-based) in ascending order."""
        return bisect_right(self.cum, r)


class _Hundredths:
    """Arrays of line counts by hundredths, read without adding them up entry by entry: sums of
    chunks of CHUNK entries, and one chunk added up where a quantile or a histogram edge falls.
    `values` are the hundredths from the lowest to the highest with a line (some have none)."""

    CHUNK = 4096

    def __init__(self, parts: list[array[int]]) -> None:
        self.parts = parts
        size = max(len(p) for p in parts)
        ch = self.CHUNK
        self.cum = list(accumulate(sum(sum(p[c:c + ch]) for p in parts) for c in range(0, size, ch)))
        self.total = self.cum[-1]
        first = bisect_right(self.cum, 0)  # the first chunk with a line, and the last
        last = bisect_right(self.cum, self.total - 1)
        lo = first * ch + next(i for i, n in enumerate(self._chunk(first)) if n)
        hi = last * ch + max(i for i, n in enumerate(self._chunk(last)) if n)
        self.lo = lo
        self.values = _Scaled(lo, hi - lo + 1)

    def _chunk(self, c: int) -> list[int]:
        """The added-up counts of chunk c."""
        ch = self.CHUNK
        out = [0] * ch
        for p in self.parts:
            seg = p[c * ch:(c + 1) * ch]
            out[:len(seg)] = map(add, out, seg)
        return out

    def before(self, k: int) -> int:
        i = self.lo + k  # lines below hundredths i
        c, r = divmod(i, self.CHUNK)
        return (self.cum[c - 1] if c else 0) + (sum(self._chunk(c)[:r]) if r else 0)

    def index_of_rank(self, r: int) -> int:
        c = bisect_right(self.cum, r)
        below = self.cum[c - 1] if c else 0
        for j, n in enumerate(accumulate(self._chunk(c))):
            if below + n > r:
                return c * self.CHUNK + j - self.lo
        raise IndexError(r)  # (cannot happen: chunk c holds the line)


class _Scaled:
    """The values lo/100, (lo+1)/100, …: a sequence for bisect, never built."""

    def __init__(self, lo: int, n: int) -> None:
        self.lo, self.n = lo, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> float:
        if k < 0:
            k += self.n
        if not 0 <= k < self.n:
            raise IndexError(k)
        return (self.lo + k) / 100


class _Probe:
    """A Hyperscan database of two patterns, a token usage above one printed number and a queue above
    another; it may also stop at lines that are not decode lines or at numbers that are not above (the
    caller reads the line), and never passes over one that is."""

    def __init__(self, usage: bytes | None, queue: bytes | None) -> None:
        import hyperscan

        above_usage = greater_than(usage.decode()) if usage is not None else "[0-9.]"
        above_queue = greater_than(queue.decode()) if queue is not None else r"\d"
        patterns = [f"token usage: {above_usage}".encode(), f"#queue-req: {above_queue}".encode()]
        self.db = hyperscan.Database()
        self.db.compile(expressions=patterns, ids=[0, 1], elements=2, flags=[0, 0])

    def scan(self, block: bytes, lo: int, hi: int) -> list[int]:
        """End offsets (in `block`) of the matches in block[lo:hi], ascending."""
        ends: list[int] = []
        self.db.scan(memoryview(block)[lo:hi], match_event_handler=lambda _i, _f, to, _fl, _c: ends.append(lo + to))
        ends.sort()
        return ends


_PROBES: dict[tuple[bytes | None, bytes | None], _Probe | None] = {}


def _probe(peaks: tuple[bytes | None, bytes | None]) -> _Probe | None:
    """The probe for these peaks (None: no Hyperscan here; the caller reads every line)."""
    if peaks not in _PROBES:
        if len(_PROBES) > 32:
            _PROBES.clear()
        from sglang_doctor._speed import ENABLED

        try:
            _PROBES[peaks] = _Probe(*peaks) if ENABLED else None
        except Exception:  # no hyperscan wheel, or it refuses: read every line
            _PROBES[peaks] = None
    return _PROBES[peaks]


def _into_buckets(buckets: dict[int, int], items: Any) -> int:
    """Add (value, lines) pairs to log buckets; the lines of the values at or below zero."""
    zeros = 0
    for v, n in items:
        if v <= 0:
            zeros += n
        else:
            k = math.ceil(math.log(v) / _GAMMA_LOG)
            buckets[k] = buckets.get(k, 0) + n
    return zeros


def _plain(block: bytes, lo: int, hi: int) -> bool:
    """No byte the line reader would change around a number: escapes, carriage returns mid-line."""
    if block.find(b"\x1b", lo, hi) >= 0:
        return False
    if block.find(b"\r", lo, hi) < 0:
        return True
    return block.count(b"\r", lo, hi) == block.count(b"\r\n", lo, hi)  # (CRLF line ends change nothing)


def quantile(dist: _Listed | _Hundredths, q: float) -> float:
    """The q-quantile of the lines: linear between the order statistics at floor and ceil of
    (lines - 1) * q (polars' and numpy's "linear")."""
    h = (dist.total - 1) * q
    lo = math.floor(h)
    a = dist.values[dist.index_of_rank(lo)]
    if h == lo:
        return a
    b = dist.values[dist.index_of_rank(lo + 1)]
    return a + (b - a) * (h - lo)


def histogram(dist: _Listed | _Hundredths, bins: int = HISTOGRAM_BINS) -> list[int]:
    """Lines per equal-width throughput bin from the lowest to the highest value."""
    values = dist.values
    lo, span = values[0], values[-1] - values[0]
    if not span:
        return [dist.total] + [0] * (bins - 1)

    def bin_of(v: float) -> int:
        return min(bins - 1, int((v - lo) / span * bins))

    out, below = [], 0
    for b in range(bins):
        upto = dist.before(bisect_right(values, b, key=bin_of))  # (bin_of rises with the value)
        out.append(upto - below)
        below = upto
    return out


def greater_than(number: str) -> str:
    """A regex that matches, at its start, every run of [0-9.]+ whose value is above `number` (a
    non-negative decimal such as "0.9" or "12"): more integer digits, a larger digit at the first place
    the integer parts differ, or the same integer part and a larger fraction. Leading zeros allowed."""
    whole, _, frac = number.partition(".")
    whole, frac = whole.lstrip("0"), frac.rstrip("0")
    out = []
    if whole:
        out.append(rf"0*[1-9]\d{{{len(whole)},}}")  # more digits
        for i, d in enumerate(whole):
            if d != "9":
                rest = len(whole) - i - 1
                out.append(f"0*{whole[:i]}[{int(d) + 1}-9]" + (rf"\d{{{rest}}}" if rest else ""))
    else:
        out.append("0*[1-9]")  # any integer part above zero
    for i, d in enumerate(frac):
        if d != "9":
            out.append(rf"0*{whole}\.{frac[:i]}[{int(d) + 1}-9]")
    out.append(rf"0*{whole}\.{frac}\d*[1-9]")  # the same digits, then more that are not all zero
    return "(?:" + "|".join(out) + ")"
