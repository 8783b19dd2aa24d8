"""Importing a standard module without the module it imports but seldom calls.

`dataclasses` imports `inspect` (with ast, dis, tokenize: ~7 ms) only to write a docstring for
a class that has none; `pathlib` imports `urllib.parse` (with ipaddress: ~2 ms) only for
`Path.as_uri()`. A run calls neither, yet paid both on every start. `import_with_stand_in`
imports the module while a stand-in takes the seldom-used one's place in `sys.modules`: an
attribute of the stand-in imports the real module on first use (a name the importer takes with
`from … import` becomes a function that does so when called). The stand-in leaves
`sys.modules` as soon as the import is done, so anything else importing the module later gets
the real one; only the importer keeps the stand-in.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Callable


class StandIn(types.ModuleType):
    """A module that becomes the real `self.__name__` on first use."""

    def __init__(self, name: str, functions: tuple[str, ...] = ()) -> None:
        super().__init__(name)
        for fn in functions:  # what the importer takes by name: callables that resolve when called
            setattr(self, fn, _forward(name, fn))

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # the import system's own probes (`__path__`…): not a use
            raise AttributeError(attr)
        return getattr(_real(self.__name__), attr)


def _real(name: str) -> types.ModuleType:
    import importlib

    return importlib.import_module(name)


def _forward(module: str, name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(_real(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def import_with_stand_in(name: str, seldom: str, functions: tuple[str, ...] = ()) -> types.ModuleType:
    """`import name`, with `seldom` a stand-in for as long as that takes (when neither is imported yet;
    `functions`: what `name` takes from `seldom` with `from … import`)."""
    import importlib

    if name in sys.modules or seldom in sys.modules:
        return importlib.import_module(name)
    stand_in = sys.modules[seldom] = StandIn(seldom, functions)
    try:
        return importlib.import_module(name)
    finally:
        if sys.modules.get(seldom) is stand_in:  # later imports of it get the real module
            del sys.modules[seldom]


# (importer, the module it seldom calls, what it takes from that module by name)
SELDOM = (("dataclasses", "inspect", ()), ("pathlib", "urllib.parse", ("quote_from_bytes",)))


def install() -> None:
    """Import the modules of SELDOM with their stand-ins (the command's entry point, first thing)."""
    from sglang_doctor._speed import ENABLED

    if ENABLED:
        for name, seldom, functions in SELDOM:
            import_with_stand_in(name, seldom, functions)
