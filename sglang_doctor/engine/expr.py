"""A small, safe expression language for rule files.

Rules compute fix values from captured numbers and context facts ("raise the fraction by
what the cache was short of"). Rule files are untrusted data, so expressions are parsed
with `ast` and only a whitelist of node types is evaluated: numbers, strings, names
(captures, `let` values, facts - dotted facts read as attributes: `server_args.tp_size`),
arithmetic, comparisons (also `in` a tuple), `and`/`or`/`not`, `x if c else y`, and the functions in FUNCTIONS and RECORD_FUNCTIONS.
There is no attribute access on objects, no subscripting, no comprehension, no lambda.

Templates (`explanation`, fix `value` and `flag`, `name` of env/package fixes) substitute
`{name}` or `{name:.2f}` (a format spec), where name is a capture, a `let` value or a dotted fact.
"""

from __future__ import annotations

import ast
import math
from functools import lru_cache
from typing import Any, Callable, Mapping

import re

from sglang_doctor.registry.pypi_names import distribution


class MissingValue(Exception):
    """A name the expression needs is not known for this log."""


class ExpressionError(ValueError):
    """The expression uses something outside the safe set (reported at rule load)."""


def _round_up(x: float, step: float = 0.01) -> float:
    return round(math.ceil(x / step - 1e-9) * step, 10)


def _round_down(x: float, step: float = 0.01) -> float:
    return round(math.floor(x / step + 1e-9) * step, 10)


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


