"""Dependency pins per release (data/pins.json, tools/extract_pins.py, registry/pins.py) and the
version helpers (registry/versions.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers_tools import load_tool
from sglang_doctor.registry import pins, versions

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "sglang_doctor" / "data" / "pins.json"




# ---------------------------------------------------------------- the data


def test_header_records_one_wheel_per_release() -> None:
    data = json.loads(DATA.read_text())
    assert data["generator"] == "tools/extract_pins.py"
    rels = data["releases"]
    assert rels[0] == "0.4.0" and len(rels) >= 90
    assert len(data["wheels"]) == len(rels)
    for rel, w in zip(rels, data["wheels"]):
        assert w["wheel"].startswith(f"sglang-{rel}-") and len(w["sha256"]) == 64
    wheelcache = load_tool("wheelcache")
    assert rels == sorted(rels, key=wheelcache.version_key)
    for row in data["requirements"]:
        starts = [start for start, _ in row["history"]]
        assert starts == sorted(set(starts)) and all(0 <= s < len(rels) for s in starts)


@pytest.mark.catalog_build
def test_rebuild_from_local_wheels_gives_the_committed_file(tmp_path: Path) -> None:
    tool = load_tool("extract_pins")
    wheelcache = load_tool("wheelcache")
    rels = json.loads(DATA.read_text())["releases"]
    if any(wheelcache.cached("sglang", r) is None for r in rels):
        pytest.skip("the sglang wheels are not in wheels/")
    out = tmp_path / "pins.json"
    tool.main(["--out", str(out), "--releases", *rels])
    assert out.read_text() == DATA.read_text()


# ---------------------------------------------------------------- pins


def test_pins_of_a_release_include_the_server_extra_where_it_had_one() -> None:
    old = pins.pins("0.4.6.post5")  # 0.4.x: torch under [srt], transformers under [runtime_common]
    assert old["torch"] == "==2.6.0" and old["sgl-kernel"] == "==0.1.4"
    assert old["transformers"].startswith("==")
    assert pins.pins("0.4.6.post5", extras=[]).get("torch") is None  # the frontend-only install
    new = pins.pins("0.5.23")
    assert new["torch"] == "==2.14.1" and new["flashinfer-python"] == "[cu13]==0.7.2"
    assert new["sglang-kernel"].startswith("==") and "sgl-kernel" not in new
    assert pins.pins("9.9.9") == {}


def test_pin_history_and_changes() -> None:
    hist = pins.pin_history("torch")
    assert hist[0][0] == "0.4.0" and ("0.5.5", "==2.8.0") in hist
    changes = pins.pin_changes("torch")
    assert ("0.4.5.post3", "==2.6.0") in changes and ("0.5.6", "==2.9.1") in changes
    assert pins.pin("0.4.0", "vllm") == ">=0.6.3.post1"  # vllm was a dependency of the 0.4.0 server
    assert pins.pin("0.5.23", "vllm") is None
    assert pins.pin_history("Flashinfer_Python") == pins.pin_history("flashinfer-python")


def test_releases_pinning_an_installed_version() -> None:
    rels = pins.releases_pinning("torch", "2.8.0+cu128")  # local label ignored against ==2.8.0
    assert "0.5.5" in rels and "0.5.6" not in rels and "0.4.6.post5" not in rels
    assert pins.newest_admitting("torch", "2.8.0") == "0.5.5.post3"
    assert "0.4.0" in rels  # 0.4.0 did not pin torch at all


# ---------------------------------------------------------------- specifiers


@pytest.mark.parametrize("spec, version, ok", [
    ("==2.8.0", "2.8.0+cu128", True), ("==2.8.0+cu128", "2.8.0+cu126", False), ("==2.8.0", "2.8.1", False),
    (">=0.4,<0.5", "0.4.6.post5", True), (">=0.4,<0.5", "0.5.0", False), ("<2.9", "2.9.0rc1", False),
    ("~=2.5", "2.9", True), ("~=2.5.1", "2.6.0", False), ("==2.5.*", "2.5.1", True), ("!=2.5.*", "2.5.1", False),
    ("[cu13]==0.7.2", "0.7.2", True), ("", "1.0", True), (">=0.0.9.post1", "0.0.9rc2", False),
    ("==0.4.0rc3", "0.4.0rc3", True), (">0.4.0rc3", "0.4.0", True),
])
def test_admits(spec: str, version: str, ok: bool) -> None:
    assert versions.admits(spec, version) is ok


def test_version_order() -> None:
    order = ["0.4.0.dev1", "0.4.0rc1", "0.4.0", "0.4.0.post1", "0.4.1", "0.5.0rc2", "0.5.1"]
    for a, b in zip(order, order[1:]):
        assert versions.compare(a, b) < 0, (a, b)
    assert versions.compare("0.5", "0.5.0") == 0


# ---------------------------------------------------------------- detection

# The shape `python -m sglang.check_env` prints (sglang/check_env.py: "{key}: {value}" per line).
CHECK_ENV = """\
Python: 3.12.3 (main, Nov  6 2025, 13:44:16) [GCC 13.3.0]
CUDA available: True
GPU 0,1,2,3,4,5,6,7: NVIDIA H100 80GB HBM3
GPU 0,1,2,3,4,5,6,7 Compute Capability: 9.0
CUDA_HOME: /usr/local/cuda
NVCC: Cuda compilation tools, release 12.8, V12.8.93
CUDA Driver Version: 550.54.15
PyTorch: 2.8.0+cu128
sglang: 0.5.5
sgl_kernel: 0.3.16.post5
flashinfer_python: 0.4.1
flashinfer_cubin: 0.4.1
triton: 3.4.0
transformers: 4.57.1
torchao: 0.9.0
vllm: Module Not Found
xgrammar: 0.1.25
openai: 2.6.1
Hypervisor vendor: KVM
ulimit soft: 1048576
"""


def _seen(text: str) -> dict[str, tuple]:
    return {d: (s.version, s.where) for d, s in versions.detect(text).items()}


def test_check_env_output() -> None:
    found = versions.detect(CHECK_ENV)
    assert found["sglang"].version == "0.5.5" and found["sglang"].where == "check_env"
    assert found["torch"].version == "2.8.0+cu128" and found["torch-cuda"].version == "12.8"
    assert found["flashinfer-python"].version == "0.4.1" and found["sgl-kernel"].version == "0.3.16.post5"
    assert found["nvidia-driver"].version == "550.54.15" and found["cuda"].version == "12.8"
    assert found["python"].version == "3.12.3"
    assert found["vllm"].installed is False and found["vllm"].version is None
    assert not any(d.startswith(("gpu", "cuda-home", "ulimit", "hypervisor")) for d in found)


@pytest.mark.parametrize("text, expected", [
    ("docker run --gpus all lmsysorg/sglang:v0.5.14-cu129 python3 -m sglang.launch_server",
     {"sglang": ("0.5.14", "image-tag"), "cuda": ("12.9", "image-tag")}),
    ("image: lmsysorg/sglang:v0.4.6.post5-cu124", {"sglang": ("0.4.6.post5", "image-tag"), "cuda": ("12.4", "image-tag")}),
    ("image: lmsysorg/sglang:latest", {}),
    ("lmsysorg/sglang:dev", {}),
    ('  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/layers/linear.py", line 12, in <module>',
     {"python": ("3.10", "site-packages"), "vllm": (None, "site-packages")}),
    ("/opt/conda/lib/python3.11/site-packages/transformers-4.57.1.dist-info/METADATA",
     {"python": ("3.11", "site-packages"), "transformers": ("4.57.1", "dist-info")}),
    ("torch==2.8.0\nsgl-kernel==0.3.16.post4\nflashinfer-python @ file:///tmp/f.whl\n",
     {"torch": ("2.8.0", "pip-freeze"), "sgl-kernel": ("0.3.16.post4", "pip-freeze")}),
    ("Package            Version\n------------------ -----------\ntorch              2.8.0\nxgrammar           0.1.25\n",
     {"torch": ("2.8.0", "pip-list"), "xgrammar": ("0.1.25", "pip-list")}),
    ("ImportError: this model needs transformers version 4.57.1, found torch 2.8.0+cu128. Install transformers>=4.58",
     {"transformers": ("4.57.1", "message"), "torch": ("2.8.0+cu128", "message")}),
    ("[2025-01-01 12:00:00] Load weight end. type=LlamaForCausalLM, avail mem=70.21 GB, mem usage=15.1 GB.", {}),
])
def test_detect_shapes(text: str, expected: dict) -> None:
    assert _seen(text) == expected


def test_detect_prefers_the_more_trusted_sighting() -> None:
    text = "lmsysorg/sglang:v0.5.4-cu128\n" + CHECK_ENV
    assert versions.detect(text)["sglang"].version == "0.5.5"  # check_env beats the image tag
    assert versions.sglang_from_image_tag("lmsysorg/sglang:v0.5.14-cu129") == "0.5.14"
    assert versions.sglang_from_image_tag("lmsysorg/sglang:latest") is None
