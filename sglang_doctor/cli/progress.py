"""A progress bar on stderr while a long input is read.

Only for the text format, only when stderr is a terminal, never with --quiet: pipes, CI
logs and machine formats stay clean. A plain file of MIN_BYTES or less gets no callback
at all; for longer ones (and for .gz files and pipes, whose text size is unknown up front)
the engine calls back after each 1 MB block, and the bar is drawn at most every REFRESH_S
- not at all for an input read within REFRESH_S (no flicker, and rich.progress is not even
imported). The bar is transient: it is erased before the report is written.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from typing import Any, Callable

MIN_BYTES = 50 * 1024 * 1024
REFRESH_S = 0.25


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def progress_for(fmt: str, quiet: bool, color: bool | None = None) -> ScanProgress | None:
    """A progress display for this run, or None when it must not show one."""
    if fmt != "text" or quiet or not stderr_is_tty():
        return None
    return ScanProgress(color)


def _regular_size(fh: Any) -> int | None:
    try:
        st = os.fstat(fh.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _per_second(rate: float) -> str:
    from rich.filesize import decimal

    return f"{decimal(int(rate))}/s"


class ScanProgress:
    """One transient rich Progress on stderr; a task per long input."""

    def __init__(self, color: bool | None = None, file: Any = None) -> None:
        self._file = file if file is not None else sys.stderr
        self._color = color
        self._bar: Any = None
        self._started = False
        self._last: int | None = None  # the task of the input being read

    def start(self, name: str, stream: Any) -> Callable[[int], None] | None:
        """The callback for one input: called with the bytes of text read so far."""
        self._done_previous()
        raw = getattr(stream, "fileobj", None) or stream  # a GzipFile reads its compressed file
        total = _regular_size(raw)
        gz = raw is not stream
        if total is not None and total <= MIN_BYTES and not gz:
            return None
        position: Callable[[int], int] = (lambda done: raw.tell()) if total is not None else (lambda done: done)
        task: list[int] = []
        next_at = [time.monotonic() + REFRESH_S]
        last: list[float] = []  # time and position of the previous frame, then the smoothed rate

        def tick(done: int) -> None:
            if not task and (total or 0) <= MIN_BYTES and done <= MIN_BYTES:
                return
            now = time.monotonic()
            if now < next_at[0]:
                return
            next_at[0] = now + REFRESH_S
            try:
                pos = position(done)
            except (OSError, ValueError):
                pos = done
            # Bytes/s between frames, smoothed; not on the first frame, whose interval also
            # holds the start-up (building the scanner).
            rate = left = ""
            if last:
                r = (pos - last[1]) / max(now - last[0], 1e-6)
                last[2] = r if last[2] < 0 else 0.5 * last[2] + 0.5 * r
                rate = _per_second(last[2])
                if total and last[2] > 0 and pos < total:
                    left = f"{(total - pos) / last[2]:.0f} s left"
                last[0], last[1] = now, pos
            else:
                last.extend((now, pos, -1.0))
            if task:
                self._bar.update(task[0], completed=pos, rate=rate, left=left)
                self._bar.refresh()
            else:
                task.append(self._add(name, total, completed=pos, rate=rate, left=left))
                self._last = task[0]

        return tick

    def _add(self, name: str, total: int | None, **fields: Any) -> int:
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

            console = Console(file=self._file, force_terminal=True, no_color=(self._color is False) or None,
                              highlight=False)
            # Speed and time left are computed here (whole-input average): rich's own columns
            # need several samples, and the bar is redrawn only a few times per second.
            self._bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
                                 TextColumn("[red]{task.fields[rate]}"), TextColumn("[cyan]{task.fields[left]}"),
                                 console=console, transient=True, auto_refresh=False,
                                 redirect_stdout=False, redirect_stderr=False)
        label = os.path.basename(name) or name
        task = int(self._bar.add_task(label if len(label) <= 40 else "…" + label[-39:], total=total, **fields))
        if self._started:
            self._bar.refresh()
        else:  # the first frame already has the numbers
            self._bar.start()
            self._started = True
        return task

    def _done_previous(self) -> None:
        """The next input starts: the bar of the previous one goes."""
        if self._bar is not None and self._last is not None:
            self._bar.remove_task(self._last)
        self._last = None

    def close(self) -> None:
        """Erase the bar (call before the report is written, and on Ctrl-C)."""
        if self._bar is not None and self._started:
            self._bar.stop()
        self._bar, self._started = None, False
