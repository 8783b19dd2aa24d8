"""Which distribution, the NVIDIA driver, or the OS provides a shared library.

``data/libraries.json`` is built by ``tools/extract_libraries.py`` from the RECORD files and ELF
headers of torch's CUDA stack, sgl-kernel, flashinfer, vllm and friends. So
``OSError: libcuda.so.1: cannot open shared object file`` points at the driver mount (``docker
--gpus``, the NVIDIA Container Toolkit), while ``libcudart.so.12`` points at
``nvidia-cuda-runtime-cu12``.

A name may carry any version suffix: ``libcudart.so.12.4.127`` finds ``libcudart.so.12`` (same
major), and ``libnvrtc.so`` finds every ``libnvrtc.so.N``.
"""

from __future__ import annotations

import re
from typing import Any

from sglang_doctor.registry.packaged import load_json

_SUFFIX = re.compile(r"^(?P<stem>.+?\.so)(?P<ver>(?:\.\d+)*)$")
_PYEXT = re.compile(r"\.(?:cpython-\d+[\w-]*|abi3)\.so$")


def _split(name: str) -> tuple[str, tuple[str, ...]]:
    """``libcudart.so.12.4.127`` -> (``libcudart.so``, (``12``, ``4``, ``127``))."""
    m = _SUFFIX.match(name)
    if not m:
        return name, ()
    return m.group("stem"), tuple(x for x in m.group("ver").split(".") if x)


class Libraries:
    def __init__(self, data: dict[str, Any]) -> None:
        self.header = {k: v for k, v in data.items() if k not in ("libraries", "driver", "system", "modules")}
        self.libraries: dict[str, dict[str, list[str]]] = data["libraries"]
        self.driver: dict[str, dict[str, Any]] = data["driver"]
        self.system: dict[str, dict[str, Any]] = data["system"]
        self.modules: dict[str, list[str]] = data.get("modules", {})
        self._by_stem: dict[str, list[str]] = {}
        for table in (self.libraries, self.driver, self.system):
            for name in table:
                self._by_stem.setdefault(_split(name)[0], []).append(name)

    def _candidates(self, name: str) -> list[str]:
        if name in self.libraries or name in self.driver or name in self.system:
            return [name]
        stem, ver = _split(name)
        names = self._by_stem.get(stem, [])
        if ver:
            # the same major version (a full version names the file the SONAME links to)
            same = [n for n in names if _split(n)[1][:1] == ver[:1]]
            return same or [n for n in names if not _split(n)[1]]
        return names

    def provider(self, libname: str) -> dict[str, Any] | None:
        name = libname.strip().rsplit("/", 1)[-1]
        for cand in self._candidates(name):
            if cand in self.driver:
                return {"kind": "driver", "name": "nvidia-driver", "library": cand}
            if cand in self.libraries:
                dists = sorted(self.libraries[cand])
                return {"kind": "package", "name": _primary(cand, dists), "library": cand, "all": dists}
            if cand in self.system:
                return {"kind": "system", "name": cand, "library": cand}
        if _PYEXT.search(name):
            return None  # a Python extension module: its directory says which package (module_dist)
        return None


def _primary(library: str, dists: list[str]) -> str:
    """The distribution a fix should name when several ship a library: an ``nvidia-*`` one for
    NVIDIA's libraries (torch and others may carry a copy), else the first."""
    nvidia = [d for d in dists if d.startswith("nvidia-")]
    return nvidia[0] if nvidia and library.startswith(("libcu", "libnv", "libnccl")) else dists[0]


def load() -> Libraries:
    return load_json("libraries.json", Libraries)


def provider(libname: str) -> dict[str, Any] | None:
    """What provides a shared library: ``{"kind": "package", "name": "nvidia-cuda-runtime-cu12",
    "library": "libcudart.so.12", "all": [...]}``, ``{"kind": "driver", "name": "nvidia-driver",
    ...}`` or ``{"kind": "system", "name": "libstdc++.so.6", ...}``; None when unknown. A path or
    a longer version suffix is fine (``/usr/lib/x86_64-linux-gnu/libcuda.so.1``, ``libcudart.so.12.4.127``)."""
    return load().provider(libname)


def module_dist(module: str) -> list[str]:
    """The distributions that ship a top-level import package (``sgl_kernel`` -> ``["sgl-kernel"]``)."""
    return list(load().modules.get(module.split(".", 1)[0], []))
