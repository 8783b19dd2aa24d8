"""GPU memory and compute capability: nvidia-smi when it is there, else the user's options.

Public API::

    query_nvidia_smi(run=subprocess.run) -> list[GpuReading] | None
    lookup_gpu(name) -> GpuSpec | None
    resolve_gpu(gpu_mem_gib=None, gpu_free_gib=None, gpu_name=None, query=True) -> GpuReading | None

SGLang sizes its defaults from ``nvidia-smi --query-gpu=memory.total`` (the minimum over the
visible GPUs, in MiB) and its pools from ``torch.cuda.mem_get_info`` — the free memory.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["GpuReading", "GpuSpec", "lookup_gpu", "query_nvidia_smi", "resolve_gpu"]

QUERY = ["nvidia-smi", "--query-gpu=name,memory.total,memory.free,compute_cap",
         "--format=csv,noheader,nounits"]


@dataclass(frozen=True)
class GpuReading:
    """What nvidia-smi (or rocm-smi) said about this machine's GPUs."""

    name: str
    total_mib: float | None
    free_mib: float | None = None
    compute_cap: tuple[int, int] | None = None
    count: int = 1
    source: str = "nvidia-smi"


@dataclass(frozen=True)
class GpuSpec:
    """A GPU's nominal memory and compute capability, for --gpu NAME."""

    total_gib: int  # the vendor's nominal capacity
    compute_cap: tuple[int, int]


# Nominal memory (vendor data sheets) and compute capability (NVIDIA's CUDA GPUs table,
# developer.nvidia.com/cuda-gpus), for --gpu NAME when nvidia-smi is not available. nvidia-smi
# reports a little less than nominal (an H100 80GB shows 81559 MiB), so prefer --gpu-mem.
# Patterns are regexes over the lower-cased name, tried in order (specific before general).
_GPU_TABLE: tuple[tuple[str, GpuSpec], ...] = (
    ("gh200", GpuSpec(96, (9, 0))), ("h200", GpuSpec(141, (9, 0))), ("h100", GpuSpec(80, (9, 0))),
    ("h800", GpuSpec(80, (9, 0))), ("h20", GpuSpec(96, (9, 0))), ("b200", GpuSpec(180, (10, 0))),
    ("b300", GpuSpec(288, (10, 3))), ("gb200", GpuSpec(186, (10, 0))),
    (r"a100\b.*\b40 ?gb", GpuSpec(40, (8, 0))), ("a100", GpuSpec(80, (8, 0))), ("a800", GpuSpec(80, (8, 0))),
    ("a40", GpuSpec(48, (8, 6))), ("a30", GpuSpec(24, (8, 0))), ("a10g", GpuSpec(24, (8, 6))),
    ("a10", GpuSpec(24, (8, 6))), ("l40s", GpuSpec(48, (8, 9))), ("l40", GpuSpec(48, (8, 9))),
    ("l20", GpuSpec(48, (8, 9))), ("l4", GpuSpec(24, (8, 9))), ("t4", GpuSpec(16, (7, 5))),
    ("v100", GpuSpec(32, (7, 0))), ("rtx pro 6000", GpuSpec(96, (12, 0))),
    ("rtx 6000 ada", GpuSpec(48, (8, 9))), ("a6000", GpuSpec(48, (8, 6))),
    ("5090", GpuSpec(32, (12, 0))), ("5080", GpuSpec(16, (12, 0))), ("4090", GpuSpec(24, (8, 9))),
    ("4080", GpuSpec(16, (8, 9))), ("3090", GpuSpec(24, (8, 6))), ("3080", GpuSpec(10, (8, 6))),
    ("2080 ti", GpuSpec(11, (7, 5))),
)


def lookup_gpu(name: str) -> GpuSpec | None:
    """Nominal memory and compute capability of a GPU by (part of) its name."""
    key = re.sub(r"[\s_-]+", " ", name.lower().replace("nvidia", "").replace("geforce", "")).strip()
    for pattern, spec in _GPU_TABLE:
        if re.search(pattern, key) or re.search(pattern.replace(" ", ""), key.replace(" ", "")):
            return spec
    return None


def _num(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None  # "[N/A]" on some drivers


def _cap(s: str) -> tuple[int, int] | None:
    m = re.match(r"\s*(\d+)\.(\d+)", s)
    return (int(m[1]), int(m[2])) if m else None


def query_nvidia_smi(run: Callable[..., Any] = subprocess.run) -> list[GpuReading] | None:
    """One reading per visible GPU, or None when nvidia-smi is absent or fails."""
    try:
        out = run(QUERY, capture_output=True, text=True, timeout=10)
    except (FileNotFoundError, PermissionError, OSError, subprocess.TimeoutExpired):
        return None
    if getattr(out, "returncode", 1) != 0:
        return None
    gpus = []
    for line in str(out.stdout).splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3:
            continue
        cap = _cap(parts[3]) if len(parts) > 3 else None
        gpus.append(GpuReading(parts[0], _num(parts[1]), _num(parts[2]), cap))
    return gpus or None


def resolve_gpu(gpu_mem_gib: float | None = None, gpu_free_gib: float | None = None,
                gpu_name: str | None = None, gpus: int | None = None, query: bool = True,
                run: Callable[..., Any] = subprocess.run) -> GpuReading | None:
    """The GPU the launch sees: options first (the user may be planning for another machine),
    then nvidia-smi (minimum over the GPUs the launch uses), then the name table."""
    spec = lookup_gpu(gpu_name) if gpu_name else None
    if gpu_mem_gib is not None or gpu_free_gib is not None:
        total = gpu_mem_gib * 1024 if gpu_mem_gib is not None else (spec.total_gib * 1024 if spec else None)
        cap = spec.compute_cap if spec else None
        if total is None:  # only what is free: the card's total (SGLang's defaults read it) from nvidia-smi,
            seen = query_nvidia_smi(run) if query else None  # else no less than the free memory
            total = min(g.total_mib for g in seen if g.total_mib) if seen and any(g.total_mib for g in seen) else None
            cap = cap or (seen[0].compute_cap if seen else None)
            total = total if total is not None else gpu_free_gib * 1024  # type: ignore[operator]
        return GpuReading(gpu_name or "", total, gpu_free_gib * 1024 if gpu_free_gib is not None else None,
                          cap, gpus or 1, "options")
    if spec is not None:
        return GpuReading(gpu_name or "", spec.total_gib * 1024, None, spec.compute_cap, gpus or 1,
                          "the name's nominal memory")
    readings = query_nvidia_smi(run) if query else None
    if not readings:
        return None
    used = readings[: gpus] if gpus else readings
    totals = [g.total_mib for g in used if g.total_mib is not None]
    frees = [g.free_mib for g in used if g.free_mib is not None]
    return GpuReading(used[0].name, min(totals) if totals else None, min(frees) if frees else None,
                      used[0].compute_cap, len(used), "nvidia-smi")
