"""Import name -> PyPI distribution, backed by ``data/pypi-names.yaml``.

A log names modules (`cannot import name 'X' from 'flashinfer.sampling'`), a fix names the
distribution to install (`flashinfer-python`); rules map one to the other with `pypi(module)`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_DATA = Path(__file__).parent.parent / "data" / "pypi-names.yaml"


def _normalized(name: str) -> str:
    """PEP 503 normalization: pip treats flash_attn, Flash-Attn and flash.attn alike."""
    return re.sub(r"[-_.]+", "-", name).lower()


# One entry of the file: `import.name: distribution  # optional comment`. The file is a flat mapping
# of such lines (and comments), read without a YAML parser: a run that calls pypi() does not pay for
# importing one (yaml costs ~9 ms), and tests check it reads as YAML reads it.
_ENTRY = re.compile(r"([A-Za-z_][\w.]*):[ \t]+([A-Za-z0-9][\w.-]*)[ \t]*(?:#.*)?")


def parse(text: str) -> dict[str, str]:
    """The mapping the file states; ValueError naming the first line that is not an entry."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _ENTRY.fullmatch(line)
        if m is None:
            raise ValueError(f"{_DATA.name}:{n}: expected 'import.name: distribution'")
        out[m[1]] = m[2]
    return out


@lru_cache(maxsize=1)
def names() -> dict[str, str]:
    """The shipped map (import name -> distribution)."""
    return parse(_DATA.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _distributions() -> dict[str, str]:
    """Normalized distribution name -> as written, to accept a pip spelling (flashinfer_python)."""
    return {_normalized(d): d for d in names().values()}


_UNSET = object()


def distribution(module: str, default: object = _UNSET) -> object:
    """The distribution providing `module` (a dotted import name, or a pip name from a message).

    The longest dotted prefix the map knows wins (`google.protobuf.message` -> protobuf); a
    spelling of a known distribution is returned as that distribution; otherwise `default`,
    or without one the top-level name itself (most packages install under their own name).
    """
    if not isinstance(module, str) or not module.strip():
        raise TypeError("pypi() takes a module name")
    parts = module.strip().split(".")
    known = names()
    for n in range(len(parts), 0, -1):
        dist = known.get(".".join(parts[:n]))
        if dist:
            return dist
    dist = _distributions().get(_normalized(parts[0]))
    if dist:
        return dist
    return parts[0] if default is _UNSET else default
