"""Reporters: one module per output format, all rendering the same (already redacted) Report.

Every reporter is `write(report, out, **kw)`; keywords a format does not use are ignored:
`quiet`, `color` (text), `fail_on` (which severities are failures: junit), `rules` (the
loaded Rule objects, for the rule descriptors of sarif).
"""

from __future__ import annotations

from importlib import import_module
from typing import Callable, TextIO

from sglang_doctor.model import FORMATS, Report  # noqa: F401  (FORMATS: the formats this package renders)
_MODULE = {"text": "text", "json": "json_out", "sarif": "sarif", "github": "github",
           "markdown": "markdown", "junit": "junit"}


def get_reporter(fmt: str) -> Callable[..., None]:
    return import_module(f".{_MODULE.get(fmt, 'text')}", __name__).write  # type: ignore[no-any-return]


def write_report(report: Report, fmt: str, out: TextIO, **kw: object) -> None:
    get_reporter(fmt)(report, out, **kw)
