#!/usr/bin/env python3
"""Build sglang_doctor/data/flags.json: every SGLang launch flag, per release.

The flags are read from the release wheels on PyPI with the ``ast`` module;
sglang itself is never imported (it needs torch and a GPU stack).  Three source
layouts are understood:

* ``argparse``    -- ``parser.add_argument("--x", ...)`` calls inside
                     ``ServerArgs.add_cli_args`` (0.4.x .. 0.5.13);
* ``annotated``   -- dataclass fields ``name: A[T, "help" | Arg(...)] = default``
                     on ``ServerArgs``, registered by
                     ``add_cli_args_from_dataclass`` (0.5.14 .. 0.5.19);
* ``namespaces``  -- msgspec Structs in ``srt/arg_groups/fields/*.py`` collected
                     into ``ServerArgs`` by ``collect_input_fields`` (0.5.20 ..).

Every layout still registers a few flags by hand (dynamic choices, deprecated
spellings, ``--config``), so the ``argparse`` reader always runs as well.

Usage::

    python tools/extract_flags.py                       # all releases >= 0.4.0
    python tools/extract_flags.py --releases 0.5.14 0.5.23 --out /tmp/f.json
    python tools/extract_flags.py --dump 0.5.14         # print one release

Wheels are cached in --cache (default /tmp/sglang-flag-wheels), outside the
repo.  The output format is documented at the top of ``sglang_doctor/registry/flags.py``.
The router's flags (``sglang-router`` wheels) are read by the sibling
``tools/extract_router_flags.py``, which reuses this module's reader.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "sglang_doctor" / "data" / "flags.json"
HELPS_NAME = "flag-helps.json"  # beside --out
DEFAULT_CACHE = Path("/tmp/sglang-flag-wheels")
FIRST_RELEASE = "0.4.0"
FORMAT_VERSION = 1
SPEC_FIELDS = [
    "name",
    "aliases",
    "type",
    "default",
    "choices",
    "deprecated",
    "replacement",
    "hint",
    "help",
]


# --------------------------------------------------------------------------
# Versions and downloads
# --------------------------------------------------------------------------


def version_key(v: str) -> tuple:
    """Sort key for the version strings SGLang publishes (N.N.N[rcN|.postN])."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?", v)
    if not m:
        return ((0,), -9, 0, 0)
    nums = tuple(int(x) for x in m.group(1).split("."))
    # Trailing zeros do not change a version (0.5 == 0.5.0).
    while len(nums) > 1 and nums[-1] == 0:
        nums = nums[:-1]
    pre_rank = {"a": -3, "b": -2, "rc": -1, None: 0}[m.group(2)]
    return (nums, pre_rank, int(m.group(3) or 0), int(m.group(4) or -1) + 1)


