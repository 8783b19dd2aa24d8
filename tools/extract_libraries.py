#!/usr/bin/env python3
"""Build sglang_doctor/data/libraries.json: which distribution ships each shared library an
SGLang server loads, and which libraries come from the NVIDIA driver or the OS instead.

Inputs, all wheels from PyPI:

* SEEDS -- torch for CUDA 12 and 13, sgl-kernel / sglang-kernel, flashinfer, vllm (the last
  release sglang pinned), mooncake, deep-gemm, nvidia-ml-py, and the CUDA 12 toolkit wheels
  torch does not pull in (nvcc's libnvvm, npp, nvjpeg, nvfatbin);
* torch's own CUDA dependencies, followed through its Requires-Dist (``nvidia-*``, ``cuda-*``,
  ``triton``; also through extras such as ``cuda-toolkit[cublas,...]``), for Linux x86_64. An
  exact pin is taken as is; a range resolves to the OLDEST version that satisfies it, so a
  later build picks the same wheel.

From each wheel's RECORD: every ``lib*.so*`` file, by basename -> distribution (and the top-level
import packages -> distribution). From each ELF library: its DT_NEEDED names and the ``lib*.so*``
names it mentions as strings (dlopen targets: ``libcuda.so.1``, ``libnvrtc.so``); one that no
wheel ships is the driver's when NVIDIA's driver installs it (``libcuda``, ``libnvidia-*``) and
the system's otherwise (glibc, libstdc++ ...). DRIVER_ONLY lists the few driver libraries that
nothing in the wheels names (libcuda loads them itself) -- curated, and marked so in the data.

Usage::

    python tools/extract_libraries.py
"""

from __future__ import annotations

import argparse
import csv
import email.parser
import io
import json
import re
import sys
import zipfile
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import elfread  # noqa: E402
import wheelcache  # noqa: E402

REPO = wheelcache.REPO
DEFAULT_OUT = REPO / "sglang_doctor" / "data" / "libraries.json"
FORMAT_VERSION = 1
SEEDS = [("torch", "2.8.0"), ("torch", "2.14.1"), ("sgl-kernel", "0.3.21"), ("sglang-kernel", "0.4.10"),
         ("flashinfer-python", "0.7.2"), ("flashinfer-cubin", "0.6.13"), ("vllm", "0.7.2"),
         ("mooncake-transfer-engine", "0.3.13.post1"), ("sgl-deep-gemm", "0.2.5"), ("nvidia-ml-py", "13.615.71"),
         # CUDA 12.8 toolkit libraries torch does not depend on but kernels JIT-compile or decode with
         ("nvidia-cuda-nvcc-cu12", "12.8.93"), ("nvidia-npp-cu12", "12.3.3.100"), ("nvidia-nvjpeg-cu12", "12.3.5.92"),
         ("nvidia-nvfatbin-cu12", "12.8.90")]
FOLLOW = re.compile(r"^(nvidia-|cuda-|triton$)")
ENV = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
       "python_version": "3.11", "python_full_version": "3.11.7", "implementation_name": "cpython",
       "platform_python_implementation": "CPython"}
# Curated: driver libraries nothing in the wheels names (libcuda and the container toolkit load them).
DRIVER_ONLY = ["libnvidia-ptxjitcompiler.so.1", "libnvidia-nvvm.so.4", "libcudadebugger.so.1",
               "libnvidia-gpucomp.so", "libnvidia-cfg.so.1", "libnvidia-opencl.so.1"]
# Names NVIDIA's driver package installs (the rule that sorts an unshipped library).
_DRIVER_NAME = re.compile(r"^lib(cuda|nvidia-[\w-]+|\w+_nvidia|nvcuvid|nvoptix|cudadebugger)\.so")
_SO = re.compile(r"(?:^|/)(lib[\w+.-]*?\.so(?:\.\d+)*|[\w.-]+\.so)$")
_MENTION = re.compile(rb"lib[A-Za-z0-9_+-]+\.so(?:\.\d+)*")


def mentions(data: bytes) -> set[str]:
    """The NUL-terminated strings ``lib*.so*`` in a binary (dlopen targets, DT_NEEDED names).

    Found from each ``.so`` with bytes.find (C speed): a regex over gigabytes of machine code
    is minutes slower."""
    out: set[str] = set()
    pos = data.find(b".so")
    while pos >= 0:
        start = data.rfind(b"\0", max(0, pos - 120), pos) + 1
        end = data.find(b"\0", pos, pos + 40)
        if start > 0 and end > 0:
            s = data[start:end].rsplit(b"/", 1)[-1]  # a path names its basename
            if _MENTION.fullmatch(s):
                out.add(s.decode())
        pos = data.find(b".so", pos + 3)
    return out


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def oldest_matching(dist: str, spec: SpecifierSet) -> str:
    versions = wheelcache.available_versions(dist)
    ok = [v for v in versions if Version(v) in spec and not Version(v).is_prerelease]
    if not ok:
        raise SystemExit(f"no version of {dist} satisfies {spec}")
    return min(ok, key=Version)


def requires(wheel: Path, extras: set[str]) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode("utf-8")
    out = []
    for line in email.parser.Parser().parsestr(meta).get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate(dict(ENV, extra=e)) for e in (extras or {""})):
            out.append(req)
    return out


