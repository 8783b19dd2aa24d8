#!/usr/bin/env python3
"""Build sglang_doctor/data/messages.jsonl.gz: every message SGLang's runtime code raises or logs.

Read with ``ast`` from the sglang release wheels on PyPI (sglang is never imported). Per call site:

* ``raise X(msg, ...)``                      -> kind "raise",  cls X
* ``assert cond, msg``                       -> kind "assert", cls AssertionError
* ``logger.error/warning/exception/critical/info(msg, *args)`` (also ``logging.``/``log.``,
  ``*_once`` variants, ``warnings.warn(msg)``) -> kind "log", cls the level
* a call of one of SGLang's logging helpers (LOG_FUNCS: ``print_warning_once(msg)``,
  ``print_deprecated_warning(msg)``, ``log_info_on_rank0(logger, msg)``, ...) -> the kind and
  level of the helper's own logger/raise call (``raise_error_or_warn`` gives both)

The message expression becomes a template: a list alternating literal text and field names.
f-strings, ``%``-formats (also logging's lazy ``logger.info("x %s", y)``), ``.format()`` and
``+`` are understood; a module-level string constant (also one imported from another sglang
module, e.g. ``CUDA_GRAPH_CAPTURE_FAILED_MSG``) or a local ``msg = ...`` assigned earlier in the
same function is inlined. A field is named after the expression that fills it
(``self.server_args.mem_fraction_static`` -> ``mem_fraction_static``).

A template is kept when one of its lines has at least MIN_LITERAL literal characters: shorter
ones (``f"{e}"``, ``"Not supported"``) cannot be told apart in a log. Tests (``test/``,
``tests/``, ``test_*.py``), benchmarks (``bench_*.py``, ``benchmark/``), vendored code
(``third_party/``) and the diffusion server (``multimodal_gen/``) are not read; nor are
``logger.debug`` calls (not shown at the default log level).

Templates are deduplicated across releases by (literal text, kind, class, file, function); an
entry keeps the releases it exists in and its line in each. Each also carries the ``--flags``
and environment variables its text names, and its numbered advice (``Possible solutions:\\n1.
...``) as a list of strings.

Usage::

    python tools/extract_messages.py                              # the releases below
    python tools/extract_messages.py --releases 0.5.20 0.5.23 --out /tmp/m.jsonl.gz

Wheels are downloaded once into <repo>/wheels/ (git-ignored); see tools/wheelcache.py. The
format is documented in sglang_doctor/registry/messages.py.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import string
import sys
import zipfile
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Union

sys.path.insert(0, str(Path(__file__).resolve().parent))
import wheelcache  # noqa: E402

REPO = wheelcache.REPO
DEFAULT_OUT = REPO / "sglang_doctor" / "data" / "messages.jsonl.gz"
FORMAT_VERSION = 1
MIN_LITERAL = 12
# The last release of each minor line and a few in between: 0.4.x and 0.5.x changed fast, so one
# sample per two or three patch releases. A message that exists only between two samples is
# missed; one that lives across several is recorded with the samples it exists in.
DEFAULT_RELEASES = ["0.4.0", "0.4.3.post4", "0.4.6.post5", "0.4.9.post6", "0.4.10.post2", "0.5.1.post3",
                    "0.5.3.post3", "0.5.5.post3", "0.5.8.post1", "0.5.10.post1", "0.5.13.post1", "0.5.17",
                    "0.5.20", "0.5.23"]

LEVELS = {"error": "error", "warning": "warning", "warn": "warning", "exception": "exception",
          "critical": "critical", "fatal": "critical", "info": "info",
          "warning_once": "warning", "info_once": "info", "error_once": "error"}


@dataclass(frozen=True)
class Helper:
    """A function that logs or raises one of its arguments as the message, unchanged."""
    outcomes: tuple[tuple[str, str], ...]  # (kind, cls) per path: ("log", "warning"), ("raise", "ValueError")
    arg: int  # the positional argument that is the message
    lazy: bool = False  # the arguments after it fill the message's %-placeholders (logging's lazy format)


_WARN = (("log", "warning"),)
_INFO = (("log", "info"),)
# SGLang's (and Python's) helpers whose body passes a parameter straight to logger.<level>(...) or
# raise, found by reading every function of the sampled wheels whose log/raise message is one of
# its parameters; file:line of the definition in the wheels that have it. Left out: wrappers that
# only log at an opt-in debug level (fa_log, kernels/ops/attention/flash_attn/cute/fa_logging.py
# 0.5.17:89), print to stdout for debugging (srt/debug_utils/dumper.py _log, phase_checker
# _host_debug), or append text around the message (timer, set_finish_with_abort: "{msg}, rid=...").
LOG_FUNCS: dict[str, Helper] = {
    # srt/utils.py 0.4.0:1018, 0.4.10.post2:1517; srt/utils/common.py 0.5.10.post1:1775, 0.5.23:2931
    "print_warning_once": Helper(_WARN, 0),
    # srt/utils.py 0.4.9.post6:1524; srt/utils/common.py 0.5.10.post1:1781, 0.5.23:2937
    "print_info_once": Helper(_INFO, 0),
    # srt/utils.py 0.4.6.post5:2124; srt/utils/common.py 0.5.23:3981 (logger, msg): logger.info(msg)
    "log_info_on_rank0": Helper(_INFO, 1),
    # srt/utils.py 0.4.6.post5:1840; srt/utils/common.py 0.5.10.post1:1114, 0.5.23:2608: logger.info(msg) on TP rank 0
    "rank0_log": Helper(_INFO, 0),
    # utils.py 0.4.9.post6:46, 0.5.23:85 (@execute_once): logger.info(message)
    "info_once": Helper(_INFO, 0),
    # logger.warning(f"\033[1;33m{message}\033[0m") (the message in ANSI yellow): srt/server_args.py
    # 0.4.10.post2:283, 0.5.10.post1:6668; srt/arg_groups/argparse_actions.py 0.5.13.post1:27, 0.5.23:27
    "print_deprecated_warning": Helper(_WARN, 0),
    # (obj, strict, counter_name, message): raise ValueError(message) if strict else logger.warning(message);
    # srt/utils/common.py 0.5.5.post3:3653, 0.5.10.post1:3771, 0.5.23:5063
    "raise_error_or_warn": Helper((("raise", "ValueError"), ("log", "warning")), 3),
    # (key, msg, *args): logger.warning(msg, *args) once per key; srt/layers/quantization/
    # compressed_tensors/schemes/compressed_tensors_w4a16_nvfp4.py 0.5.23:38 (dspark's _warn_once
    # takes only keywords, so never matches)
    "_warn_once": Helper(_WARN, 1, lazy=True),
    # warnings.warn(msg) (only when called as warnings.warn)
    "warn": Helper(_WARN, 0),
}
_LOGGER_NAME = re.compile(r"(?i)^_?(logger|log|logging)$|logger$")
_PERCENT = re.compile(r"%(?:\((\w+)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_ENV = re.compile(r"\b(?:SGLANG|SGL|NCCL|CUDA|TORCH|PYTORCH|HF|VLLM|FLASHINFER|TRITON|NVSHMEM|MC|UCX)_[A-Z0-9_]+\b")
_WORD = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Field:
    name: str


Part = Union[str, Field]


def skipped_path(rel: str) -> bool:
    """Tests and benchmarks (their messages never reach a server's log), vendored code, and the
    diffusion runtime."""
    parts = rel.split("/")
    name = parts[-1]
    if parts[0] == "multimodal_gen":  # the diffusion server (`sglang generate`), not the LLM engine
        return True
    return (any(p in ("test", "tests", "benchmark", "benchmarks", "third_party") for p in parts[:-1])
            or name.startswith(("test_", "bench_")) or name.endswith("_test.py") or name == "conftest.py")


# --------------------------------------------------------------------------
# Sources of one release
# --------------------------------------------------------------------------


class Release:
    """The parsed runtime modules of one wheel, with their string constants and imports."""

    def __init__(self, wheel: Path) -> None:
        self.trees: dict[str, ast.Module] = {}  # "srt/managers/scheduler.py" -> tree
        self.unparsable: list[str] = []
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if not (name.startswith("sglang/") and name.endswith(".py")):
                    continue
                rel = name[len("sglang/"):]
                if skipped_path(rel):
                    continue
                try:
                    self.trees[rel] = ast.parse(zf.read(name))
                except (SyntaxError, ValueError):
                    self.unparsable.append(rel)
        self.constants: dict[str, dict[str, ast.expr]] = {}
        self.imports: dict[str, dict[str, tuple[str, str]]] = {}
        for rel, tree in self.trees.items():
            self.constants[rel], self.imports[rel] = self._module_names(rel, tree)

    @staticmethod
    def _module_names(rel: str, tree: ast.Module) -> tuple[dict[str, ast.expr], dict[str, tuple[str, str]]]:
        consts: dict[str, ast.expr] = {}
        imports: dict[str, tuple[str, str]] = {}
        pkg = rel.rsplit("/", 1)[0].split("/") if "/" in rel else []
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                if _stringy(stmt.value):
                    consts[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                if _stringy(stmt.value):
                    consts[stmt.target.id] = stmt.value
            elif isinstance(stmt, ast.ImportFrom) and stmt.module is not None or \
                    isinstance(stmt, ast.ImportFrom) and stmt.level:
                if stmt.level:
                    base = pkg[: len(pkg) - (stmt.level - 1)] if stmt.level > 1 else pkg
                    mod = "/".join(base + ((stmt.module or "").split(".") if stmt.module else []))
                elif stmt.module and stmt.module.startswith("sglang."):
                    mod = stmt.module[len("sglang."):].replace(".", "/")
                else:
                    continue
                for a in stmt.names:
                    imports[a.asname or a.name] = (mod, a.name)
        return consts, imports

    def module_file(self, mod: str) -> str | None:
        for cand in (mod + ".py", mod + "/__init__.py"):
            if cand in self.trees:
                return cand
        return None


def _stringy(node: ast.expr) -> bool:
    """A module-level value that is (built from) string literals."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _stringy(node.left)
    return False


# --------------------------------------------------------------------------
# Message expression -> template
# --------------------------------------------------------------------------


def field_name(node: ast.AST) -> str:
    """A readable capture name for the expression that fills a field."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier():
            return key.value
        return field_name(node.value)
    if isinstance(node, ast.Call):
        f = node.func
        fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "call"
        if fname in ("str", "repr", "type", "int", "float", "list", "tuple", "set", "sorted") and node.args:
            return field_name(node.args[0])
        if fname == "len" and node.args:
            return "len_" + field_name(node.args[0])
        if fname in ("join", "format") and isinstance(f, ast.Attribute) and node.args:
            return field_name(node.args[0])
        return fname
    if isinstance(node, ast.FormattedValue):
        return field_name(node.value)
    return "value"


class Renderer:
    """Turns a message expression into template parts, resolving names it can."""

    def __init__(self, rel: str, release: Release, scope: list[ast.stmt] | None) -> None:
        self.rel = rel
        self.release = release
        self.scope = scope  # the enclosing function's body, for `msg = ...` lookups
        self.depth = 0

    def render(self, node: ast.expr, at_line: int) -> list[Part]:
        self.depth += 1
        try:
            if self.depth > 12:
                return [Field(field_name(node))]
            return self._render(node, at_line)
        finally:
            self.depth -= 1

    def _render(self, node: ast.expr, at_line: int) -> list[Part]:
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else [Field("value")]
        if isinstance(node, ast.JoinedStr):
            out: list[Part] = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    out.append(v.value)
                elif isinstance(v, ast.FormattedValue):
                    inner = v.value
                    if isinstance(inner, ast.Name) and self._resolve(inner.id, at_line) is not None:
                        out.extend(self.render(inner, at_line))
                    else:
                        out.append(Field(field_name(inner)))
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.render(node.left, at_line) + self.render(node.right, at_line)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left = self.render(node.left, at_line)
            if len(left) == 1 and isinstance(left[0], str):
                args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
                return percent_parts(left[0], args)
            return [Field(field_name(node))]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            base = self.render(node.func.value, at_line)
            if len(base) == 1 and isinstance(base[0], str):
                return brace_parts(base[0], node.args, {k.arg: k.value for k in node.keywords if k.arg})
            return [Field(field_name(node))]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("strip", "rstrip", "lstrip") and not node.args:
            return self.render(node.func.value, at_line)
        if isinstance(node, ast.Name):
            value = self._resolve(node.id, at_line)
            if value is not None:
                expr, renderer = value
                return renderer.render(expr, getattr(expr, "lineno", at_line))
        return [Field(field_name(node))]

    def _resolve(self, name: str, at_line: int) -> tuple[ast.expr, "Renderer"] | None:
        """A string the name holds: local `msg = ...`, module constant, or imported constant."""
        if self.scope is not None:
            best: ast.expr | None = None
            best_line = -1
            for line, value in _assignments(self.scope).get(name, ()):
                if best_line < line < at_line:
                    best, best_line = value, line
            if best is not None:
                return (best, self) if _stringy(best) or _is_format_call(best) else None
        consts = self.release.constants.get(self.rel, {})
        if name in consts:
            return consts[name], Renderer(self.rel, self.release, None)
        imp = self.release.imports.get(self.rel, {}).get(name)
        if imp:
            target = self.release.module_file(imp[0])
            if target and imp[1] in self.release.constants.get(target, {}):
                return self.release.constants[target][imp[1]], Renderer(target, self.release, None)
        return None


_ASSIGNMENTS: dict[int, tuple[list[ast.stmt], dict[str, list[tuple[int, ast.expr]]]]] = {}


def _assignments(scope: list[ast.stmt]) -> dict[str, list[tuple[int, ast.expr]]]:
    """name -> [(line, value)] of the plain `name = value` statements of a function, once per function."""
    hit = _ASSIGNMENTS.get(id(scope))
    if hit is not None and hit[0] is scope:
        return hit[1]
    table: dict[str, list[tuple[int, ast.expr]]] = defaultdict(list)
    for stmt in scope:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                table[node.targets[0].id].append((node.lineno, node.value))
    _ASSIGNMENTS[id(scope)] = (scope, table)
    return table


def _is_format_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"


def percent_parts(fmt: str, args: list[ast.expr]) -> list[Part]:
    out: list[Part] = []
    pos = 0
    i = 0
    for m in _PERCENT.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if m.group(2) == "%":
            out.append("%")
            continue
        if m.group(1):
            out.append(Field(m.group(1)))
        else:
            out.append(Field(field_name(args[i]) if i < len(args) else "value"))
            i += 1
    out.append(fmt[pos:])
    return out


def brace_parts(fmt: str, args: list[ast.expr], kwargs: dict[str, ast.expr]) -> list[Part]:
    out: list[Part] = []
    auto = 0
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        return [fmt]
    for literal, name, _spec, _conv in parsed:
        out.append(literal)
        if name is None:
            continue
        head = re.split(r"[.\[]", name, maxsplit=1)[0]
        if head == "":
            expr = args[auto] if auto < len(args) else None
            auto += 1
            out.append(Field(field_name(expr) if expr is not None else "value"))
        elif head.isdigit():
            idx = int(head)
            out.append(Field(field_name(args[idx]) if idx < len(args) else "value"))
        else:
            out.append(Field(field_name(kwargs[head]) if head in kwargs else head))
    return out


def normalize(parts: list[Part]) -> list[str]:
    """Alternating [literal, field, literal, ..., literal]: adjacent literals merged, unique
    identifier field names, always an odd length."""
    out: list[str] = [""]
    seen: Counter[str] = Counter()
    for p in parts:
        if isinstance(p, str):
            if len(out) % 2 == 1:
                out[-1] += p
            else:
                out.append(p)
        else:
            if len(out) % 2 == 0:  # two fields in a row: keep one (a regex cannot split them)
                continue
            name = re.sub(r"\W", "_", p.name).strip("_") or "value"
            if not name[0].isalpha():
                name = "f_" + name
            seen[name] += 1
            if seen[name] > 1:
                name = f"{name}_{seen[name]}"
            out.append(name)
    if len(out) % 2 == 0:
        out.append("")
    out[0] = out[0].lstrip()
    out[-1] = out[-1].rstrip()
    return out


def head_literal(parts: list[str]) -> tuple[int, str] | None:
    """(line index, longest literal run) of the first message line with enough literal text.

    A log line shows one line of a message, so the prefilter literal must come from one line.
    """
    lines: list[list[tuple[bool, str]]] = [[]]
    for i, p in enumerate(parts):
        if i % 2:
            lines[-1].append((True, p))
            continue
        chunks = p.split("\n")
        for j, c in enumerate(chunks):
            if j:
                lines.append([])
            lines[-1].append((False, c))
    for n, line in enumerate(lines):
        literal = "".join(t for is_field, t in line if not is_field)
        if len(literal.strip()) >= MIN_LITERAL:
            longest = max((t.strip() for is_field, t in line if not is_field), key=len)
            return n, longest
    return None


def anchor_word(literal: str, parts_line_edges: tuple[bool, bool]) -> list[str]:
    """The whole words of a literal (an edge word next to a field may be glued to the field)."""
    words = [m for m in _WORD.finditer(literal)]
    out = []
    for m in words:
        if m.start() == 0 and parts_line_edges[0]:
            continue
        if m.end() == len(literal) and parts_line_edges[1]:
            continue
        if len(m.group()) >= 3:
            out.append(m.group().lower())
    return out


def literal_edges(parts: list[str], literal: str) -> tuple[bool, bool]:
    """Whether the prefilter literal is glued to a field on its left / right (no space between):
    its edge word may then be part of a longer word in the log."""
    for i in range(0, len(parts), 2):
        lines = parts[i].split("\n")
        for j, line in enumerate(lines):
            if line.strip() != literal:
                continue
            left = i > 0 and j == 0 and line[:1] == literal[:1]
            right = i < len(parts) - 1 and j == len(lines) - 1 and line[-1:] == literal[-1:]
            return left, right
    return True, True


def advice(text: str) -> list[str]:
    """Numbered advice in a message: "Possible solutions:\\n1. ...\\n2. ..." (or inline)."""
    items = re.findall(r"(?m)^\s*\d+[.)]\s+(.+?)\s*$", text)
    if len(items) >= 2:
        return items
    m = re.search(r"(?i)(?:solutions?|suggestions?|try|workarounds?|options?)\s*:\s*(1[.)]\s.+)", text, re.S)
    if m:
        items = [s.strip() for s in re.split(r"\s*\b\d+[.)]\s+", m.group(1)) if s.strip()]
        if len(items) >= 2:
            return items
    return []


def display(parts: list[str]) -> str:
    return "".join(p if i % 2 == 0 else "{" + p + "}" for i, p in enumerate(parts))


# --------------------------------------------------------------------------
# Call sites
# --------------------------------------------------------------------------


@dataclass
class Site:
    parts: list[str]
    kind: str  # raise | assert | log
    cls: str  # exception class or log level
    file: str
    function: str
    line: int


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return ""


def _message_of_call(call: ast.Call) -> list[tuple[str, str, ast.expr, list[ast.expr]]]:
    """(kind, level or class, message expression, lazy %-args) per way the call logs or raises it."""
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr in LEVELS:
        owner = _dotted(f.value).split(".")[-1]
        if _LOGGER_NAME.search(owner) and call.args:
            return [("log", LEVELS[f.attr], call.args[0], list(call.args[1:]))]
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    helper = LOG_FUNCS.get(name)
    if helper and (name != "warn" or _dotted(f).startswith("warnings")) and len(call.args) > helper.arg:
        lazy = list(call.args[helper.arg + 1:]) if helper.lazy else []
        return [(kind, cls, call.args[helper.arg], lazy) for kind, cls in helper.outcomes]
    return []


def sites(rel: str, release: Release) -> Iterator[Site]:
    tree = release.trees[rel]

    # Statements only: a raise, an assert, or a logging call standing as a statement. Not
    # descending into expressions keeps a release's read to a couple of minutes.
    def visit(body: list[ast.stmt], qual: str, scope: list[ast.stmt] | None) -> Iterator[Site]:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from visit(stmt.body, f"{qual}.{stmt.name}" if qual else stmt.name, stmt.body)
                continue
            if isinstance(stmt, ast.ClassDef):
                yield from visit(stmt.body, f"{qual}.{stmt.name}" if qual else stmt.name, scope)
                continue
            for kind, cls, expr, lazy in _site(stmt.value if isinstance(stmt, ast.Expr) else stmt):
                parts = Renderer(rel, release, scope).render(expr, stmt.lineno)
                if lazy and len(parts) == 1 and isinstance(parts[0], str):
                    parts = percent_parts(parts[0], lazy)
                yield Site(normalize(parts), kind, cls, rel, qual or "<module>", stmt.lineno)
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, name, None)
                if isinstance(inner, list):
                    yield from visit(inner, qual, scope)
            for handler in getattr(stmt, "handlers", ()):
                yield from visit(handler.body, qual, scope)
            for case in getattr(stmt, "cases", ()):
                yield from visit(case.body, qual, scope)

    yield from visit(tree.body, "", None)


def _site(node: ast.AST) -> list[tuple[str, str, ast.expr, list[ast.expr]]]:
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
        cls = _dotted(node.exc.func).split(".")[-1] or "Exception"
        return [("raise", cls, node.exc.args[0], [])]
    if isinstance(node, ast.Assert) and node.msg is not None:
        return [("assert", "AssertionError", node.msg, [])]
    if isinstance(node, ast.Call):
        return _message_of_call(node)
    return []


def read_release(wheel: str) -> tuple[list[Site], int, list[str]]:
    """All sites of one wheel (a worker process runs this)."""
    release = Release(Path(wheel))
    out: list[Site] = []
    for rel in sorted(release.trees):
        out.extend(sites(rel, release))
    return out, len(release.trees), release.unparsable


# --------------------------------------------------------------------------
# Merge and write
# --------------------------------------------------------------------------


def build(releases: list[str], jobs: int = 2) -> dict:
    wheels = [wheelcache.fetch("sglang", v) for v in releases]
    per_release: list[tuple[list[Site], int, list[str]]]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        per_release = list(pool.map(read_release, [str(w) for w in wheels]))

    merged: dict[tuple, dict] = {}
    short = 0
    counts: dict[str, dict[str, int]] = {}
    for ri, (found, nfiles, unparsable) in enumerate(per_release):
        counts[releases[ri]] = {"files": nfiles, "sites": len(found), "unparsable": len(unparsable)}
        for s in found:
            literal_key = tuple(p if i % 2 == 0 else None for i, p in enumerate(s.parts))
            key = (literal_key, s.kind, s.cls, s.file, s.function)
            e = merged.get(key)
            if e is None:
                e = merged[key] = {"site": s, "lines": {}}
            if ri not in e["lines"]:
                e["lines"][ri] = s.line
            e["site"] = s if ri >= max(e["lines"]) else e["site"]  # newest wording of field names

    files: dict[str, int] = {}
    classes: dict[str, int] = {}
    entries = []
    word_df: Counter[str] = Counter()
    staged = []
    for e in merged.values():
        s: Site = e["site"]
        head = head_literal(s.parts)
        if head is None:
            short += 1
            continue
        literal = head[1]
        words = sorted(set(anchor_word(literal, literal_edges(s.parts, literal))))
        word_df.update(words)
        staged.append((s, e["lines"], literal, words, head[0]))
    for s, lines, literal, words, head_line in staged:
        mask = sum(1 << ri for ri in lines)
        text = display(s.parts)
        lits = " ".join(s.parts[0::2])
        row = [
            s.parts,
            s.kind[0] + ":" + s.cls,  # "r:ValueError", "a:AssertionError", "l:warning"
            files.setdefault(s.file, len(files)),
            s.function,
            mask,
            [lines[ri] for ri in sorted(lines)],
            literal,
            min(words, key=lambda w: (word_df[w], -len(w), w)) if words else "",
            head_line,
            sorted(set(_FLAG.findall(lits))),
            sorted(set(_ENV.findall(lits))),
            advice(text),
        ]
        classes.setdefault(row[1], 0)
        classes[row[1]] += 1
        entries.append(row)
    entries.sort(key=lambda r: (r[2], r[3], r[5][-1], r[1], r[0]))
    file_list = sorted(files, key=files.__getitem__)
    return {
        "format": FORMAT_VERSION,
        "generator": "tools/extract_messages.py",
        "source": "sglang wheels from PyPI, read with ast: raise X(msg), assert c, msg, logger.<level>(msg), logging helpers (LOG_FUNCS)",
        "releases": releases,
        "wheels": wheelcache.provenance(wheels),
        "min_literal": MIN_LITERAL,
        "notes": (f"templates none of whose lines has {MIN_LITERAL} literal characters are left out "
                  f"({short} of them); tests, benchmarks, third_party/ and multimodal_gen/ (the diffusion "
                  "server) are not read, nor logger.debug"),
        "skipped_short": short,
        "per_release": counts,
        "columns": ["parts", "kind", "file", "function", "releases_mask", "lines", "literal", "anchor",
                    "head_line", "flags", "env", "advice"],
        "files": file_list,
        "entries": entries,
    }


def write(data: dict, out: Path) -> None:
    """JSON lines, gzip: the header, the prefilter literals, the anchor words, then one template per
    line. A reader parses the first three at once and a template's line only when a lookup needs it."""
    cols = data["columns"]
    lit, anchor = cols.index("literal"), cols.index("anchor")
    keep = [i for i in range(len(cols)) if i not in (lit, anchor)]
    header = {k: v for k, v in data.items() if k != "entries"}
    header["columns"] = [cols[i] for i in keep]
    lines = [json.dumps(header, ensure_ascii=False, separators=(",", ":")),
             json.dumps([r[lit] for r in data["entries"]], ensure_ascii=False, separators=(",", ":")),
             json.dumps([r[anchor] for r in data["entries"]], ensure_ascii=False, separators=(",", ":"))]
    lines += [json.dumps([r[i] for i in keep], ensure_ascii=False, separators=(",", ":")) for r in data["entries"]]
    raw = ("\n".join(lines) + "\n").encode("utf-8")
    # mtime=0 and no file name: the same input gives the same bytes
    with open(out, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as gz:
            gz.write(raw)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--releases", nargs="+", default=DEFAULT_RELEASES)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    data = build(sorted(args.releases, key=wheelcache.version_key), args.jobs)
    write(data, args.out)
    print(f"{len(data['entries'])} templates from {len(data['releases'])} releases "
          f"({data['skipped_short']} too short) -> {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
