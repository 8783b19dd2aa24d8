"""Import name -> PyPI distribution, backed by ``data/pypi-names.yaml``.

A log names modules (`cannot import name 'X' from 'flashinfer.sampling'`), a fix names the
distribution to install (`flashinfer-python`); rules map one to the other with `pypi(module)`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_DATA = Path(__file__).parent / "data" / "pypi-names.yaml"


def _normalized(name: str) -> str:
    """PEP 503 normalization: pip treats flash_attn, Flash-Attn and flash.attn alike."""
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=1)
def names() -> dict[str, str]:
    """The shipped map (import name -> distribution)."""
    import yaml  # (here: most runs never call pypi(), and yaml costs ~9 ms to import)

    data = yaml.safe_load(_DATA.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"{_DATA.name}: expected a mapping of import name to distribution name")
    return data


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