def collect_wheels() -> list[tuple[str, str, Path]]:
    todo: list[tuple[str, str, set[str]]] = [(normalize(d), v, set()) for d, v in SEEDS]
    done: dict[str, tuple[str, Path]] = {}
    extras_seen: dict[str, set[str]] = {}
    while todo:
        dist, version, extras = todo.pop(0)
        key = f"{dist}=={version}"
        if key in done and extras <= extras_seen.get(key, set()):
            continue
        extras_seen.setdefault(key, set()).update(extras)
        wheel = done[key][1] if key in done else wheelcache.fetch(dist, version)
        done[key] = (dist, wheel)
        if dist not in ("torch",) and not FOLLOW.match(dist) and dist not in ("cuda-toolkit",):
            continue  # only torch's CUDA stack is followed
        for req in requires(wheel, extras):
            name = normalize(req.name)
            if not FOLLOW.match(name):
                continue
            pinned = [s.version for s in req.specifier if s.operator == "==" and "*" not in s.version]
            version_of = pinned[0] if pinned else oldest_matching(name, req.specifier)
            todo.append((name, version_of, {normalize(e) for e in req.extras}))
    return sorted(((d, k.split("==")[1], w) for k, (d, w) in done.items()), key=lambda t: (t[0], Version(t[1])))


def read_wheel(wheel: Path) -> tuple[list[str], set[str], set[str], set[str]]:
    """(shared object paths, top-level packages, DT_NEEDED names, mentioned lib names)."""
    sos: list[str] = []
    tops: set[str] = set()
    needed: set[str] = set()
    mentioned: set[str] = set()
    with zipfile.ZipFile(wheel) as zf:
        record = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
        for row in csv.reader(io.StringIO(zf.read(record).decode("utf-8"))):
            if not row:
                continue
            path = row[0]
            head = path.split("/", 1)[0]
            if "/" in path and not head.endswith((".dist-info", ".data")) and not head.endswith(".libs"):
                tops.add(head)
            elif path.endswith(".py") and "/" not in path:
                tops.add(path[:-3])
            if _SO.search(path):
                if path.rsplit("/", 1)[-1].startswith("lib"):
                    sos.append(path)  # (Python extension modules are found by their package: modules)
                with zf.open(path) as f:
                    data = f.read()
                if not data.startswith(b"\x7fELF"):
                    continue
                try:
                    needed.update(elfread.Elf(data).dynamic()[1])
                except Exception:
                    pass
                mentioned.update(mentions(data))
                del data
            elif path.endswith(".py"):
                # ctypes.CDLL("libnvidia-ml.so.1") in Python sources
                mentioned.update(m.decode() for m in re.findall(rb"[\"'](lib[A-Za-z0-9_+-]+\.so(?:\.\d+)*)[\"']",
                                                                 zf.read(path)))
    return sos, tops, needed, mentioned


def build() -> dict:
    wheels = collect_wheels()
    libraries: dict[str, dict[str, list[str]]] = {}  # basename -> {dist: [paths]}
    modules: dict[str, set[str]] = {}
    needed_by: dict[str, set[str]] = {}
    mentioned_by: dict[str, set[str]] = {}
    for dist, version, wheel in wheels:
        sos, tops, needed, mentioned = read_wheel(wheel)
        for path in sos:
            base = path.rsplit("/", 1)[-1]
            libraries.setdefault(base, {}).setdefault(dist, []).append(path)
        for top in tops:
            if top.isidentifier():
                modules.setdefault(top, set()).add(dist)
        for n in needed:
            needed_by.setdefault(n, set()).add(dist)
        for n in mentioned:
            mentioned_by.setdefault(n, set()).add(dist)
    shipped = set(libraries)
    shipped_stems = {_stem(b) for b in shipped}
    driver: dict[str, dict] = {}
    system: dict[str, dict] = {}
    for name in sorted(set(needed_by) | set(mentioned_by) | {n for n in shipped if _DRIVER_NAME.match(n)}):
        info = {"needed_by": sorted(needed_by.get(name, ())), "mentioned_by": sorted(mentioned_by.get(name, ()))}
        if _DRIVER_NAME.match(name):
            # a wheel that carries libcuda.so carries a link-time stub; the real one is the driver's
            stubs = sorted(libraries.pop(name, {}))
            driver[name] = dict(info, stub_in=stubs) if stubs else info
        elif name not in shipped and _stem(name) not in shipped_stems:
            system[name] = info  # no wheel ships it (under any version suffix)
    for name in DRIVER_ONLY:
        driver.setdefault(name, {"needed_by": [], "mentioned_by": [], "curated": True})
    return {
        "format": FORMAT_VERSION,
        "generator": "tools/extract_libraries.py",
        "source": "RECORD and ELF headers of the wheels below (torch's CUDA dependencies followed from its "
                  "Requires-Dist for Linux x86_64)",
        "notes": "libraries: basename -> {distribution: [paths in the wheel]}; driver / system: libraries the wheels "
                 "need or name but none ships, sorted by name (libcuda*, libnvidia-* are the driver's); entries "
                 "marked curated are listed by hand (tools/extract_libraries.py DRIVER_ONLY); modules: top-level "
                 "import package -> distributions",
        "wheels": [{"dist": d, "version": v, **p} for (d, v, _), p in
                   zip(wheels, wheelcache.provenance([w for _, _, w in wheels]))],
        "libraries": {k: {d: sorted(p) for d, p in sorted(v.items())} for k, v in sorted(libraries.items())},
        "driver": driver,
        "system": system,
        "modules": {k: sorted(v) for k, v in sorted(modules.items())},
    }


def _stem(name: str) -> str:
    return name.split(".so", 1)[0]


def write(data: dict, out: Path) -> None:
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    data = build()
    write(data, args.out)
    print(f"{len(data['libraries'])} shipped libraries from {len(data['wheels'])} wheels, {len(data['driver'])} "
          f"driver, {len(data['system'])} system -> {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
