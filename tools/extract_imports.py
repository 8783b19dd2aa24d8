#!/usr/bin/env python3
"""Build sglang_doctor/data/optional-imports.json: the names SGLang imports from other packages
only some of the time, and the package each comes from.

SGLang imports its optional dependencies (vllm, flashinfer, sgl-kernel, aiter, deep_gemm, ...)
inside ``try: ... except ImportError:``, under a platform test (``if _is_cuda:``) or inside the
function that needs them. When such an import failed, the log names only the name:
``NameError: name 'check_marlin_supported' is not defined`` (the ``try`` left it undefined) or
a cut ``ImportError: cannot import name 'sgl_per_token_group_quant_fp8'``. This map gives the
package back.

The wheels are read with ``ast``; sglang is never imported. Only the server's code is read
(``sglang/srt/`` and the top-level modules). Two lists per top-level import name:

* ``optional`` -- names bound by an import in a module-level ``try`` that catches ImportError,
  which the ``except`` branch does not define otherwise: undefined when the package is missing;
* ``imported`` -- names imported (``from pkg import name``) anywhere but unconditionally at
  module level: in a ``try`` or its ``except`` branch, under an ``if``, in a function.

A name imported from two different packages (in any release, conditionally or not) is left
out: the map only answers when it is sure. Imports under ``if TYPE_CHECKING:``, from the
standard library, from sglang itself, and of a module that sits next to the importing file (a
script's sibling) are not counted.

Usage::

    python tools/extract_imports.py                          # the default releases
    python tools/extract_imports.py --releases 0.5.14 0.5.23 --out /tmp/imports.json
    python tools/extract_imports.py --wheels /tmp/wheels     # wheels already downloaded there

Wheels are cached in --cache (default /tmp/sglang-import-wheels), outside the repo.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "sglang_doctor" / "data" / "optional-imports.json"
DEFAULT_CACHE = Path("/tmp/sglang-import-wheels")
# Releases spread over the range the rules cover (0.4.x to the newest): a name SGLang stopped
# importing is still in the logs of the releases that did.
DEFAULT_RELEASES = ["0.4.3.post4", "0.4.6.post5", "0.4.8", "0.4.10.post2", "0.5.1", "0.5.3.post3", "0.5.4",
                    "0.5.6", "0.5.8", "0.5.10", "0.5.12", "0.5.14", "0.5.18", "0.5.20", "0.5.23"]
FORMAT_VERSION = 1
# Exception types whose handler catches a failed import.
_CATCHES_IMPORT = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}

TOP = "top"  # module level, unconditional
COND = "cond"  # module level, under an if / with / for: runs at import time, conditionally
TRY = "try"  # in a try at import time that catches ImportError
GUARDED = "guarded"  # not at import time (a function), or in an except branch


@dataclass
class Found:
    """What the sources import, by top-level package."""

    optional: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    imported: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # the packages each name is imported from (in any context), for the ambiguity check
    sources: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def update(self, other: "Found") -> None:
        for mine, theirs in ((self.optional, other.optional), (self.imported, other.imported),
                             (self.sources, other.sources)):
            for k, v in theirs.items():
                mine[k] |= v


def _catches_import(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    return any(isinstance(n, ast.Name) and n.id in _CATCHES_IMPORT
               or isinstance(n, ast.Attribute) and n.attr in _CATCHES_IMPORT for n in ast.walk(handler.type))


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """Names an except branch defines (a fallback value, a stub function or class, another import)."""
    out: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _inner(ctx: str) -> str:
    """The context of a block nested in a conditional statement."""
    return COND if ctx == TOP else ctx


class _Reader:
    """Walks one module, recording each import with the context it runs in."""

    def __init__(self, found: Found, siblings: set[str], top_bound: set[str]) -> None:
        self.found = found
        self.siblings = siblings  # modules next to the file: a script's own imports
        # names some module binds by an unconditional import (of any module, sglang's own too):
        # a NameError for one of them is a file that forgot an import, not a missing package
        self.top_bound = top_bound

    def _package(self, module: str | None, level: int) -> str | None:
        if level or not module:
            return None
        top = module.split(".")[0]
        if top in _STDLIB or top == "sglang" or top in self.siblings:
            return None
        return top

    def _record(self, node: ast.Import | ast.ImportFrom, ctx: str, defined: frozenset[str]) -> None:
        f = self.found
        if ctx == TOP:
            self.top_bound.update(a.asname or a.name.split(".")[0] for a in node.names)
        if isinstance(node, ast.ImportFrom):
            pkg = self._package(node.module, node.level)
            if pkg is None:
                return
            for a in node.names:
                if a.name == "*":
                    continue
                f.sources[a.name].add(pkg)
                if ctx != TOP:
                    f.imported[pkg].add(a.name)
                bound = a.asname or a.name
                if ctx == TRY and bound not in defined:
                    f.optional[pkg].add(bound)
            return
        for a in node.names:  # `import deep_gemm`, `import vllm._C as ops`: only the bound name
            pkg = self._package(a.name, 0)
            bound = a.asname or a.name.split(".")[0]
            if pkg is not None and ctx == TRY and bound not in defined:
                f.optional[pkg].add(bound)

    def visit(self, stmts: list[ast.stmt], ctx: str, defined: frozenset[str] = frozenset()) -> None:
        for node in stmts:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._record(node, ctx, defined)
            elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
                self._try(node, ctx, defined)  # type: ignore[arg-type]
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):  # (the body of `if TYPE_CHECKING:` never runs)
                    self.visit(node.body, _inner(ctx), defined)
                self.visit(node.orelse, _inner(ctx), defined)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.visit(node.body, GUARDED, defined)
            elif isinstance(node, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
                self.visit(node.body + getattr(node, "orelse", []), _inner(ctx), defined)

    def _try(self, node: ast.Try, ctx: str, defined: frozenset[str]) -> None:
        catching = [h for h in node.handlers if _catches_import(h)]
        if ctx in (TOP, COND, TRY) and catching:
            # The names the except branch defines are defined either way: never left undefined.
            fallback = frozenset().union(*(_bound_names(h.body) for h in catching))
            self.visit(node.body, TRY, defined | fallback)
        else:
            self.visit(node.body, _inner(ctx), defined)
        for h in node.handlers:
            self.visit(h.body, GUARDED, defined)
        self.visit(node.orelse, _inner(ctx), defined)
        self.visit(node.finalbody, ctx, defined)


def _is_server_source(path: str) -> bool:
    """The server's code: sglang/srt/ and the top-level modules (launch_server.py, ...)."""
    return path.endswith(".py") and (path.startswith("sglang/srt/") or path.count("/") == 1)


