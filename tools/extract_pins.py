#!/usr/bin/env python3
"""Build sglang_doctor/data/pins.json: what every sglang release requires, from its wheel's METADATA.

Every final and .postN release from 0.4.0 on (plus 0.5.0rcN, whose final never shipped), read from
``Requires-Dist`` in ``sglang-X.dist-info/METADATA`` of the wheel on PyPI. Every requirement is
kept, with its extra (0.4.x put the server's dependencies under ``srt`` / ``runtime_common``) and
its environment marker, and whether that marker holds on Linux x86_64 (evaluated here with
``packaging``, so the reader needs no marker evaluator). Distribution names are normalized
(PEP 503: ``flashinfer_python`` -> ``flashinfer-python``).

Stored as a history per (distribution, extra, marker): the releases where its specifier changed,
so a dist pinned the same way for 30 releases costs one row.

Usage::

    python tools/extract_pins.py
    python tools/extract_pins.py --out /tmp/pins.json --releases 0.5.20 0.5.23
"""

from __future__ import annotations

import argparse
import email.parser
import json
import re
import sys
import zipfile
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement

sys.path.insert(0, str(Path(__file__).resolve().parent))
import wheelcache  # noqa: E402

REPO = wheelcache.REPO
DEFAULT_OUT = REPO / "sglang_doctor" / "data" / "pins.json"
FORMAT_VERSION = 1
LINUX_X86_64 = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
                "os_name": "posix", "python_version": "3.11", "python_full_version": "3.11.7",
                "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(wheel: Path, version: str) -> list[dict]:
    with zipfile.ZipFile(wheel) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(meta_name).decode("utf-8"))
    out = []
    for line in meta.get_all("Requires-Dist") or []:
        req = Requirement(line)
        extra = ""
        marker = ""
        if req.marker is not None:
            text = str(req.marker)
            m = re.search(r'extra == "([^"]+)"', text)
            if m:
                extra = normalize(m.group(1))
                # the rest of the marker, without the extra test
                text = re.sub(r'\s*(?:and\s+)?extra == "[^"]+"\s*(?:and\s+)?', " ", text).strip()
                text = re.sub(r"^\((.*)\)$", r"\1", text) if text.count("(") == 1 else text
            marker = text
        applies = True
        if marker:
            try:
                applies = Marker(marker).evaluate(dict(LINUX_X86_64, extra=""))
            except Exception:
                applies = True
        out.append({"dist": normalize(req.name), "extras": sorted(normalize(e) for e in req.extras),
                    "spec": str(req.specifier), "extra": extra, "marker": marker, "linux_x86_64": applies})
    return out


def build(releases: list[str]) -> dict:
    wheels = [wheelcache.fetch("sglang", v) for v in releases]
    per_release = [requirements(w, v) for w, v in zip(wheels, releases)]
    # (dist, extra, marker) -> [[release index, spec-with-extras or None when absent], ...]
    history: dict[tuple[str, str, str], list] = {}
    keys_in: list[dict[tuple[str, str, str], str]] = []
    meta: dict[tuple[str, str, str], bool] = {}
    for reqs in per_release:
        now = {}
        for r in reqs:
            key = (r["dist"], r["extra"], r["marker"])
            value = ("[" + ",".join(r["extras"]) + "]" if r["extras"] else "") + r["spec"]
            now[key] = value if key not in now else now[key]
            meta[key] = r["linux_x86_64"]
        keys_in.append(now)
    for i, now in enumerate(keys_in):
        for key in set(now) | {k for k in history}:
            value = now.get(key)
            runs = history.setdefault(key, [])
            last = runs[-1][1] if runs else None
            if not runs and value is None:
                continue
            if not runs or value != last:
                runs.append([i, value])
    rows = []
    for (dist, extra, marker), runs in sorted(history.items()):
        rows.append({"dist": dist, "extra": extra, "marker": marker, "linux_x86_64": meta[(dist, extra, marker)],
                     "history": runs})
    extras = {}
    for i, reqs in enumerate(per_release):
        for r in reqs:
            if r["dist"] == "sglang" and r["extra"]:
                extras.setdefault(releases[i], {}).setdefault(r["extra"], sorted(
                    set(extras.get(releases[i], {}).get(r["extra"], [])) | set(r["extras"])))
    return {
        "format": FORMAT_VERSION,
        "generator": "tools/extract_pins.py",
        "source": "Requires-Dist of each sglang wheel's METADATA on PyPI",
        "selection": "every final and .postN release >= 0.4.0, plus pre-releases whose final never shipped (0.5.0rcN)",
        "releases": releases,
        "wheels": wheelcache.provenance(wheels),
        "notes": "history: [[index into releases, specifier or null when the release does not require it], ...] "
                 "at each change; a specifier may start with the dist's own extras ('[cu13]==0.7.2'); "
                 "extra '' is the base install; linux_x86_64: the marker holds on Linux x86_64",
        "self_extras": extras,
        "requirements": rows,
    }


def write(data: dict, out: Path) -> None:
    head = {k: v for k, v in data.items() if k not in ("requirements", "wheels", "self_extras")}
    body = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    parts = [body]
    parts.append(',\n "wheels": [\n' + ",\n".join(json.dumps(w) for w in data["wheels"]) + "\n ]")
    parts.append(',\n "self_extras": {\n' + ",\n".join(
        f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in data["self_extras"].items()) + "\n }")
    parts.append(',\n "requirements": [\n' + ",\n".join(
        json.dumps(r, ensure_ascii=False) for r in data["requirements"]) + "\n ]\n}\n")
    out.write_text("".join(parts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--releases", nargs="+", help="default: every release >= 0.4.0 on PyPI")
    args = ap.parse_args(argv)
    releases = sorted(args.releases, key=wheelcache.version_key) if args.releases else wheelcache.sglang_releases()
    data = build(releases)
    write(data, args.out)
    print(f"{len(data['requirements'])} requirement histories over {len(releases)} releases -> {args.out} "
          f"({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
