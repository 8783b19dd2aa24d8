"""Shared libraries -> provider (data/libraries.json, tools/extract_libraries.py, registry/libraries.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers_tools import load_tool
from sglang_doctor.registry import libraries

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "sglang_doctor" / "data" / "libraries.json"




def test_header_names_every_wheel_read() -> None:
    data = json.loads(DATA.read_text())
    assert data["generator"] == "tools/extract_libraries.py"
    dists = {w["dist"] for w in data["wheels"]}
    assert {"torch", "nvidia-cuda-runtime-cu12", "nvidia-nccl-cu12", "nvidia-cudnn-cu12", "sgl-kernel",
            "flashinfer-python", "vllm"} <= dists
    assert all(len(w["sha256"]) == 64 for w in data["wheels"])
    shipped_by = {d for table in data["libraries"].values() for d in table}
    assert shipped_by <= dists
    assert DATA.stat().st_size < 1_000_000


@pytest.mark.parametrize("name, kind, provider", [
    ("libcudart.so.12", "package", "nvidia-cuda-runtime-cu12"),
    ("libcudart.so.12.4.127", "package", "nvidia-cuda-runtime-cu12"),
    ("libcudart.so.13", "package", "nvidia-cuda-runtime"),
    ("libnccl.so.2", "package", "nvidia-nccl-cu12"),
    ("libcublas.so.12", "package", "nvidia-cublas-cu12"),
    ("libcudnn.so.9", "package", "nvidia-cudnn-cu12"),
    ("libtorch_cuda.so", "package", "torch"),
    ("libc10.so", "package", "torch"),
    ("libcuda.so.1", "driver", "nvidia-driver"),
    ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "driver", "nvidia-driver"),
    ("libcuda.so", "driver", "nvidia-driver"),
    ("libnvidia-ml.so.1", "driver", "nvidia-driver"),
    ("libnvidia-ptxjitcompiler.so.1", "driver", "nvidia-driver"),
    ("libstdc++.so.6", "system", "libstdc++.so.6"),
])
def test_provider(name: str, kind: str, provider: str) -> None:
    got = libraries.provider(name)
    assert got is not None and (got["kind"], got["name"]) == (kind, provider), got


def test_nvrtc_without_a_version_finds_every_major() -> None:
    got = libraries.provider("libnvrtc.so")
    assert got and got["kind"] == "package" and got["name"].startswith("nvidia-cuda-nvrtc")


def test_unknown_names_and_modules() -> None:
    assert libraries.provider("libdefinitely-not-a-real-library.so.3") is None
    assert libraries.provider("common_ops.abi3.so") is None
    assert libraries.module_dist("sgl_kernel") == ["sgl-kernel", "sglang-kernel"]  # renamed, same import name
    assert libraries.module_dist("flashinfer.jit") == ["flashinfer-python"]
    assert "torch" in libraries.module_dist("torch")


def test_curated_driver_entries_are_marked_and_few() -> None:
    data = json.loads(DATA.read_text())
    curated = [n for n, info in data["driver"].items() if info.get("curated")]
    assert curated and len(curated) <= 8
    tool = load_tool("extract_libraries")
    assert set(curated) <= set(tool.DRIVER_ONLY)
    # libcuda itself was found mechanically: the wheels link against it or name it
    info = data["driver"]["libcuda.so.1"]
    assert info["needed_by"] or info["mentioned_by"]


@pytest.mark.catalog_build
def test_rebuild_from_local_wheels_gives_the_committed_file(tmp_path: Path) -> None:
    if not os.environ.get("CATALOG_BUILD"):
        pytest.skip("reads ~6 GB of wheels (~10 min): set CATALOG_BUILD=1")
    tool = load_tool("extract_libraries")
    wheelcache = load_tool("wheelcache")
    data = json.loads(DATA.read_text())
    if any(wheelcache.cached(w["dist"], w["version"]) is None for w in data["wheels"]):
        pytest.skip("the wheels are not in wheels/")
    out = tmp_path / "libraries.json"
    tool.main(["--out", str(out)])
    assert out.read_text() == DATA.read_text()
