"""Placeholders for stub packages (see ../envs.yaml, "stubs").

Any attribute of a stub module is a placeholder class, and any submodule of a stub package is a
stub module: `from pkg.a.b import X`, `X.Y`, subclassing and use as a dict key all work at import
time; calling or instantiating a placeholder raises, so a code path that really needs the stubbed
package fails loudly instead of passing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any


class _PlaceholderMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(f"{cls.__qualname__}.{name}", cls.__module__)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{cls.__module__}.{cls.__qualname__} is a stub in the real-parser test venv")


def placeholder(name: str, module: str) -> type:
    return _PlaceholderMeta(name, (), {"__module__": module, "__qualname__": name})


def module_getattr(module: str):
    """A PEP 562 module __getattr__ handing out placeholders."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(name, module)

    return __getattr__


class _SubmoduleStubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves every `<package>.<anything>` as an empty stub package."""

    def __init__(self, package: str) -> None:
        self.prefix = package + "."

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        if not fullname.startswith(self.prefix):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        mod = types.ModuleType(spec.name, "stub (real-parser test venv)")
        mod.__getattr__ = module_getattr(spec.name)  # type: ignore[attr-defined]
        mod.__path__ = []  # a package, so deeper submodules resolve through this finder too
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def stub_package(package: str) -> None:
    """Called from the stub package's __init__: its submodules come from the finder above."""
    sys.meta_path.append(_SubmoduleStubs(package))
