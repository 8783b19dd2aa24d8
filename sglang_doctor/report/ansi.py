"""Terminal styling for the text report: a few ANSI SGR codes, decided once per stream.

Hand-written rather than rich: the report needs bold, dim and four colours, and importing
rich costs more than the whole analysis of a short log (rich still draws the progress bar).
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
DEFAULT_WIDTH = 80


def wants_color(out: TextIO, color: bool | None) -> bool:
    """--color/--no-color win; else NO_COLOR off, FORCE_COLOR on, else only on a terminal."""
    if color is not None:
        return color
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM") != "dumb" and _terminal_takes_ansi()


def _terminal_takes_ansi() -> bool:
    if sys.platform != "win32":
        return True
    try:  # Windows 10+: turn on the console's VT processing for this process
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.GetStdHandle(-11)
        mode = ctypes.c_uint32()
        if not kernel32.GetConsoleMode(handle, ctypes.byref(mode)):
            return False
        return bool(kernel32.SetConsoleMode(handle, mode.value | 0x0004))
    except Exception:
        return False


def terminal_width(out: TextIO, width: int | None = None) -> int:
    if width:
        return width
    try:
        if out.isatty():
            return os.get_terminal_size(out.fileno()).columns
    except (AttributeError, ValueError, OSError):
        pass
    try:
        return int(os.environ.get("COLUMNS", "")) or DEFAULT_WIDTH
    except ValueError:
        return DEFAULT_WIDTH


class Painter:
    """`paint(text, "bold red")`: the text wrapped in SGR codes when colour is on."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, style: str = "") -> str:
        if not self.on or not style or not text:
            return text
        codes = ";".join(_SGR[word] for word in style.split())
        return f"\x1b[{codes}m{text}\x1b[0m"
