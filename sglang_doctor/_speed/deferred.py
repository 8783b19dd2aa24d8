"""`@deferred_dataclass(...)`: a dataclass whose generated methods are made when first needed.

The rule schema's classes are dataclasses (pydantic validates rule files against them), but
a run that loads the rule set from its cache only unpickles their instances (no __init__)
and reads attributes. Generating `__init__`, `__repr__`, `__setattr__` and the rest costs
about 0.7 ms a class on every start, a tenth of a cold start for the schema alone; a
deferred class gets them on its first construction, or from `materialize()`, which
anything that introspects the classes (validation, `dataclasses.fields`) calls first.

Until then an instance is a plain object with the same attributes: equality is identity
(so the schema declares `eq=False` and means it either way), and a frozen class does not
yet refuse attribute assignment.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, TypeVar

try:
    from typing import dataclass_transform
except ImportError:  # pragma: no cover - Python 3.10: only a marker for type checkers
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:  # type: ignore[no-redef]
        return lambda f: f

T = TypeVar("T", bound=type)
_PENDING: dict[type, dict[str, Any]] = {}


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def deferred_dataclass(**options: Any) -> Callable[[T], T]:
    """Like `@dataclass(**options)`; the class is processed on first construction."""

    def wrap(cls: T) -> T:
        _PENDING[cls] = options

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            materialize(cls)
            cls.__init__(self, *args, **kwargs)  # type: ignore[misc]

        cls.__init__ = __init__  # type: ignore[misc]
        return cls

    return wrap


def materialize(*classes: type) -> None:
    """Make the dataclass methods of these deferred classes (of all of them: no argument)."""
    for cls in classes or list(_PENDING):
        options = _PENDING.pop(cls, None)
        if options is not None:
            del cls.__init__  # type: ignore[misc]  # dataclass() keeps a class's own __init__
            dataclasses.dataclass(**options)(cls)
