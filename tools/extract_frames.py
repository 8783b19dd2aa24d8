#!/usr/bin/env python3
"""Build sglang_doctor/data/frames.zip: where each function of SGLang's source sits, per release.

A traceback frame `File ".../sglang/srt/managers/scheduler.py", line 2567, in event_loop_overlap` holds
only in the releases whose scheduler.py has an `event_loop_overlap` spanning line 2567: a log that
states no version is bounded by its frames (launch/version_infer.py).

Read with ``ast`` from every release wheel from 0.2.0 to the flag registry's newest (the releases before
0.4.0 too, which the flag registry leaves out: an old log's frames must not pass for 0.4's), sglang
never imported: for each
``.py`` file under ``sglang/`` (test directories left out: no server runs them), each function's (and
method's) first and last line, and the file's length for module-level frames (`in <module>`). A
function's spans are stored once per run of consecutive releases where they stay the same.

Format: a zip (members stored with a fixed time, sorted: the same wheels give the same bytes) whose
``index.json`` is ``{"format": 1, "generator": ..., "releases": [...], "wheels": [{wheel, sha256}]}``
and whose member ``<directory>.json`` (``srt/managers.json``; ``.json`` for sglang/ itself) holds that
directory's files::

    {"scheduler.py": {"event_loop_overlap": [[lo, hi, start, end, ...], ...], ...}, ...}

where lo..hi are indices into "releases" and start, end pairs the function's spans there (several
when the file defines the name more than once: methods of different classes). A run reads only the
members its frames name.

Usage::

    python tools/extract_frames.py                 # 0.2.0 to the newest release of data/flags.json
    python tools/extract_frames.py --releases 0.5.4 0.5.14 --out /tmp/frames.json.gz
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import wheelcache  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "sglang_doctor" / "data" / "frames.zip"
MODULE = "<module>"
_TESTS = re.compile(r"(?:^|/)tests?/")  # sglang/test/, multimodal_gen/test/


def spans_of(wheel: str) -> dict[str, dict[str, tuple[int, ...]]]:
    """file (relative to sglang/) -> function name -> its spans, flattened (start, end, ...), sorted."""
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if not name.startswith("sglang/") or not name.endswith(".py") or _TESTS.search(name[7:]):
                continue
            source = z.read(name)
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError):
                continue
            funcs: dict[str, list[tuple[int, int]]] = {MODULE: [(1, source.count(b"\n") + 1)]}
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    funcs.setdefault(node.name, []).append((start, node.end_lineno or node.lineno))
            out[name[len("sglang/"):]] = {f: tuple(x for span in sorted(s) for x in span) for f, s in funcs.items()}
    return out


def build(releases: list[str]) -> dict:
    wheels = [wheelcache.fetch("sglang", r) for r in releases]
    with ProcessPoolExecutor() as pool:
        per_release = list(pool.map(spans_of, [str(w) for w in wheels]))
    files: dict[str, dict[str, list[list[int]]]] = {}
    for i, found in enumerate(per_release):
        for path, funcs in found.items():
            for func, spans in funcs.items():
                segs = files.setdefault(path, {}).setdefault(func, [])
                if segs and segs[-1][1] == i - 1 and tuple(segs[-1][2:]) == spans:
                    segs[-1][1] = i  # the same spans as the release before: one run
                else:
                    segs.append([i, i, *spans])
    index = {
        "format": 1,
        "generator": "tools/extract_frames.py",
        "source": "sglang wheels from PyPI, read with ast: each function's first (decorators included) and "
                  "last line per file under sglang/ (tests left out), and each file's length (<module>)",
        "releases": releases,
        "wheels": wheelcache.provenance(wheels),
    }
    by_dir: dict[str, dict[str, dict]] = {}
    for path in sorted(files):
        directory, _, name = path.rpartition("/")
        by_dir.setdefault(directory, {})[name] = files[path]
    return {"index": index, "dirs": by_dir}


def write(data: dict, out: str) -> None:
    def member(name: str, value: object) -> None:
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, json.dumps(value, separators=(",", ":")))

    with zipfile.ZipFile(out, "w") as z:
        member("index.json", data["index"])
        for directory in sorted(data["dirs"]):
            member(f"{directory}.json", data["dirs"][directory])


FIRST = "0.2.0"


def default_releases() -> list[str]:
    """Every release from FIRST to the flag registry's newest."""
    newest = json.loads((REPO / "sglang_doctor" / "data" / "flags.json").read_text())["releases"][-1]
    key = wheelcache.version_key
    return [r for r in wheelcache.sglang_releases(first=FIRST) if key(r) <= key(newest)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--releases", nargs="*", help="default: 0.2.0 to the newest release of data/flags.json")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    releases = a.releases or default_releases()
    data = build(releases)
    write(data, a.out)
    files = sum(len(d) for d in data["dirs"].values())
    print(f"{a.out}: {len(releases)} releases, {files} files, {Path(a.out).stat().st_size} bytes")

if __name__ == "__main__":
    main()
