"""Wheels from PyPI for the catalog generators (tools/extract_{messages,cuda_codes,pins,libraries}.py).

Every wheel is fetched with ``pip download --no-deps`` into ``<repo>/wheels/`` (git-ignored) and
read from there; nothing is imported or installed. A generator records, in its data file's header,
the file name and sha256 of every wheel it read, so a test can tell which inputs made the file and
a rerun with the same wheels gives the same bytes.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WHEELS = REPO / "wheels"
PIP = [sys.executable, "-m", "pip"]

_VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?")


def version_key(v: str) -> tuple:
    """Sort key for N.N.N[rcN][.postN] (enough for sglang's and NVIDIA's versions)."""
    m = _VERSION.fullmatch(v)
    if not m:
        return ((0,), -9, 0, 0)
    nums = tuple(int(x) for x in m.group(1).split("."))
    while len(nums) > 1 and nums[-1] == 0:  # 0.5 == 0.5.0
        nums = nums[:-1]
    pre = {"a": -3, "b": -2, "rc": -1, None: 0}[m.group(2)]
    return (nums, pre, int(m.group(3) or 0), int(m.group(4) or -1) + 1)


def available_versions(dist: str) -> list[str]:
    """Every version of ``dist`` the index has (pre-releases included), oldest first."""
    out = subprocess.run(PIP + ["index", "versions", dist, "--pre"], capture_output=True, text=True).stdout
    m = re.search(r"Available versions:\s*(.+)", out)
    if not m:
        raise SystemExit(f"could not list the versions of {dist} (pip index versions)")
    return sorted((v.strip() for v in m.group(1).split(",") if v.strip()), key=version_key)


def sglang_releases(first: str = "0.4.0", versions: list[str] | None = None) -> list[str]:
    """Finals and .postN from ``first`` on, plus pre-releases whose final never shipped (0.5.0rcN)."""
    versions = versions if versions is not None else available_versions("sglang")
    finals = {re.sub(r"\.post\d+$", "", v) for v in versions if not re.search(r"(a|b|rc|dev)\d+", v)}
    picked = []
    for v in versions:
        if version_key(v) < version_key(first) or ".dev" in v:
            continue
        pre = re.match(r"(\d+(?:\.\d+)*)(?:a|b|rc)\d+$", v)
        if pre and pre.group(1) in finals:
            continue
        picked.append(v)
    return sorted(picked, key=version_key)


def cached(dist: str, version: str, cache: Path = WHEELS) -> Path | None:
    """The cached wheel of dist==version (any platform tag; 13.0.3 finds 13.0.3.0)."""
    stem = re.sub(r"[-_.]+", "_", dist).lower()
    want = version_key(version)
    for path in sorted(cache.glob("*.whl")):
        name, _, rest = path.name.partition("-")
        if name.lower() == stem and version_key(rest.split("-", 1)[0]) == want:
            return path
    return None


def fetch(dist: str, version: str, cache: Path = WHEELS, platform: str | None = None) -> Path:
    """The wheel of dist==version, downloaded once.

    Tried in order: a wheel for this interpreter and machine, a pure-Python one, then ``platform``
    and the manylinux x86_64 ones for CPython 3.11 (the NVIDIA wheels and sglang >= 0.5.11 have
    only platform wheels), so the same wheel is chosen on any machine that builds the catalogs.
    """
    hit = cached(dist, version, cache)
    if hit:
        return hit
    cache.mkdir(parents=True, exist_ok=True)
    attempts: list[list[str]] = [[], ["--only-binary=:all:", "--platform", "any", "--python-version", "3.11"]]
    for plat in ([platform] if platform else []) + ["manylinux_2_28_x86_64", "manylinux2014_x86_64"]:
        attempts.append(["--only-binary=:all:", "--platform", plat, "--python-version", "3.11",
                         "--implementation", "cp"])
    last = ""
    for extra in attempts:
        proc = subprocess.run(PIP + ["download", "--no-deps", f"{dist}=={version}", "-d", str(cache), "-q"] + extra,
                              capture_output=True, text=True)
        hit = cached(dist, version, cache)
        if hit:
            return hit
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
    raise SystemExit(f"no wheel for {dist}=={version}: {last}")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def provenance(paths: list[Path]) -> list[dict[str, str]]:
    """What a data file's header records about its inputs."""
    return [{"wheel": p.name, "sha256": sha256(p)} for p in paths]