def read_sources(files: dict[str, bytes]) -> Found:
    """Read one release: `files` maps a wheel path (`sglang/srt/x.py`) to its bytes. (Optional names
    are judged per release: one a later release imports unconditionally was optional in this one.)"""
    found = Found()
    top_bound: set[str] = set()
    entries: dict[str, set[str]] = defaultdict(set)  # directory -> module and package names in it
    for path in files:
        parent, _, name = path.rpartition("/")
        entries[parent].add(name[:-3] if name.endswith(".py") else name)
        grand, _, pkg = parent.rpartition("/")
        entries[grand].add(pkg)
    for path in sorted(files):
        if not _is_server_source(path):
            continue
        try:
            tree = ast.parse(files[path])
        except (SyntaxError, ValueError):
            continue
        _Reader(found, entries[path.rpartition("/")[0]], top_bound).visit(tree.body, TOP)
    for names in found.optional.values():
        names -= top_bound
    return found


def wheel_sources(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as z:
        return {n: z.read(n) for n in z.namelist() if n.startswith("sglang/") and n.endswith(".py")}


def build(found: Found, releases: list[str]) -> dict[str, object]:
    """The shipped map: per package, its names, sorted; a name from two packages left out."""
    sure = {name for name, pkgs in found.sources.items() if len(pkgs) == 1}

    def keep(table: dict[str, set[str]], extra_ok: bool) -> dict[str, list[str]]:
        # extra_ok: a bound name no from-import imports (`import deep_gemm`, an `as` alias) is sure
        # unless two packages bind it.
        owners: dict[str, set[str]] = defaultdict(set)
        for pkg, names in table.items():
            for n in names:
                owners[n].add(pkg)
        out: dict[str, list[str]] = {}
        for pkg in sorted(table):
            names = sorted(n for n in table[pkg] if len(owners[n]) == 1
                           and (n in sure or (extra_ok and n not in found.sources)))
            if names:
                out[pkg] = names
        return out

    return {"format": FORMAT_VERSION, "releases": releases,
            "optional": keep(found.optional, True), "imported": keep(found.imported, False)}


_VERSION = re.compile(r"^sglang-([^-]+)-")


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def download(releases: list[str], cache: Path) -> Iterator[tuple[str, Path]]:
    """Each release's wheel, from the cache or by `pip download`."""
    cache.mkdir(parents=True, exist_ok=True)
    for v in releases:
        hit = sorted(cache.glob(f"sglang-{v}-*.whl"))
        if not hit:
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"sglang=={v}", "-d", str(cache)]
            if subprocess.run(cmd, capture_output=True, text=True).returncode != 0:
                print(f"sglang {v}: no wheel, skipped", file=sys.stderr)
                continue
            hit = sorted(cache.glob(f"sglang-{v}-*.whl"))
        if hit:
            yield v, hit[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--releases", nargs="+", default=DEFAULT_RELEASES)
    ap.add_argument("--wheels", type=Path, help="read every sglang wheel in this directory instead")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if args.wheels:
        wheels = sorted(((m[1], w) for w in args.wheels.glob("sglang-*.whl") if (m := _VERSION.match(w.name))),
                        key=lambda vw: version_key(vw[0]))
    else:
        wheels = list(download(args.releases, args.cache))
    if not wheels:
        print("no wheels read", file=sys.stderr)
        return 1
    found = Found()
    for v, wheel in wheels:
        found.update(read_sources(wheel_sources(wheel)))
    data = build(found, [v for v, _ in wheels])
    text = json.dumps(data, indent=0, separators=(",", ":")) + "\n"
    args.out.write_text(text, encoding="utf-8")
    n_opt = sum(map(len, data["optional"].values()))  # type: ignore[union-attr]
    n_imp = sum(map(len, data["imported"].values()))  # type: ignore[union-attr]
    print(f"{args.out}: {len(wheels)} releases, {n_opt} optional names, {n_imp} imported names, {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