_QUANTITY = re.compile(r"(-?\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_UNIT = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def quantity(value: Any) -> float | None:
    """A number, or a size as docker and SGLang write it (`32g`, `64m`, `16GB`: binary units, in
    bytes); None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _QUANTITY.fullmatch(str(value).strip())
    return float(m.group(1)) * _UNIT[m.group(2).lower()] if m else None


def _size_gib(value: Any) -> float:
    q = quantity(value)
    if q is None:
        raise ValueError(f"{value!r} is not a size")
    return q / 2**30


def _launch_flag(field: str) -> str:
    from sglang_doctor.registry.flags import field_flag  # (lazy: the flag registry is read only by a rule that asks)

    if not isinstance(field, str):
        raise TypeError("launch_flag() takes a field name")
    flag = field_flag(field)
    if flag is None:
        raise ValueError(f"{field!r} is not a launch flag of any known release")
    return flag


def _optional_import(name: str) -> str:
    from sglang_doctor.registry.optional_imports import optional_import  # (lazy: its data is read only by a rule that asks)

    return optional_import(name)


def _imported_from(name: str) -> str:
    from sglang_doctor.registry.optional_imports import imported_from

    return imported_from(name)


def _library(name: str, field: str) -> str:
    from sglang_doctor.registry.libraries import provider  # (lazy: its data is read only by a rule that asks)

    if not isinstance(name, str):
        raise TypeError("library_provider() / library_kind() take a library name")
    found = provider(name)
    if found is None:
        raise ValueError(f"{name!r} is a library no catalogued wheel ships or needs")
    return str(found[field])


def _sglang_pin(dist: str, release: str) -> str:
    from sglang_doctor.registry.pins import exact_pin  # (lazy: its data is read only by a rule that asks)

    if not isinstance(dist, str) or not isinstance(release, str):
        raise TypeError("sglang_pin() takes a distribution and an SGLang release")
    found = exact_pin(release, dist)
    if found is None:
        raise ValueError(f"sglang {release} pins no single {dist} version")
    return found


def _argparse_flags(text: str, skip: int = 0) -> tuple[str, ...]:
    """The options in argparse's `unrecognized arguments: …` list (the words it could not place,
    joined by spaces: a flag, its value, the next flag), each once, `--x=1` as `--x`."""
    out: list[str] = []
    for word in str(text).split():
        if word.startswith("-") and quantity(word) is None and len(word) > 1:
            flag = word.split("=", 1)[0]
            if flag not in out:
                out.append(flag)
    return tuple(out[int(skip):])


def _closest_choice(value: str, choices: str) -> str:
    """The one of argparse's listed choices (`'a', 'b'` up to Python 3.11, `a, b` after) that `value`
    misspells: a close match (difflib ratio >= 0.8); none -> unknown (a value from another release)."""
    import difflib

    listed = [c.strip().strip("'\"") for c in str(choices).split(",")]
    best = difflib.get_close_matches(str(value), [c for c in listed if c], n=1, cutoff=0.8)
    if not best or best[0] == value:
        raise ValueError(f"no listed choice is a close spelling of {value!r}")
    return best[0]


def _mem_plan(names: Mapping[str, Any], **given: Any) -> dict[str, Any]:
    # (lazy: the memory model is imported only when a rule that asks for it fires)
    from sglang_doctor.fix.memory_plan import plan_from_log

    plan = plan_from_log(names, **given)
    if plan is None:
        raise ValueError("the log lacks the free-memory readings or --mem-fraction-static")
    return plan


# Functions that also read the rule's names (facts, captures, earlier lets) and take keyword
# arguments; a keyword whose value is unknown for this log is left out. They return a record:
# a `let` bound to one exposes its fields as `<let>.<field>` (fix/memory_plan.py PLAN_FIELDS).
RECORD_FUNCTIONS: dict[str, Callable[..., dict[str, Any]]] = {
    # mem_plan(mem_fraction_static=…, mamba_per_req_mb=…, mamba_slots=…, mamba_ratio=…, kv_tokens=…):
    # SGLang's memory model on the log's numbers - what the launch does, and the smallest change
    # that starts and serves (fix/memory_plan.py).
    "mem_plan": _mem_plan,
}


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "ceil": math.ceil,
    "floor": math.floor,
    "int": int,
    "float": float,
    "str": str,
    "round_up": _round_up,  # round_up(x, step): smallest multiple of step >= x
    "round_down": _round_down,
    "clamp": _clamp,  # clamp(x, lo, hi)
    "size_gib": _size_gib,  # size_gib("64m") = 0.0625: a docker/SGLang size (bytes without a unit) in GiB
    "coalesce": lambda *a: a[0],  # coalesce(a, b, …): the first one known (evaluated lazily)
    "argparse_flags": _argparse_flags,  # argparse_flags("--a 1 --b", skip): its options, the first `skip` left out
    "join": lambda items, sep=", ": sep.join(str(x) for x in items),
    "len": len,
    "pow2_floor": lambda x: 1 << (max(int(x), 1).bit_length() - 1),  # largest power of two <= x
    # closest_choice(value, choices): the choice of argparse's `(choose from …)` list that value
    # misspells (difflib ratio >= 0.8); no such choice -> unknown.
    "closest_choice": _closest_choice,
    # pypi(module[, default]): the PyPI distribution of a dotted import name (data/pypi-names.yaml);
    # unknown -> default, or the top-level name. A lookup in shipped data, nothing is imported.
    "pypi": distribution,
    # launch_flag(field): the launch flag of a ServerArgs field name quoted in a message
    # (`attention_backend` -> `--attention-backend`, data/flags.json); not a flag of any release -> unknown.
    "launch_flag": _launch_flag,
    # optional_import(name): the package (top-level import name) SGLang imports `name` from inside
    # try/except ImportError, so that a failed import leaves it undefined (a NameError's name);
    # imported_from(name): the package it imports `name` from other than unconditionally (a cut
    # "cannot import name 'X'"). data/optional-imports.json; not in it -> unknown.
    "optional_import": _optional_import,
    "imported_from": _imported_from,
    # library_provider(lib) / library_kind(lib): what ships a shared library (data/libraries.json, from
    # the wheels' RECORD files): the distribution (kind "package"), "nvidia-driver" (kind "driver":
    # libcuda, libnvidia-*), or the library itself (kind "system": the OS); not in it -> unknown.
    "library_provider": lambda lib: _library(lib, "name"),
    "library_kind": lambda lib: _library(lib, "kind"),
    # sglang_pin(dist, release): the version SGLang `release` pins `dist` to (`==Z` in the wheel's
    # Requires-Dist, data/pins.json); a range of releases (`0.5.10-0.5.14`) only when all pin the
    # same. Not pinned exactly, or a release the data lacks -> unknown.
    "sglang_pin": _sglang_pin,
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
MAX_EXPR_CHARS = 500


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


@lru_cache(maxsize=4096)
def compile_expr(source: str) -> ast.Expression:
    """Parse and check an expression; raises ExpressionError on anything unsafe.

    Cached: the same rule expressions are evaluated for every input of a run (the tree is
    only read, never changed).
    """
    if len(source) > MAX_EXPR_CHARS:
        raise ExpressionError(f"expression longer than {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        raise ExpressionError(f"syntax error in expression {source!r}: {e.msg}") from None
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp,
                               ast.Compare, ast.BoolOp, ast.IfExp, ast.Call, ast.Attribute, ast.Tuple, ast.List,
                               ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.keyword)) or type(node) in _BINOPS \
            or type(node) in _CMPOPS
        if not ok:
            raise ExpressionError(f"{type(node).__name__} is not allowed in expression {source!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool, type(None))):
            raise ExpressionError(f"constant {node.value!r} is not allowed")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") or \
                isinstance(node, ast.Name) and node.id.startswith("__"):
            raise ExpressionError(f"names starting with '_' are not allowed in {source!r}")
        if isinstance(node, ast.Attribute) and _dotted(node) is None:
            raise ExpressionError(f"attribute access is only allowed on fact names in {source!r}")
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name in RECORD_FUNCTIONS:
                if node.args or any(k.arg is None for k in node.keywords):
                    raise ExpressionError(f"{name}() takes keyword arguments only, in {source!r}")
            elif name not in FUNCTIONS or node.keywords:
                raise ExpressionError(f"only calls to {sorted([*FUNCTIONS, *RECORD_FUNCTIONS])} are allowed "
                                      f"in {source!r}")
    return tree


def evaluate(tree: ast.Expression, names: Mapping[str, Any]) -> Any:
    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            key = _dotted(node)
            if key is None or key not in names or names[key] is None:
                raise MissingValue(key or "?")
            return names[key]
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            try:
                return _BINOPS[type(node.op)](a, b)
            except (ZeroDivisionError, TypeError, OverflowError) as e:
                raise MissingValue(str(e)) from None
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if isinstance(node.op, ast.Not):
                return not v
            return -v if isinstance(node.op, ast.USub) else +v
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = ev(right_node)
                try:
                    if not _CMPOPS[type(op)](left, right):
                        return False
                except TypeError:
                    return False
                left = right
            return True
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                result: Any = True
                for v in node.values:
                    result = ev(v)
                    if not result:
                        return result
                return result
            for v in node.values:
                result = ev(v)
                if result:
                    return result
            return result
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        if isinstance(node, (ast.Tuple, ast.List)):  # for `x in ("a", "b")`
            return tuple(ev(e) for e in node.elts)
        if isinstance(node, ast.Call):
            if node.func.id == "coalesce":  # type: ignore[attr-defined]
                # The first argument whose names are all known: a fact that may be missing.
                for arg in node.args:
                    try:
                        return ev(arg)
                    except MissingValue:
                        continue
                raise MissingValue("coalesce: no argument known")
            record = RECORD_FUNCTIONS.get(node.func.id)  # type: ignore[attr-defined]
            if record is not None:
                given = {}
                for kw in node.keywords:
                    try:
                        given[kw.arg] = ev(kw.value)
                    except MissingValue:
                        continue  # not stated by this log: the function works from the facts
                try:
                    return record(names, **given)
                except (TypeError, ValueError, ArithmeticError) as e:
                    raise MissingValue(str(e)) from None
            fn = FUNCTIONS[node.func.id]  # type: ignore[attr-defined]
            try:
                return fn(*[ev(a) for a in node.args])
            except (TypeError, ValueError, OverflowError) as e:
                raise MissingValue(str(e)) from None
        raise ExpressionError(type(node).__name__)

    return ev(tree.body)


def names_in(source: str) -> set[str]:
    """The names (dotted facts included) an expression reads; empty for one that does not compile."""
    try:
        tree = compile_expr(source)
    except ExpressionError:
        return set()
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = _dotted(node)
            if name:
                out.add(name)
                return
        if isinstance(node, ast.Call):  # not the function's own name
            for a in [*node.args, *(k.value for k in node.keywords)]:
                visit(a)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)(?::([^{}]{0,20}))?\}")


def template_names(template: str) -> list[str]:
    return [m.group(1) for m in _PLACEHOLDER.finditer(template)]


class Captured(float):
    """A number read from a log, which remembers how the log wrote it: `3.10` (a Python or CUDA
    version) compares as a number but is quoted as 3.10, not 3.1."""

    text: str

    def __new__(cls, text: str) -> "Captured":
        obj = super().__new__(cls, float(text))
        obj.text = text
        return obj


def _format_value(value: Any, spec: str | None) -> str:
    if isinstance(value, Captured) and not spec:
        return value.text
    if spec:
        try:
            if isinstance(value, str):
                value = float(value) if re.fullmatch(r"-?\d+(?:\.\d+)?", value) else value
            return format(value, spec)
        except (ValueError, TypeError):
            return str(value)
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, bool):
        return str(value)
    return str(value)


def render(template: str, names: Mapping[str, Any]) -> str:
    """Fill a template; raises MissingValue when a placeholder is unknown."""

    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in names or names[key] is None:
            raise MissingValue(key)
        return _format_value(names[key], m.group(2))

    return _PLACEHOLDER.sub(sub, template)
