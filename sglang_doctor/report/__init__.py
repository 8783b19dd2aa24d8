"""Reporters: one module per output format, all rendering the same Report."""

from __future__ import annotations

from typing import Callable, TextIO

from ..model import Report

FORMATS = ("text", "json")


def get_reporter(fmt: str) -> Callable[..., None]:
    if fmt == "json":
        from .json_out import write
    else:
        from .text import write
    return write


def write_report(report: Report, fmt: str, out: TextIO, **kw: object) -> None:
    get_reporter(fmt)(report, out, **kw)
