"""One big log file over two processes.

Stage one (the scanner, line counts, decode statistics) is most of the work on a long log and
needs nothing but the bytes of a block. For a big regular file this process forks a second one
that does stage one for the second half (split at a line boundary) while this one analyses the
first half; it then feeds the few hit lines of the second half and adds its decode statistics
(engine/prescan.py). The report is the one a single pass gives (tests/test_decode_stats.py,
test_a_file_split_over_two_processes_gives_the_single_pass_report). When the second process
fails, this one reads the second half itself.
"""

from __future__ import annotations

import os
import sys
from typing import Any, BinaryIO, Callable, Iterator

from sglang_doctor.read.reader import iter_chunks

SPLIT_MIN_BYTES = 48 * 1024 * 1024  # below this the fork and the hand-back cost more than they save
_BOUNDARY_SEARCH = 4 * 1024 * 1024  # the first newline after the middle is looked for this far


class _Head:
    """The first `limit` bytes of a binary stream (the reader reads through read1)."""

    def __init__(self, fh: BinaryIO, limit: int) -> None:
        self.fh = fh
        self.left = limit

    def read1(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.fh.read1(n) if n > 0 else b""  # type: ignore[attr-defined]
        self.left -= len(data)
        return data

    read = read1


def _middle(fh: BinaryIO, size: int) -> int | None:
    """The offset just after the first newline past the middle, or None."""
    fh.seek(size // 2)
    data = fh.read(_BOUNDARY_SEARCH)
    nl = data.find(b"\n")
    fh.seek(0)
    if nl < 0 or size // 2 + nl + 1 >= size:
        return None
    rest = data[nl + 1:nl + 4]
    if rest.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):  # (the reader would take it for a BOM)
        return None
    return size // 2 + nl + 1


def start(name: str, stream: BinaryIO, scanner: Callable[[], Any]) -> Split | None:
    """A second process for the second half of `name` when that pays (None: read it all here).
    `scanner` gives the stage-one scanner: built before the fork, both processes use it."""
    mid = splittable(name, stream)
    if mid is None:
        return None
    compiled = scanner()
    if compiled is None:
        return None
    try:
        return Split(name, mid, compiled)
    except OSError:  # no fork here (limits, memory)
        return None


def splittable(name: str, stream: BinaryIO) -> int | None:
    """Where to split `name` (an open plain file), or None when it does not pay or cannot be done."""
    if name == "-" or not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2:
        return None  # (fork: shares the loaded rules and the compiled scanner; unsafe or absent elsewhere)
    try:
        size = os.fstat(stream.fileno()).st_size
        head = stream.peek(3)[:3] if hasattr(stream, "peek") else b""  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return None
    if size < SPLIT_MIN_BYTES or head[:2] in (b"\x1f\x8b", b"\xff\xfe", b"\xfe\xff") or not hasattr(stream, "raw"):
        return None  # (gzip, UTF-16, or not a plain file)
    try:
        return _middle(stream, size)
    except OSError:
        return None


class Split:
    """The second half of a file, analysed (stage one) by a forked process."""

    def __init__(self, path: str, mid: int, scanner: Any) -> None:
        from sglang_doctor.engine.prescan import prescan

        self.path, self.mid = path, mid
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: stage one of the second half, pickled into the pipe
            status = 1
            try:
                import signal

                signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends this one
                os.close(r)
                with open(path, "rb") as fh:
                    fh.seek(mid)
                    import pickle  # (here: a run that does not split never needs it)

                    data = pickle.dumps(prescan(iter_chunks(fh), scanner, mid), protocol=pickle.HIGHEST_PROTOCOL)
                view = memoryview(data)
                while view:
                    view = view[os.write(w, view):]
                status = 0
            finally:
                os._exit(status)
        os.close(w)
        self.fd = r
        self.size = os.path.getsize(path)
        self._fh: BinaryIO | None = None
        self.done = False

    def head(self, stream: BinaryIO) -> Any:
        """The first half of `stream`, for the reader."""
        return _Head(stream, self.mid)

    def progress(self, tick: Callable[[int], None] | None) -> Callable[[int], None] | None:
        """The progress of the whole file while this process reads its first half."""
        if tick is None:
            return None
        return lambda n: tick(n * self.size // self.mid)

    def close(self) -> None:
        """Stop the child if it still runs (an error, Ctrl-C), close what was opened."""
        if not self.done:
            import signal

            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            self._reap()
        if self._fh is not None:
            self._fh.close()

    def _reap(self) -> int:
        self.done = True
        os.close(self.fd)
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return -1

    def rest(self, interrupted: Callable[[], bool]) -> Callable[[int], Any]:
        """For engine.analyze.analyze_chunks: the second half, once the first is done."""

        def take(first_line: int) -> Any:
            if interrupted():
                self.close()
                return iter(())
            with os.fdopen(os.dup(self.fd), "rb") as pipe:
                data = pipe.read()
            if self._reap() == 0:
                try:
                    import pickle

                    return pickle.loads(data), self._reader()
                except Exception:  # (a child killed mid-write)
                    pass
            return self._chunks(first_line)  # the child failed: read the second half here

        return take

    def _reader(self) -> Callable[[int, int], bytes]:
        fh = self._fh = open(self.path, "rb")

        def read(offset: int, size: int) -> bytes:
            fh.seek(offset)
            return fh.read(size)

        return read

    def _chunks(self, first_line: int) -> Iterator[tuple[int, bytes]]:
        with open(self.path, "rb") as fh:
            fh.seek(self.mid)
            for first, block in iter_chunks(fh):
                yield first + first_line - 1, block
