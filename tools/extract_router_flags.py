#!/usr/bin/env python3
"""Build sglang_doctor/data/router-flags.json: the SGLang router's flags, per release.

The router ships on PyPI as ``sglang-router`` (a Rust core with a Python front end).
Every release with a command line declares it in Python, read here with ``ast``
(nothing is imported), with the machinery of ``extract_flags.py``:

* ``RouterArgs.add_cli_args(parser, use_router_prefix=..., exclude_host_port=...)``
  registers the flags -- in ``sglang_router/launch_router.py`` up to 0.1.9, in
  ``sglang_router/router_args.py`` from 0.2.0 on;
* ``python -m sglang_router.launch_router`` (``parse_router_args``) calls it without
  a prefix: ``--worker-startup-timeout-secs``;
* ``python -m sglang_router.launch_server`` (``main``) registers SGLang's own
  ``ServerArgs`` flags (those are in flags.json, by SGLang release), then calls it
  with ``use_router_prefix=True, exclude_host_port=True``
  (``--router-worker-startup-timeout-secs``), then adds a few flags of its own.

The walk binds the call's keyword arguments and follows ``if`` statements whose test
they decide (``if not exclude_host_port:``), so each launcher gets exactly its flags;
the same ``add_argument`` call read under both launchers pairs the two spellings.
``smg launch`` / ``smg server`` (0.2.4+, ``sglang_router/cli.py``) hand their argv to
these two launchers unchanged.

Usage::

    python tools/extract_router_flags.py                 # every release on PyPI
    python tools/extract_router_flags.py --releases 0.1.4 0.3.2 --out /tmp/r.json
    python tools/extract_router_flags.py --dump 0.3.2    # print one release

The output format is documented at the top of ``sglang_doctor/registry/router_flags.py``.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import extract_flags as X  # noqa: E402  (a sibling tool, not a package)

DIST = "sglang-router"
PACKAGE = "sglang_router"
DEFAULT_OUT = X.REPO / "sglang_doctor" / "data" / "router-flags.json"
DEFAULT_CACHE = Path("/tmp/sglang-router-wheels")
FORMAT_VERSION = 1
LAUNCHERS = ("launch_router", "launch_server")
# Where each launcher builds its parser (module, function).
ENTRY_POINTS = {
    "launch_router": ("sglang_router.launch_router", "parse_router_args"),
    "launch_server": ("sglang_router.launch_server", "main"),
}


# --------------------------------------------------------------------------
# Reading one release
# --------------------------------------------------------------------------


@dataclass
class Registered:
    """A flag and the ``add_argument`` call that declared it (to pair spellings)."""

    flag: X.Flag
    site: tuple[str, int, int]  # (module path, line, column) of the call


@dataclass
class RouterRelease:
    version: str
    flags: dict[str, list[Registered]] = field(default_factory=dict)  # launcher -> flags
    notes: list[str] = field(default_factory=list)


class RouterReader:
    """Walks a launcher's parser setup with its arguments bound."""

    def __init__(self, archive: X.Archive) -> None:
        self.base = X.ReleaseReader(archive)  # its add_argument reader and evaluator
        self.index = self.base.index
        self.ev = self.base.ev
        self.notes: list[str] = []

    def read(self) -> dict[str, list[Registered]]:
        out: dict[str, list[Registered]] = {}
        for launcher, (modname, fname) in ENTRY_POINTS.items():
            mod = self.index.get(modname)
            fn = mod.functions.get(fname) if mod else None
            if fn is None:
                self.notes.append(f"{launcher}: no {modname}.{fname}")
                continue
            found: list[Registered] = []
            self.walk_entry(fn, mod, found)  # type: ignore[arg-type]
            if found:
                out[launcher] = found
            else:
                self.notes.append(f"{launcher}: no flags registered")
        if not out:
            raise ValueError("no command-line launcher, a Python API only (" + "; ".join(self.notes) + ")")
        return out

    # -- the entry point: RouterArgs.add_cli_args(...) and its own add_argument calls ----

    def walk_entry(self, fn: ast.FunctionDef, mod: X.Module, out: list[Registered]) -> None:
        for call in X._calls_in_order(fn):
            func = call.func
            if not isinstance(func, ast.Attribute):
                continue
            if func.attr == "add_argument":
                self.register(call, mod, {}, out)
            elif func.attr == "add_cli_args":
                owner = self.ev.eval(func.value, mod, {})
                if not isinstance(owner, X.ClassRef) or owner.node.name != "RouterArgs":
                    continue  # ServerArgs.add_cli_args: SGLang's flags, in flags.json
                method = next((s for s in owner.node.body if isinstance(s, ast.FunctionDef) and s.name == "add_cli_args"), None)
                if method is None:
                    self.notes.append("RouterArgs.add_cli_args not found")
                    continue
                local = self.bind(method, call, mod, owner.module)
                self.walk(method.body, owner.module, local, out)

    def bind(self, method: ast.FunctionDef, call: ast.Call, caller: X.Module, callee: X.Module) -> dict[str, Any]:
        """Parameter name -> value for this call: its arguments, else the signature's defaults."""
        params = [a.arg for a in method.args.args]
        if not any(X.callable_name(d) == "staticmethod" for d in method.decorator_list):
            params = params[1:]  # self / cls is not among the call's arguments
        defaults = method.args.defaults
        local: dict[str, Any] = {}
        for name, node in zip(params[len(params) - len(defaults):], defaults):
            local[name] = self.ev.eval(node, callee, {})
        for name, node in zip(params, call.args):
            local[name] = self.ev.eval(node, caller, {})
        for kw in call.keywords:
            if kw.arg:
                local[kw.arg] = self.ev.eval(kw.value, caller, {})
        local.pop("parser", None)
        return local

    # -- statements -------------------------------------------------------------------

    def walk(self, body: list[ast.stmt], mod: X.Module, local: dict[str, Any], out: list[Registered]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                test = self.truth(stmt.test, mod, local)
                if test is None:
                    self.notes.append(f"line {stmt.lineno}: undecided `if`, both branches read")
                    self.walk(stmt.body + stmt.orelse, mod, local, out)
                else:
                    self.walk(stmt.body if test else stmt.orelse, mod, local, out)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                local[stmt.targets[0].id] = self.value(stmt.value, mod, local)
                self.calls(stmt, mod, local, out)
            elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
                nested = [s for part in ("body", "orelse", "finalbody") for s in getattr(stmt, part, [])]
                for handler in getattr(stmt, "handlers", []):
                    nested += handler.body
                self.walk(nested, mod, local, out)
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.calls(stmt, mod, local, out)

    def calls(self, stmt: ast.stmt, mod: X.Module, local: dict[str, Any], out: list[Registered]) -> None:
        for call in X._calls_in_order(stmt):
            if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument":
                self.register(call, mod, local, out)

    def register(self, call: ast.Call, mod: X.Module, local: dict[str, Any], out: list[Registered]) -> None:
        flag = self.base.from_add_argument(call, mod, local)
        if flag is None:
            return
        if any("{...}" in n for n in [flag.name, *flag.aliases]):
            self.notes.append(f"line {call.lineno}: flag name not statically known ({flag.name})")
            return
        out.append(Registered(flag, (mod.path, call.lineno, call.col_offset)))

    # -- expressions the base evaluator leaves unknown ---------------------------------

    def value(self, node: ast.expr, mod: X.Module, local: dict[str, Any]) -> Any:
        if isinstance(node, ast.IfExp):  # prefix = "router-" if use_router_prefix else ""
            test = self.truth(node.test, mod, local)
            if test is None:
                return X.UNKNOWN
            return self.value(node.body if test else node.orelse, mod, local)
        return self.ev.eval(node, mod, local)

    def truth(self, node: ast.expr, mod: X.Module, local: dict[str, Any]) -> bool | None:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.truth(node.operand, mod, local)
            return None if inner is None else not inner
        if isinstance(node, ast.BoolOp):
            vals = [self.truth(v, mod, local) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in vals else None if None in vals else True
            return True if True in vals else None if None in vals else False
        val = self.value(node, mod, local)
        if val is X.UNKNOWN or isinstance(val, (X.ClassRef, X.FuncRef, X.ModRef)):
            return None
        return bool(val)


def what_it_holds(path: Path) -> str:
    """Top-level entries of a wheel, for a skip reason (the first releases were packaged oddly)."""
    import zipfile

    if path.suffix != ".whl":
        return "an sdist"
    with zipfile.ZipFile(path) as zf:
        tops = sorted({n.split("/", 1)[0] for n in zf.namelist() if ".dist-info" not in n.split("/", 1)[0]})
    return "it holds " + ", ".join(tops[:4]) + (", ..." if len(tops) > 4 else "")


def read_release(path: Path, version: str) -> RouterRelease:
    archive = X.Archive(path, package=PACKAGE)
    if not archive.files:
        raise ValueError(f"no {PACKAGE}/*.py in the wheel ({what_it_holds(path)}): no command line to read")
    reader = RouterReader(archive)
    flags = reader.read()
    return RouterRelease(version, flags, reader.notes)


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def merged(regs: list[Registered]) -> list[X.Flag]:
    """One flag per long name (a later registration wins, as the parser would error)."""
    by_name = {r.flag.name: r.flag for r in regs}
    return sorted(by_name.values(), key=lambda f: f.name)


def pairs(results: list[RouterRelease]) -> dict[str, str]:
    """launch_router spelling -> launch_server spelling, where one call declares both.

    A call that gives the same name under both launchers (``--worker-urls``) pairs with
    itself. The newest release wins when spellings changed.
    """
    out: dict[str, str] = {}
    for res in sorted(results, key=lambda r: X.version_key(r.version)):
        sites = {r.site: r.flag.name for r in res.flags.get("launch_server", [])}
        for r in res.flags.get("launch_router", []):
            if r.site in sites:
                out[r.flag.name] = sites[r.site]
    return out


def build(results: list[RouterRelease], skipped: dict[str, str], selection: str) -> dict[str, Any]:
    ordered = sorted(results, key=lambda r: X.version_key(r.version))
    helps: dict[str, int] = {}
    specs: dict[str, int] = {}
    rows: list[list[Any]] = []
    per_launcher: dict[str, dict[str, list[int]]] = {name: {} for name in LAUNCHERS}
    for launcher in LAUNCHERS:
        # One long name per flag across releases, as for the launch flags.
        per_rel = [X.ReleaseResult(r.version, merged(r.flags.get(launcher, [])), "argparse", None, True, [])
                   for r in ordered]
        for line in X.canonicalize(per_rel):
            print(f"{launcher}: canonical name: {line}", file=sys.stderr)
        for res in per_rel:
            if not res.flags:
                continue
            idx = []
            for f in res.flags:
                row = f.row(helps.setdefault(f.help, len(helps)))
                key = json.dumps(row, sort_keys=True)
                if key not in specs:
                    specs[key] = len(rows)
                    rows.append(row)
                idx.append(specs[key])
            per_launcher[launcher][res.version] = sorted(idx)
    return {
        "format": FORMAT_VERSION,
        "generator": "tools/extract_router_flags.py",
        "source": "sglang-router wheels from PyPI; RouterArgs.add_cli_args as each launcher calls it, read with ast",
        "selection": selection,
        "releases": [r.version for r in ordered],
        "skipped": skipped,
        "launchers": list(LAUNCHERS),
        "spec_fields": X.SPEC_FIELDS,
        "specs": rows,
        "helps": list(helps),
        "release_specs": {name: {v: X.encode_indices(idx) for v, idx in rels.items()}
                          for name, rels in per_launcher.items()},
        "server_spelling": dict(sorted(pairs(results).items())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", nargs="*", help="explicit versions (default: every final release on PyPI)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="wheel cache dir (keep it outside the repo)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--pip", default=f"{sys.executable} -m pip", help="pip command")
    ap.add_argument("--dump", metavar="VERSION", help="print the flags of one release and exit")
    args = ap.parse_args(argv)
    pip = args.pip.split()
    args.cache.mkdir(parents=True, exist_ok=True)

    if args.dump:
        path, note = X.download(pip, args.cache, args.dump, DIST)
        if path is None:
            print(note, file=sys.stderr)
            return 1
        res = read_release(path, args.dump)
        for launcher, regs in res.flags.items():
            for f in merged(regs):
                print(launcher, json.dumps(f.row(0)[:-1]))
        print(f"# notes={res.notes}", file=sys.stderr)
        return 0

    if args.releases:
        versions = sorted(args.releases, key=X.version_key)
        selection = "explicit list: " + " ".join(versions)
    else:
        versions = X.select_releases(X.pip_available_versions(pip, DIST), "0.0.1")
        selection = f"every final and .postN release of {DIST} on PyPI"
    results: list[RouterRelease] = []
    skipped: dict[str, str] = {}
    for v in versions:
        path, note = X.download(pip, args.cache, v, DIST)
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
        counts = "  ".join(f"{k} {len(merged(regs)):3d}" for k, regs in res.flags.items())
        print(f"{v:<8} {counts}{'  ' + '; '.join(res.notes) if res.notes else ''}", file=sys.stderr)
    data = build(results, skipped, selection)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, {len(data['specs'])} specs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