def pip_available_versions(pip: list[str], dist: str = "sglang") -> list[str]:
    """All versions of ``dist`` on the index, including pre-releases."""
    out = subprocess.run(
        pip + ["index", "versions", dist, "--pre"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = re.search(r"Available versions:\s*(.+)", out)
    if not m:
        raise SystemExit(f"could not parse `pip index versions {dist}` output")
    return [v.strip() for v in m.group(1).split(",") if v.strip()]


def select_releases(available: list[str], first: str) -> list[str]:
    """Finals and .postN from ``first`` on, plus pre-releases whose final never shipped.

    0.5.0 only exists as 0.5.0rc0..rc2, so without them there is a hole
    between 0.4.10.post2 and 0.5.1.
    """
    finals = {re.sub(r"\.post\d+$", "", v) for v in available if not re.search(r"(a|b|rc|dev)\d+", v)}
    picked = []
    for v in available:
        if version_key(v) < version_key(first):
            continue
        pre = re.match(r"(\d+(?:\.\d+)*)(?:a|b|rc)\d+$", v)
        if pre and pre.group(1) in finals:
            continue
        if ".dev" in v:
            continue
        picked.append(v)
    return sorted(picked, key=version_key)


def find_cached(cache: Path, version: str, dist: str = "sglang") -> Path | None:
    stem = dist.replace("-", "_")  # wheel and sdist names spell the distribution with underscores
    for pattern in (f"{stem}-{version}-*.whl", f"{stem}-{version}.tar.gz", f"{dist}-{version}.tar.gz"):
        hits = sorted(cache.glob(pattern))
        if hits:
            return hits[0]
    return None


def download(pip: list[str], cache: Path, version: str, dist: str = "sglang") -> tuple[Path | None, str]:
    """Fetch one release of ``dist`` into the cache; returns (path, note)."""
    hit = find_cached(cache, version, dist)
    if hit:
        return hit, ""
    attempts = [
        [],  # a wheel for this interpreter/platform (0.5.11+ ship cp311 manylinux wheels)
        ["--only-binary=:all:", "--platform", "any", "--python-version", "3.11"],
        ["--no-binary=:all:"],  # sdist; only the .py files are read, never built
    ]
    errors = []
    for extra in attempts:
        proc = subprocess.run(
            pip + ["download", "--no-deps", f"{dist}=={version}", "-d", str(cache), "-q"] + extra,
            capture_output=True,
            text=True,
        )
        hit = find_cached(cache, version, dist)
        if hit:
            return hit, "" if not extra else f"downloaded with {' '.join(extra)}"
        errors.append(proc.stderr.strip().splitlines()[-1:] or ["?"])
    return None, f"no wheel or sdist: {errors[-1][0]}"


class Archive:
    """Read-only access to the .py files of a wheel or sdist, keyed by package path."""

    def __init__(self, path: Path, package: str = "sglang") -> None:
        self.files: dict[str, bytes] = {}
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as zf:
                for name in zf.namelist():
                    if name.startswith(package + "/") and name.endswith(".py"):
                        self.files[name] = zf.read(name)
        else:
            with tarfile.open(path) as tf:
                for member in tf.getmembers():
                    # sdists nest the package under sglang-X/ (and sometimes python/).
                    m = re.search(rf"(?:^|/)({re.escape(package)}/.+\.py)$", member.name)
                    if m and member.isfile() and m.group(1) not in self.files:
                        f = tf.extractfile(member)
                        if f:
                            self.files[m.group(1)] = f.read()

    def source(self, path: str) -> str | None:
        data = self.files.get(path)
        return None if data is None else data.decode("utf-8", "replace")


# --------------------------------------------------------------------------
# A tiny static evaluator for the expressions used in flag declarations
# --------------------------------------------------------------------------


class _Unknown:
    """Marks a value the static reader cannot know (runtime-computed)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


@dataclass
class ClassRef:
    module: "Module"
    node: ast.ClassDef


@dataclass
class FuncRef:
    module: "Module"
    node: ast.FunctionDef


@dataclass
class ModRef:
    module: "Module"


@dataclass
class FieldDefault:
    """Result of ``field(...)``: the dataclass/msgspec default it declares."""

    value: Any


class Module:
    def __init__(self, index: "ModuleIndex", name: str, path: str, tree: ast.Module) -> None:
        self.index, self.name, self.path, self.tree = index, name, path, tree
        self.assigns: dict[str, ast.expr] = {}
        self.imports: dict[str, tuple[str, str | None]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        # Only top-level statements (and `try:` bodies, used for optional
        # imports); conditional redefinitions are rare and would be guesses.
        for stmt in self._top_level(tree.body):
            if isinstance(stmt, ast.Assign):
                for tgt in stmt.targets:
                    if isinstance(tgt, ast.Name):
                        self.assigns[tgt.id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
                self.assigns[stmt.target.id] = stmt.value
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
                self.assigns.pop(stmt.name, None)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt  # type: ignore[assignment]
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.imports.update(import_bindings(stmt, name, path))

    @staticmethod
    def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
        for stmt in body:
            if isinstance(stmt, ast.Try):
                yield from stmt.body
            else:
                yield stmt

    def lookup(self, name: str) -> Any:
        ev = self.index.evaluator
        if name in self.classes:
            return ClassRef(self, self.classes[name])
        if name in self.assigns:
            return ev.eval(self.assigns[name], self, {})
        if name in self.functions:
            return FuncRef(self, self.functions[name])
        if name in self.imports:
            mod, attr = self.imports[name]
            return self.index.resolve_import(mod, attr)
        return UNKNOWN


def import_bindings(stmt: ast.Import | ast.ImportFrom, modname: str, path: str) -> dict[str, tuple[str, str | None]]:
    out: dict[str, tuple[str, str | None]] = {}
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname:
                out[a.asname] = (a.name, None)
            else:
                out[a.name.split(".")[0]] = (a.name.split(".")[0], None)
        return out
    base = stmt.module or ""
    if stmt.level:
        pkg = modname.split(".")
        if not path.endswith("__init__.py"):
            pkg = pkg[:-1]
        pkg = pkg[: len(pkg) - (stmt.level - 1)]
        base = ".".join(pkg + ([base] if base else []))
    for a in stmt.names:
        out[a.asname or a.name] = (base, a.name)
    return out


class ModuleIndex:
    def __init__(self, archive: Archive) -> None:
        self.archive = archive
        self.modules: dict[str, Module | None] = {}
        self.evaluator = Evaluator()

    def get(self, modname: str) -> Module | None:
        if modname not in self.modules:
            self.modules[modname] = None  # guards import cycles
            base = modname.replace(".", "/")
            for path in (base + ".py", base + "/__init__.py"):
                src = self.archive.source(path)
                if src is not None:
                    try:
                        tree = ast.parse(src)
                    except SyntaxError:
                        break
                    self.modules[modname] = Module(self, modname, path, tree)
                    break
        return self.modules[modname]

    def resolve_import(self, mod: str, attr: str | None) -> Any:
        if attr is None:
            m = self.get(mod)
            return ModRef(m) if m else UNKNOWN
        sub = self.get(f"{mod}.{attr}")
        if sub is not None:
            return ModRef(sub)
        m = self.get(mod)
        return m.lookup(attr) if m else UNKNOWN


_SAFE_BUILTINS: dict[str, Any] = {"True": True, "False": False, "None": None}
# Stdlib values that appear as defaults (max_queued_requests = sys.maxsize).
_STDLIB_CONSTANTS: dict[str, Any] = {"sys.maxsize": sys.maxsize, "math.inf": math.inf}


class Evaluator:
    """Evaluate literal-ish expressions; anything dynamic becomes UNKNOWN."""

    def __init__(self) -> None:
        self.depth = 0

    def eval(self, node: ast.expr | None, mod: Module, local: dict[str, Any]) -> Any:
        if node is None:
            return UNKNOWN
        self.depth += 1
        try:
            if self.depth > 40:  # self-referencing assignments, deep import chains
                return UNKNOWN
            return self._eval(node, mod, local)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError):
            return UNKNOWN
        finally:
            self.depth -= 1

    def _eval(self, node: ast.expr, mod: Module, local: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = []
            for elt in node.elts:
                if isinstance(elt, ast.Starred):
                    inner = self.eval(elt.value, mod, local)
                    if not isinstance(inner, (list, tuple)):
                        return UNKNOWN
                    items.extend(inner)
                else:
                    items.append(self.eval(elt, mod, local))
            return items
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values):
                if k is None:
                    inner = self.eval(v, mod, local)
                    if not isinstance(inner, dict):
                        return UNKNOWN
                    out.update(inner)
                else:
                    key = self.eval(k, mod, local)
                    if key is UNKNOWN or isinstance(key, list):
                        return UNKNOWN
                    out[key] = self.eval(v, mod, local)
            return out
        if isinstance(node, ast.Name):
            if node.id in local:
                return local[node.id]
            if node.id in _SAFE_BUILTINS:
                return _SAFE_BUILTINS[node.id]
            return mod.lookup(node.id)
        if isinstance(node, ast.UnaryOp):
            val = self.eval(node.operand, mod, local)
            if isinstance(val, (int, float)) and not isinstance(val, bool):
                if isinstance(node.op, ast.USub):
                    return -val
                if isinstance(node.op, ast.UAdd):
                    return val
            return UNKNOWN
        if isinstance(node, ast.BinOp):
            left, right = self.eval(node.left, mod, local), self.eval(node.right, mod, local)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            if isinstance(node.op, ast.Add) and type(left) is type(right) and isinstance(left, (list, str, int, float)):
                return left + right
            if isinstance(node.op, ast.Mult) and all(isinstance(x, (int, float)) for x in (left, right)):
                return left * right
            if isinstance(node.op, ast.Pow) and all(isinstance(x, int) for x in (left, right)):
                return left**right
            if isinstance(node.op, ast.Div) and all(isinstance(x, (int, float)) for x in (left, right)):
                return left / right
            return UNKNOWN
        if isinstance(node, ast.JoinedStr):
            # Help texts use f-strings; unknown parts render as "{...}".
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                else:
                    val = self.eval(v.value, mod, local) if isinstance(v, ast.FormattedValue) else UNKNOWN
                    parts.append("{...}" if val is UNKNOWN or not isinstance(val, (str, int, float, list)) else str(val))
            return "".join(parts)
        if isinstance(node, ast.Attribute):
            dotted = callable_name(node)
            if dotted in _STDLIB_CONSTANTS and not (isinstance(node.value, ast.Name) and node.value.id in local):
                return _STDLIB_CONSTANTS[dotted]
            return self.attribute(self.eval(node.value, mod, local), node.attr)
        if isinstance(node, ast.Subscript):
            # `CHOICES[0]` as a default; a missing key raises and becomes UNKNOWN.
            base, key = self.eval(node.value, mod, local), self.eval(node.slice, mod, local)
            if isinstance(base, (list, dict, str)) and isinstance(key, (int, str)) and not isinstance(key, bool):
                return base[key]  # type: ignore[index]
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self.call(node, mod, local)
        if isinstance(node, ast.Lambda):
            return UNKNOWN
        return UNKNOWN

    def attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, ModRef):
            return base.module.lookup(attr)
        if isinstance(base, ClassRef):
            return self.class_attr(base, attr)
        return UNKNOWN

    def class_attr(self, cls: ClassRef, attr: str, seen: int = 0) -> Any:
        scope: dict[str, Any] = {}
        found: ast.expr | None = None
        for stmt in cls.node.body:
            target = value = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                target, value = stmt.targets[0].id, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
                target, value = stmt.target.id, stmt.value
            if target is None:
                continue
            if target == attr:
                found = value
                break
            # Earlier class attributes are visible to later ones (enum-like ALL = [A, B]).
            scope[target] = _LazyAttr(self, cls.module, value)
        if found is not None:
            val = self.eval(found, cls.module, _LazyScope(scope))
            return val.value if isinstance(val, FieldDefault) else val
        if seen < 5:
            for base in cls.node.bases:
                b = self.eval(base, cls.module, {})
                if isinstance(b, ClassRef):
                    val = self.class_attr(b, attr, seen + 1)
                    if val is not UNKNOWN:
                        return val
        return UNKNOWN

    def call(self, node: ast.Call, mod: Module, local: dict[str, Any]) -> Any:
        func = node.func
        fname = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        args = node.args
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if fname == "field" and not args:
            # dataclasses.field / msgspec.field: only the declared default matters.
            if "default" in kw:
                return FieldDefault(self.eval(kw["default"], mod, local))
            if "default_factory" in kw:
                return FieldDefault(self.call_factory(kw["default_factory"], mod, local))
            return FieldDefault(UNKNOWN)
        if isinstance(func, ast.Name) and func.id not in local and mod.lookup(func.id) is UNKNOWN:
            if func.id in ("list", "tuple", "sorted", "set", "frozenset") and len(args) == 1:
                val = self.eval(args[0], mod, local)
                if isinstance(val, dict):
                    val = list(val)
                if not isinstance(val, list):
                    return UNKNOWN
                if func.id == "sorted":
                    try:
                        return sorted(val)
                    except TypeError:
                        return UNKNOWN
                if func.id in ("set", "frozenset"):
                    return list(dict.fromkeys(val)) if all(_hashable(x) for x in val) else UNKNOWN
                return list(val)
            if func.id in ("list", "dict", "set", "tuple") and not args and not kw:
                return {} if func.id == "dict" else []
            if func.id == "dict" and not args:
                return {k: self.eval(v, mod, local) for k, v in kw.items()}
            if func.id in ("int", "float", "str") and len(args) == 1:
                val = self.eval(args[0], mod, local)
                return UNKNOWN if val is UNKNOWN else {"int": int, "float": float, "str": str}[func.id](val)
            return UNKNOWN
        if isinstance(func, ast.Attribute) and not args:
            base = self.eval(func.value, mod, local)
            if isinstance(base, dict) and func.attr in ("keys", "values", "copy", "items"):
                if func.attr == "keys":
                    return list(base)
                if func.attr == "values":
                    return list(base.values())
                return dict(base) if func.attr == "copy" else UNKNOWN
            if isinstance(base, list) and func.attr == "copy":
                return list(base)
            if isinstance(base, str) and func.attr in ("lower", "upper", "strip"):
                return getattr(base, func.attr)()
        target = self.eval(func, mod, local)
        if isinstance(target, FuncRef) and not args and not kw:
            return self.call_function(target)
        return UNKNOWN

    def call_factory(self, node: ast.expr, mod: Module, local: dict[str, Any]) -> Any:
        if isinstance(node, ast.Lambda):
            return self.eval(node.body, mod, local)
        if isinstance(node, ast.Name) and node.id in ("list", "dict", "set", "tuple"):
            return {} if node.id == "dict" else []
        target = self.eval(node, mod, local)
        if isinstance(target, FuncRef):
            return self.call_function(target)
        return UNKNOWN

    def call_function(self, ref: FuncRef) -> Any:
        """Zero-argument helper such as ``_tool_call_parser_choices()``.

        Its local imports/assignments are bound, then the *last* top-level
        ``return`` is evaluated: earlier returns are the plugin/fast paths,
        the last one is the static fallback.
        """
        local: dict[str, Any] = {}
        last_return: ast.Return | None = None
        for stmt in ref.node.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for name, (m, a) in import_bindings(stmt, ref.module.name, ref.module.path).items():
                    local[name] = ref.module.index.resolve_import(m, a)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                local[stmt.targets[0].id] = self.eval(stmt.value, ref.module, local)
            elif isinstance(stmt, ast.Return):
                last_return = stmt
        if last_return is None:
            return UNKNOWN
        return self.eval(last_return.value, ref.module, local)


class _LazyAttr:
    def __init__(self, ev: Evaluator, mod: Module, node: ast.expr) -> None:
        self.ev, self.mod, self.node = ev, mod, node

    def get(self) -> Any:
        return self.ev.eval(self.node, self.mod, {})


class _LazyScope(dict):
    """Class-body scope whose entries are evaluated only when read."""

    def __getitem__(self, key: str) -> Any:
        val = super().__getitem__(key)
        return val.get() if isinstance(val, _LazyAttr) else val


def _hashable(x: Any) -> bool:
    try:
        hash(x)
        return True
    except TypeError:
        return False


# --------------------------------------------------------------------------
# Flag records
# --------------------------------------------------------------------------


@dataclass
class Flag:
    name: str
    aliases: list[str]
    type: str
    default: Any
    choices: list | None
    deprecated: bool
    replacement: str | None
    hint: str | None
    help: str
    origin: str = field(default="", compare=False)  # layout that declared it

    def row(self, help_index: int) -> list:
        return [
            self.name,
            self.aliases,
            self.type,
            self.default,
            self.choices,
            self.deprecated,
            self.replacement,
            self.hint,
            help_index,
        ]


def jsonable(value: Any) -> Any:
    """Map a statically evaluated value onto JSON; anything else becomes null."""
    if value is UNKNOWN or isinstance(value, (ClassRef, FuncRef, ModRef)):
        return None
    if isinstance(value, FieldDefault):
        return jsonable(value.value)
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        items = [jsonable(v) for v in value]
        return None if any(i is None and v is not None for i, v in zip(items, value)) else items
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return None
        items = {k: jsonable(v) for k, v in value.items()}
        return None if any(items[k] is None and value[k] is not None for k in value) else items
    return None


def choices_value(value: Any) -> list | None:
    val = jsonable(value)
    if isinstance(val, dict):
        val = list(val)
    if not isinstance(val, list) or any(not isinstance(c, (str, int, float)) for c in val):
        return None
    return list(dict.fromkeys(val))


_NO_VALUE_ACTIONS = {
    "store_true",
    "store_false",
    "store_const",
    "count",
    "BooleanOptionalAction",
    "DeprecatedAction",
    "DeprecatedStoreTrueAction",
    "DeprecatedStoreConstAction",
}


def callable_name(node: ast.expr | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = callable_name(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def type_from_callable(name: str) -> str | None:
    """Map an argparse ``type=`` callable onto the registry's value types."""
    short = name.rsplit(".", 1)[-1].lower()
    if name in ("json.loads",) or "json" in short:
        return "json"
    if short in ("int", "float", "str", "bool"):
        return short
    if short.endswith("_int") or "int" in short.split("_"):
        return "int"  # human_readable_int, positive_int, ...
    if "float" in short.split("_"):
        return "float"
    if "bool" in short.split("_"):
        return "bool"
    return None


# Help text marks a flag deprecated only when it says so about *this* flag:
# a leading "(Deprecated)" / "[Deprecated]" / "Note: Deprecated", "this flag is
# deprecated", or "'--own-name' is deprecated".  A mere mention ("the fallback
# to that flag is deprecated") does not count.
_DEPRECATED_LEAD = re.compile(r"^\s*(?:note:\s*)?[\[(]?\s*deprecated\b", re.I)
_DEPRECATED_SELF = re.compile(r"\b(?:this|the)\s+(?:flag|argument|option)\s+is\s+(?:now\s+)?deprecated\b", re.I)
# "use '--attention-backend triton' instead": quoted text keeps its value,
# unquoted text keeps only `--flag` or `--flag=value`.
_REPLACEMENT = re.compile(
    r"(?:\buse|\balias\s+(?:for|of)|\breplaced\s+(?:by|with)|\bin\s+favou?r\s+of|\brenamed\s+to|\bsuperseded\s+by)"
    r"\s*:?\s*(?:[`'\"](--[A-Za-z0-9][^`'\"]*)[`'\"]|(--[A-Za-z0-9][A-Za-z0-9_{},-]*(?:=[^\s,;)]+)?))",
    re.I,
)


# "Path to a JSON config file" is a path and "in JSON constrained output" is no
# value format; only phrases saying the value itself is JSON count.
_JSON_HELP = re.compile(
    r"\b(?:JSON string format|JSON-formatted|as JSON\b|JSON (?:array|object|mapping|string|dict(?:ionary)?)\b)",
    re.I,
)


def says_deprecated(names: list[str], help_text: str) -> bool:
    if _DEPRECATED_LEAD.search(help_text) or _DEPRECATED_SELF.search(help_text):
        return True
    for n in names:
        if re.search(rf"(?<![\w-]){re.escape(n)}['`\"]?\s+is\s+(?:now\s+)?deprecated\b", help_text):
            return True
    return False


def flag_of(text: str) -> tuple[str | None, str | None]:
    """('--flag', hint) from a replacement like '--attention-backend triton'.

    ``--cuda-graph-backend-{decode,prefill}=disabled`` names two flags; the
    first expansion is kept as the replacement and the full text as the hint.
    """
    text = text.strip().rstrip(".,;)")
    m = re.match(r"--[A-Za-z0-9][A-Za-z0-9_-]*(\{([^}]*)\}[A-Za-z0-9_-]*)?", text)
    if not m:
        return None, None
    flag = m.group(0)
    if m.group(1):
        flag = flag.replace(m.group(1), m.group(2).split(",")[0] + m.group(1)[len(m.group(2)) + 2 :])
    hint = text if text != flag else None
    return flag, hint


def deprecation(
    names: list[str], help_text: str, action: str, new_flag: Any
) -> tuple[bool, str | None, str | None]:
    deprecated = "Deprecated" in action or says_deprecated(names, help_text)
    if not deprecated:
        return False, None, None
    if isinstance(new_flag, str) and new_flag.startswith("--"):
        flag, hint = flag_of(new_flag)
        return True, flag, hint
    for m in _REPLACEMENT.finditer(help_text):
        flag, hint = flag_of(m.group(1) or m.group(2))
        if flag and flag not in names:
            return True, flag, hint
    return True, None, None


# --------------------------------------------------------------------------
# Readers for the three layouts
# --------------------------------------------------------------------------


class ReleaseReader:
    def __init__(self, archive: Archive) -> None:
        self.index = ModuleIndex(archive)
        self.ev = self.index.evaluator
        self.flags: list[Flag] = []
        self.layouts: set[str] = set()
        self.notes: list[str] = []
        self.field_defaults: dict[str, Any] = {}  # field name -> default, for manual flags

    # -- entry ---------------------------------------------------------------

    def read(self) -> list[Flag]:
        mod = self.index.get("sglang.srt.server_args")
        if mod is None:
            raise ValueError("sglang/srt/server_args.py not in archive")
        cls = mod.classes.get("ServerArgs")
        add_cli = None
        if cls is not None:
            add_cli = next(
                (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "add_cli_args"),
                None,
            )
        if add_cli is None:
            raise ValueError("ServerArgs.add_cli_args not found")
        self.read_function(add_cli, mod, depth=0)
        return self.merge()

    def read_function(self, fn: ast.FunctionDef, mod: Module, depth: int) -> None:
        """Every add_argument call in ``fn``, following helpers that get the parser."""
        local: dict[str, Any] = {}
        for node in ast.walk(fn):
            # Local names such as `tool_call_parser_choices = list(...)` feed choices=.
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                local[node.targets[0].id] = self.ev.eval(node.value, mod, local)
        for node in _calls_in_order(fn):
            func = node.func
            fname = callable_name(func)
            if isinstance(func, ast.Attribute) and func.attr == "add_argument":
                flag = self.from_add_argument(node, mod, local)
                if flag:
                    self.flags.append(flag)
            elif fname.endswith("add_cli_args_from_dataclass") and len(node.args) >= 2:
                self.from_dataclass(self.ev.eval(node.args[1], mod, local), mod)
            elif depth < 3 and any(isinstance(a, ast.Name) and a.id == "parser" for a in node.args):
                target = self.ev.eval(func, mod, local)
                if isinstance(target, FuncRef):
                    self.read_function(target.node, target.module, depth + 1)

    # -- argparse ------------------------------------------------------------

    def from_add_argument(self, call: ast.Call, mod: Module, local: dict[str, Any]) -> Flag | None:
        names = [self.ev.eval(a, mod, local) for a in call.args]
        names = [n for n in names if isinstance(n, str) and n.startswith("-")]
        if not names:
            return None  # positional arguments are not flags
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        action = callable_name(kw.get("action"))
        action_short = action.rsplit(".", 1)[-1]
        nargs = self.ev.eval(kw["nargs"], mod, local) if "nargs" in kw else None
        help_text = self.ev.eval(kw.get("help"), mod, local) if "help" in kw else ""
        if not isinstance(help_text, str) or help_text == "==SUPPRESS==":
            help_text = ""
        if "help" in kw and callable_name(kw["help"]).endswith("SUPPRESS"):
            help_text = ""

        default: Any
        if "default" in kw:
            dnode = kw["default"]
            if callable_name(dnode).endswith("SUPPRESS"):
                default = None
            elif (
                # 0.5.20+: default=_declared_default("sampling_backend") looks the
                # value up on the namespace Structs, which were read already.
                isinstance(dnode, ast.Call)
                and "default" in callable_name(dnode.func).lower()
                and len(dnode.args) == 1
                and isinstance(dnode.args[0], ast.Constant)
                and dnode.args[0].value in self.field_defaults
            ):
                default = self.field_defaults[dnode.args[0].value]
            else:
                default = jsonable(self.ev.eval(kw["default"], mod, local))
        elif action_short in ("store_true", "DeprecatedStoreTrueAction"):
            default = False
        elif action_short == "store_false":
            default = True
        else:
            default = None

        vtype = self.value_type(action_short, nargs, callable_name(kw.get("type")), kw, help_text)
        choices = choices_value(self.ev.eval(kw["choices"], mod, local)) if "choices" in kw else None
        if action_short == "BooleanOptionalAction":
            names = names + ["--no-" + n[2:] for n in names if n.startswith("--")]
        new_flag = self.ev.eval(kw["new_flag"], mod, local) if "new_flag" in kw else None
        dep, repl, hint = deprecation(names, help_text, action_short, new_flag)
        return Flag(names[0], names[1:], vtype, default, choices, dep, repl, hint, help_text, "argparse")

    @staticmethod
    def value_type(action: str, nargs: Any, type_name: str, kw: dict, help_text: str) -> str:
        no_value = action in _NO_VALUE_ACTIONS and (
            "nargs" not in kw or nargs == 0
        )
        if no_value:
            return "bool"
        if nargs in ("+", "*") or (isinstance(nargs, int) and nargs > 1):
            return "list"
        t = type_from_callable(type_name) if type_name else "str"
        t = t or "str"
        if t == "str" and _JSON_HELP.search(help_text):
            return "json"  # type=str but documented as taking a JSON value
        return t

    # -- annotated dataclass / msgspec fields ---------------------------------

    def from_dataclass(self, cls: Any, mod: Module) -> None:
        if not isinstance(cls, ClassRef):
            self.notes.append("add_cli_args_from_dataclass target not resolvable")
            return
        sources = [cls]
        # Newest layout: ServerArgs is assembled from namespace Structs listed in
        # `collect_input_fields(_INPUT_NAMESPACES)` at module level.
        for node in ast.walk(cls.module.tree):
            if isinstance(node, ast.Call) and callable_name(node.func).endswith("collect_input_fields") and node.args:
                listed = self.ev.eval(node.args[0], cls.module, {})
                if isinstance(listed, list):
                    ns = [c for c in listed if isinstance(c, ClassRef)]
                    if ns:
                        sources = ns + [cls]
                        self.layouts.add("namespaces")
        for src in sources:
            for owner in self.class_chain(src):
                for stmt in owner.node.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        flag = self.from_field(stmt, owner.module)
                        if flag:
                            self.flags.append(flag)
        if "namespaces" not in self.layouts:
            self.layouts.add("annotated")

    def class_chain(self, cls: ClassRef, depth: int = 0) -> list[ClassRef]:
        """Base classes first (their fields come first), then the class itself."""
        chain: list[ClassRef] = []
        if depth < 5:
            for base in cls.node.bases:
                b = self.ev.eval(base, cls.module, {})
                if isinstance(b, ClassRef):
                    chain.extend(self.class_chain(b, depth + 1))
        return chain + [cls]

    def from_field(self, stmt: ast.AnnAssign, mod: Module) -> Flag | None:
        if stmt.value is not None:
            # Recorded for every field, CLI or not: manual flags may look it up.
            self.field_defaults[stmt.target.id] = jsonable(self.ev.eval(stmt.value, mod, {}))  # type: ignore[union-attr]
        ann = stmt.annotation
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return None
        if not (isinstance(ann, ast.Subscript) and callable_name(ann.value).rsplit(".", 1)[-1] in ("A", "Annotated")):
            return None  # plain fields are not on the CLI
        parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        inner, meta = parts[0], parts[1:]
        arg: dict[str, ast.expr] | None = None
        for m in meta:
            if isinstance(m, ast.Call) and callable_name(m.func).rsplit(".", 1)[-1] == "Arg":
                arg = {k.arg: k.value for k in m.keywords if k.arg}
                for pos, node in zip(["help", "choices", "aliases", "cli_name", "type_parser"], m.args):
                    arg[pos] = node
                break
            val = self.ev.eval(m, mod, {})
            if isinstance(val, str):
                arg = {"help": m}
                break
        if arg is None:
            return None
        get = lambda k: self.ev.eval(arg[k], mod, {}) if k in arg else None  # noqa: E731
        if get("no_cli") is True:
            return None
        field_name = stmt.target.id  # type: ignore[union-attr]
        cli_name = get("cli_name") or "--" + field_name.replace("_", "-")
        aliases = [a for a in (get("aliases") or []) if isinstance(a, str)]
        help_text = get("help") if isinstance(get("help"), str) else ""
        default_val = self.ev.eval(stmt.value, mod, {}) if stmt.value is not None else None
        default = jsonable(default_val)

        action = callable_name(arg.get("action")).rsplit(".", 1)[-1]
        type_parser = callable_name(arg.get("type_parser"))
        nargs = get("nargs")
        base, literal = unwrap_annotation(inner)
        choices_node = get("choices")
        choices = choices_value(choices_node) if "choices" in arg else None
        names = [cli_name] + aliases
        if action:
            # A custom action gets `action_kwargs` splatted into add_argument,
            # so nargs/type/choices/default may live there.
            akw: dict[str, ast.expr] = {}
            node = arg.get("action_kwargs")
            if isinstance(node, ast.Dict):
                akw = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
            if "nargs" in akw:
                nargs = self.ev.eval(akw["nargs"], mod, {})
            if "type" in akw:
                type_parser = callable_name(akw["type"])
            if "choices" in akw:
                choices = choices_value(self.ev.eval(akw["choices"], mod, {}))
            if "default" in akw:
                default = jsonable(self.ev.eval(akw["default"], mod, {}))
            has_nargs = nargs is not None
            vtype = self.value_type(action, nargs, type_parser, {"nargs": nargs} if has_nargs else {}, help_text)
            if action == "BooleanOptionalAction":
                names = names + ["--no-" + n[2:] for n in names if n.startswith("--")]
            new_flag = self.ev.eval(akw["new_flag"], mod, {}) if "new_flag" in akw else None
        else:
            new_flag = None
            if literal is not None:
                choices = choices if choices else choices_value(literal)
                first = literal[0] if literal else ""
                vtype = type_from_callable(type_parser) if type_parser else None
                vtype = vtype or {int: "int", float: "float"}.get(type(first), "str")  # type: ignore[arg-type]
            elif base in ("list", "List") and not type_parser:
                vtype = "list"
            elif base == "bool":
                vtype = "bool"
                if default is None and stmt.value is None:
                    default = None
            else:
                vtype = (type_from_callable(type_parser) if type_parser else None) or {
                    "int": "int",
                    "float": "float",
                    "dict": "json",
                    "Dict": "json",
                }.get(base, "str")
                if nargs in ("+", "*"):
                    vtype = "list"
                if vtype == "str" and _JSON_HELP.search(help_text):
                    vtype = "json"
        dep, repl, hint = deprecation(names, help_text, action, new_flag)
        return Flag(names[0], names[1:], vtype, default, choices, dep, repl, hint, help_text, "annotated")

    # -- merge ---------------------------------------------------------------

    def merge(self) -> list[Flag]:
        """One record per canonical name; later registrations win, like argparse would error."""
        by_name: dict[str, Flag] = {}
        for f in self.flags:
            if f.origin == "argparse" and not self.layouts:
                self.layouts.add("argparse")
            by_name[f.name] = f
        return sorted(by_name.values(), key=lambda f: f.name)


def unwrap_annotation(node: ast.expr) -> tuple[str, list | None]:
    """(base type name, Literal values or None) for T / Optional[T] / T | None."""
    while True:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            left, right = node.left, node.right
            if isinstance(right, ast.Constant) and right.value is None:
                node = left
                continue
            if isinstance(left, ast.Constant) and left.value is None:
                node = right
                continue
            return "Union", None
        if isinstance(node, ast.Subscript):
            head = callable_name(node.value).rsplit(".", 1)[-1]
            args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Optional":
                node = args[0]
                continue
            if head == "Union":
                non_none = [a for a in args if not (isinstance(a, ast.Constant) and a.value is None)]
                if len(non_none) == 1:
                    node = non_none[0]
                    continue
                return "Union", None
            if head == "Literal":
                vals = [a.value for a in args if isinstance(a, ast.Constant)]
                return "Literal", vals
            return head, None
        return callable_name(node).rsplit(".", 1)[-1], None


def _calls_in_order(fn: ast.AST) -> list[ast.Call]:
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
    return sorted(calls, key=lambda n: (n.lineno, n.col_offset))


# --------------------------------------------------------------------------
# `sglang serve` and parser settings
# --------------------------------------------------------------------------


def serve_info(index: ModuleIndex) -> dict[str, Any] | None:
    """Extra flags `sglang serve` strips before handing argv to ServerArgs."""
    mod = index.get("sglang.cli.serve")
    if mod is None:
        return None
    extra: set[str] = set()
    for node in ast.walk(mod.tree):
        # `arg == "--model-type"` / `arg.startswith("--model-type=")`
        if isinstance(node, ast.Compare):
            for c in [node.left, *node.comparators]:
                if isinstance(c, ast.Constant) and isinstance(c.value, str) and re.fullmatch(r"--[a-z][\w-]*", c.value):
                    extra.add(c.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            for a in node.args:
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
                    extra.add(a.value)
    return {"extra": sorted(extra)}


def allows_abbrev(index: ModuleIndex) -> bool:
    """argparse prefix matching unless prepare_server_args disables it."""
    mod = index.get("sglang.srt.server_args")
    fn = mod.functions.get("prepare_server_args") if mod else None
    if fn is None:
        return True
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and callable_name(node.func).endswith("ArgumentParser"):
            for k in node.keywords:
                if k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant):
                    return bool(k.value.value)
    return True


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


@dataclass
class ReleaseResult:
    version: str
    flags: list[Flag]
    layout: str
    serve: dict[str, Any] | None
    allow_abbrev: bool
    notes: list[str]


def read_release(path: Path, version: str) -> ReleaseResult:
    archive = Archive(path)
    reader = ReleaseReader(archive)
    flags = reader.read()
    layout = "namespaces" if "namespaces" in reader.layouts else "annotated" if "annotated" in reader.layouts else "argparse"
    return ReleaseResult(version, flags, layout, serve_info(reader.index), allows_abbrev(reader.index), reader.notes)


def canonicalize(results: list[ReleaseResult]) -> list[str]:
    """Give a flag one long name across releases.

    Registration order changed over time (0.4.x-0.5.13 register
    "--tensor-parallel-size", "--tp-size"; 0.5.14+ register "--tp-size" first),
    so the primary option string of the *newest* release that has the flag wins
    and the other spellings become aliases.  Returns a log of the renames.
    """
    newest_primary: dict[str, str] = {}
    for res in sorted(results, key=lambda r: version_key(r.version), reverse=True):
        for f in res.flags:
            primary = next((newest_primary[o] for o in (f.name, *f.aliases) if o in newest_primary), f.name)
            for o in (f.name, *f.aliases):
                newest_primary.setdefault(o, primary)
    log: set[str] = set()
    for res in results:
        for f in res.flags:
            canon = newest_primary.get(f.name, f.name)
            if canon != f.name and canon in f.aliases:
                log.add(f"{f.name} -> {canon}")
                f.aliases = [f.name] + [a for a in f.aliases if a != canon]
                f.name = canon
        res.flags.sort(key=lambda f: f.name)
    return sorted(log)


def build(results: list[ReleaseResult], skipped: dict[str, str], selection: str) -> dict[str, Any]:
    for line in canonicalize(results):
        print(f"canonical name: {line}", file=sys.stderr)
    helps: dict[str, int] = {}
    specs: dict[str, int] = {}
    rows: list[list] = []
    per_release: dict[str, list[int]] = {}
    for res in sorted(results, key=lambda r: version_key(r.version)):
        idx = []
        for f in res.flags:
            h = helps.setdefault(f.help, len(helps))
            row = f.row(h)
            key = json.dumps(row, sort_keys=True)
            if key not in specs:
                specs[key] = len(rows)
                rows.append(row)
            idx.append(specs[key])
        per_release[res.version] = sorted(idx)
    releases = [r.version for r in sorted(results, key=lambda r: version_key(r.version))]
    by_version = {r.version: r for r in results}
    return {
        "format": FORMAT_VERSION,
        "generator": "tools/extract_flags.py",
        "source": "sglang wheels from PyPI; ServerArgs.add_cli_args and the fields it registers, read with ast",
        "selection": selection,
        "releases": releases,
        "skipped": skipped,
        "layout": {v: by_version[v].layout for v in releases},
        "allow_abbrev": {v: by_version[v].allow_abbrev for v in releases},
        "serve": {v: by_version[v].serve["extra"] for v in releases if by_version[v].serve is not None},
        "spec_fields": SPEC_FIELDS,
        "specs": rows,
        "helps": list(helps),  # written to their own file (see main): most runs never read them
        "release_specs": {v: encode_indices(per_release[v]) for v in releases},
    }


def encode_indices(idx: list[int]) -> list[int]:
    """Sorted indices as runs: [start, length, start, length, ...].

    Specs are numbered in first-seen order, so a release mostly reuses long
    consecutive runs of the previous one; this keeps the file small.
    """
    out: list[int] = []
    for i in idx:
        if out and out[-2] + out[-1] == i:
            out[-1] += 1
        else:
            out.extend([i, 1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", nargs="*", help="explicit versions (default: every release >= 0.4.0 on PyPI)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="wheel cache dir (keep it outside the repo)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--pip", default=f"{sys.executable} -m pip", help="pip command")
    ap.add_argument("--dump", metavar="VERSION", help="print the flags of one release and exit")
    args = ap.parse_args(argv)
    pip = args.pip.split()
    args.cache.mkdir(parents=True, exist_ok=True)

    if args.dump:
        path, note = download(pip, args.cache, args.dump)
        if path is None:
            print(note, file=sys.stderr)
            return 1
        res = read_release(path, args.dump)
        for f in res.flags:
            print(json.dumps(f.row(0)[:-1]))
        print(f"# {len(res.flags)} flags, layout={res.layout}, serve={res.serve}, notes={res.notes}", file=sys.stderr)
        return 0

    if args.releases:
        versions = sorted(args.releases, key=version_key)
        selection = "explicit list: " + " ".join(versions)
    else:
        versions = select_releases(pip_available_versions(pip), FIRST_RELEASE)
        selection = (
            f"every final and .postN release >= {FIRST_RELEASE} on PyPI, plus pre-releases "
            "whose final version was never published (0.5.0rcN)"
        )
    results: list[ReleaseResult] = []
    skipped: dict[str, str] = {}
    for v in versions:
        path, note = download(pip, args.cache, v)
        if path is None:
            skipped[v] = note
            print(f"skip {v}: {note}", file=sys.stderr)
            continue
        try:
            res = read_release(path, v)
        except (ValueError, SyntaxError) as exc:
            skipped[v] = f"unreadable: {exc}"
            print(f"skip {v}: {exc}", file=sys.stderr)
            continue
        results.append(res)
        print(f"{v:<14} {len(res.flags):4d} flags  {res.layout}{'  ' + '; '.join(res.notes) if res.notes else ''}", file=sys.stderr)
    data = build(results, skipped, selection)
    helps = {"format": FORMAT_VERSION, "helps": data.pop("helps")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n")
    helps_out = args.out.with_name(HELPS_NAME)
    helps_out.write_text(json.dumps(helps, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, {len(data['specs'])} specs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
