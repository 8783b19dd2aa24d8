#!/usr/bin/env python3
"""Check the subsystem map's frame patterns against real SGLang source trees, and record the matches.

Every `sglang:` pattern of sglang_doctor/data/subsystems.yaml must match a file of at least one release.
The unpacked wheels (`pip download --no-deps sglang==X -d wheels/` and unzip `sglang/*` into
wheels/src/X/) are read; the files each pattern matches, per release, are written to
tests/data/subsystem-files.json, which tests/test_subsystems.py reads (so the test runs without wheels).

Usage: .venv/bin/python tools/check_subsystems.py [--src wheels/src] [--out tests/data/subsystem-files.json]
Exit 1 when a pattern matches no file of any release.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sglang_doctor.registry.flags import version_key  # noqa: E402
from sglang_doctor.registry.subsystems import subsystems  # noqa: E402


def release_files(tree: Path) -> list[str]:
    """Paths below sglang/srt/ (and below sglang/ for the rest), as frames show them relative."""
    pkg = tree / "sglang"
    out = []
    for f in pkg.rglob("*.py"):
        rel = f.relative_to(pkg).as_posix()
        out.append(rel[len("srt/"):] if rel.startswith("srt/") else rel)
    return sorted(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=str(ROOT / "wheels" / "src"))
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "subsystem-files.json"))
    args = ap.parse_args()
    trees = sorted((p for p in Path(args.src).iterdir() if (p / "sglang").is_dir()), key=lambda p: version_key(p.name))
    if not trees:
        print(f"no unpacked sglang wheels under {args.src}", file=sys.stderr)
        return 2
    files = {t.name: release_files(t) for t in trees}
    record: dict[str, dict[str, list[str]]] = {}
    missing = []
    for s in subsystems():
        for i, p in enumerate(s.frames):
            if p.sglang is None:
                continue
            key = f"{s.id}#{i}"
            hits = {rel: [f for f in fl if p.sglang.match(f)][:2] for rel, fl in files.items()}
            hits = {rel: fs for rel, fs in hits.items() if fs}
            if not hits:
                missing.append(f"{s.id}: frames[{i}] {p.sglang.pattern!r} matches no file of {', '.join(files)}")
            record[key] = {"pattern": p.sglang.pattern, **hits}  # type: ignore[dict-item]
            print(f"{key:28} {', '.join(hits) or 'NONE'}")
    Path(args.out).write_text(json.dumps({"releases": list(files), "patterns": record}, indent=1) + "\n")
    for m in missing:
        print(m, file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
