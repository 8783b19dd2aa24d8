"""Names SGLang imports from optional packages -> the package, backed by ``data/optional-imports.json``.

A log can name only the name: `NameError: name 'check_marlin_supported' is not defined` (SGLang
imported it from vllm inside `try: ... except ImportError:`, which left it undefined) or a cut
`ImportError: cannot import name 'sgl_per_token_group_quant_fp8'`. The map, built from the
release wheels by tools/extract_imports.py, gives the top-level import name of the package
(`vllm`, `sgl_kernel`); `pypi()` turns that into the distribution to install. It is read on the
first lookup only: most runs never make one.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

_DATA = Path(__file__).parent.parent / "data" / "optional-imports.json"


class Tables:
    """The map inverted for lookups: name -> top-level import name."""

    __slots__ = ("optional", "imported")

    def __init__(self, optional: dict[str, str], imported: dict[str, str]) -> None:
        self.optional = optional  # left undefined when the package failed to import
        self.imported = imported  # imported from the package anywhere but unconditionally


def _invert(table: object) -> dict[str, str]:
    if not isinstance(table, dict):
        raise ValueError("expected a mapping of package to names")
    out: dict[str, str] = {}
    for pkg, names in table.items():
        if not isinstance(pkg, str) or not isinstance(names, list):
            raise ValueError("expected a mapping of package to names")
        for n in names:
            if isinstance(n, str):
                out[n] = pkg
    return out


@lru_cache(maxsize=1)
def tables() -> Tables:
    """The shipped map; an unreadable one is empty (a lookup then knows nothing, nothing fails)."""
    try:
        data = json.loads(_DATA.read_text(encoding="utf-8"))
        return Tables(_invert(data["optional"]), _invert(data["imported"]))
    except (OSError, ValueError, KeyError, TypeError):
        return Tables({}, {})


def _name(name: object) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError("takes a Python name")
    return name


def optional_import(name: object) -> str:
    """The package SGLang imports `name` from inside try/except ImportError (so that a failed
    import leaves it undefined); ValueError when the map does not know it."""
    pkg = tables().optional.get(_name(name))
    if pkg is None:
        raise ValueError(f"{name!r} is not a name SGLang imports optionally")
    return pkg


def imported_from(name: object) -> str:
    """The package SGLang imports `name` from (other than unconditionally at module level: in a
    try, under a platform test, inside a function); ValueError when the map does not know it."""
    pkg = tables().imported.get(_name(name))
    if pkg is None:
        raise ValueError(f"{name!r} is not a name SGLang imports from an optional package")
    return pkg
