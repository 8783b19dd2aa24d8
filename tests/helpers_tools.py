"""Loading a script of tools/ (the catalog generators) as a module, for the tests of its output."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def load_tool(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "tools"))  # (a tool imports its sibling helpers)
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # (its dataclasses look their module up there)
    spec.loader.exec_module(mod)
    return mod
