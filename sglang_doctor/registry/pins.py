"""What each SGLang release requires: ``data/pins.json``, built by ``tools/extract_pins.py`` from
the ``Requires-Dist`` of every release's wheel (0.4.0 to the newest).

``pins(version)`` is the install a server gets: the base requirements plus, in releases that
kept the server's dependencies in an extra (0.4.x: ``sglang[srt]`` -> ``runtime_common``), that
extra and the extras it pulls in. Requirements whose environment marker fails on Linux x86_64
are left out unless ``linux_x86_64=False``. Names are PEP 503-normalized (``flashinfer-python``);
a specifier may start with the dist's own extras (``[cu13]==0.7.2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from sglang_doctor.registry.packaged import load_json
from sglang_doctor.registry.versions import admits, compare, normalize_name

# The extra a CUDA server install used while the base install was the frontend only.
SERVER_EXTRA = "srt"


@dataclass(frozen=True)
class Requirement:
    """One requirement of an SGLang release's metadata (Requires-Dist)."""

    dist: str
    spec: str  # "" when unpinned
    extra: str  # "" for the base install
    marker: str  # the environment marker, without the extra test
    linux_x86_64: bool


class Pins:
    def __init__(self, data: dict[str, Any]) -> None:
        self.header = {k: v for k, v in data.items() if k != "requirements"}
        self.releases: list[str] = data["releases"]
        self._index = {r: i for i, r in enumerate(self.releases)}
        self._self_extras: dict[str, dict[str, list[str]]] = data.get("self_extras", {})
        self._rows = data["requirements"]
        self._cache: dict[tuple, dict[str, str]] = {}

    def requirements(self, version: str) -> list[Requirement]:
        """Every requirement of one release (all extras, all markers); [] for an unknown release."""
        i = self._index.get(version)
        if i is None:
            return []
        out = []
        for row in self._rows:
            spec = None
            for start, value in row["history"]:
                if start > i:
                    break
                spec = value
            if spec is not None:
                out.append(Requirement(row["dist"], spec, row["extra"], row["marker"], row["linux_x86_64"]))
        return out

    def extras_closure(self, version: str, extras: Iterable[str]) -> set[str]:
        """The extras plus those they pull in (``srt`` -> ``runtime-common``)."""
        nested = self._self_extras.get(version, {})
        todo = [normalize_name(e) for e in extras]
        seen: set[str] = set()
        while todo:
            e = todo.pop()
            if e not in seen:
                seen.add(e)
                todo.extend(nested.get(e, []))
        return seen

    def pins(self, version: str, extras: Iterable[str] | None = None, linux_x86_64: bool = True) -> dict[str, str]:
        key = (version, None if extras is None else tuple(extras), linux_x86_64)
        if key not in self._cache:
            self._cache[key] = self._pins(version, extras, linux_x86_64)
        return dict(self._cache[key])

    def _pins(self, version: str, extras: Iterable[str] | None, linux_x86_64: bool) -> dict[str, str]:
        reqs = self.requirements(version)
        if extras is None:
            extras = [SERVER_EXTRA] if any(r.extra == SERVER_EXTRA for r in reqs) else []
        wanted = {""} | self.extras_closure(version, extras)
        out: dict[str, str] = {}
        for r in reqs:
            if r.extra not in wanted or r.dist == "sglang" or (linux_x86_64 and not r.linux_x86_64):
                continue
            # a pinned spec beats an unpinned mention of the same dist in another extra
            if r.dist not in out or (not out[r.dist] and r.spec):
                out[r.dist] = r.spec
        return out


def load() -> Pins:
    return load_json("pins.json", Pins)


def releases() -> list[str]:
    """Every release in the data, oldest first."""
    return list(load().releases)


def pins(version: str, extras: Iterable[str] | None = None) -> dict[str, str]:
    """dist -> specifier for a server install of sglang ``version`` (base requirements, plus the
    ``srt`` extra and what it pulls in where the release has one). ``{}`` for an unknown release."""
    return load().pins(version, extras)


def pin(version: str, dist: str) -> str | None:
    """The specifier sglang ``version`` requires ``dist`` at; None when it does not require it."""
    return load().pins(version).get(normalize_name(dist))


def exact_pin(release: str, dist: str) -> str | None:
    """The version ``release`` pins ``dist`` to with ``==`` (extras and a local ``+cu…`` kept out of
    it); for a range ``a-b`` the version every release of the data in it pins. None when the pin is
    not exact, the releases disagree, or no release of the data is meant."""
    p = load()
    if "-" in release.strip("-"):
        lo, hi = release.split("-", 1)
        if not lo or not hi:
            return None  # an open range: later releases may pin another version
        span = [r for r in p.releases if compare(lo, r) <= 0 <= compare(hi, r)]
    else:
        span = [release] if release in p.releases else []
    found = {_exact(p.pins(r).get(normalize_name(dist))) for r in span}
    if len(found) != 1:
        return None
    return found.pop()


def _exact(spec: str | None) -> str | None:
    spec = (spec or "").split("]")[-1].strip()
    if spec.startswith("==") and "," not in spec and "*" not in spec:
        return spec[2:].strip()
    return None


def pin_history(dist: str) -> list[tuple[str, str]]:
    """(release, specifier) for every release that requires ``dist``, oldest first."""
    p = load()
    name = normalize_name(dist)
    out = []
    for r in p.releases:
        spec = p.pins(r).get(name)
        if spec is not None:
            out.append((r, spec))
    return out


def pin_changes(dist: str) -> list[tuple[str, str]]:
    """The releases where the specifier of ``dist`` changed: (first release, specifier)."""
    out: list[tuple[str, str]] = []
    for r, spec in pin_history(dist):
        if not out or out[-1][1] != spec:
            out.append((r, spec))
    return out


def releases_pinning(dist: str, installed_version: str) -> list[str]:
    """Releases whose requirement on ``dist`` admits ``installed_version`` (an unpinned requirement
    admits any), oldest first."""
    return [r for r, spec in pin_history(dist) if admits(spec, installed_version)]


def newest_admitting(dist: str, installed_version: str) -> str | None:
    """The newest release whose pin admits ``installed_version``; None when none does."""
    hits = releases_pinning(dist, installed_version)
    return max(hits, key=_Key) if hits else None


class _Key:
    """Sort adapter for release strings."""

    def __init__(self, v: str) -> None:
        self.v = v

    def __lt__(self, other: "_Key") -> bool:
        return compare(self.v, other.v) < 0
