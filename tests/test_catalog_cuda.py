"""CUDA / NCCL result codes (data/cuda-codes.json, tools/extract_cuda_codes.py, registry/cuda_codes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers_tools import load_tool
from sglang_doctor.registry import cuda_codes

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "sglang_doctor" / "data" / "cuda-codes.json"
CLASSES = ROOT / "sglang_doctor" / "data" / "cuda-classes.yaml"




def _data() -> dict:
    return json.loads(DATA.read_text())


def test_header_names_the_wheels_it_was_built_from() -> None:
    data = _data()
    assert data["generator"] == "tools/extract_cuda_codes.py"
    names = [w["wheel"] for w in data["wheels"]]
    assert any(n.startswith("nvidia_cuda_runtime_cu12-") for n in names)
    assert any(n.startswith("nvidia_nccl_cu12-") for n in names)
    assert all(len(w["sha256"]) == 64 for w in data["wheels"])
    counts = {k: sum(1 for e in data["entries"] if e["enum"] == k) for k in data["counts"]}
    assert counts == data["counts"]
    # CUDA 12.9's headers: 133 cudaError_t and 99 CUresult values; CUDA 13 adds a few.
    assert counts["cudaError_t"] >= 133 and counts["CUresult"] >= 99 and counts["ncclResult_t"] >= 8


def test_every_runtime_error_has_its_message_and_numbers_are_unique() -> None:
    data = _data()
    runtime = [e for e in data["entries"] if e["enum"] == "cudaError_t"]
    assert all(e["message"] for e in runtime)
    for enum in ("cudaError_t", "CUresult", "ncclResult_t"):
        codes = [e["code"] for e in data["entries"] if e["enum"] == enum]
        assert len(codes) == len(set(codes)), enum


@pytest.mark.parametrize("name, code, message", [
    ("cudaErrorNoKernelImageForDevice", 209, "no kernel image is available for execution on the device"),
    ("cudaErrorIllegalAddress", 700, "an illegal memory access was encountered"),
    ("cudaErrorMemoryAllocation", 2, "out of memory"),
    ("cudaErrorInsufficientDriver", 35, "CUDA driver version is insufficient for CUDA runtime version"),
    ("CUDA_ERROR_OUT_OF_MEMORY", 2, "out of memory"),
    ("ncclSystemError", 2, "unhandled system error (run with NCCL_DEBUG=INFO for details)"),
    ("ncclRemoteError", 6, "remote process exited or there was a network error"),
])
def test_known_codes_carry_the_libraries_own_text(name: str, code: int, message: str) -> None:
    e = cuda_codes.by_name(name)
    assert e is not None and e.code == code and e.message == message


@pytest.mark.parametrize("text, names", [
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device",
     ["cudaErrorNoKernelImageForDevice"]),
    ("CUDA error code=35(b'cudaErrorInsufficientDriver')", ["cudaErrorInsufficientDriver"]),
    ("cudaErrorInsufficientDriver", ["cudaErrorInsufficientDriver"]),
    ("RuntimeError: CUresult error: 2 (out of memory)", ["CUDA_ERROR_OUT_OF_MEMORY"]),
    # torch_memory_saver <= 0.0.8 spells the code `result=N`
    ("[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp func=resume line=214",
     ["CUDA_ERROR_INVALID_VALUE"]),
    ("CUDA_ERROR_OUT_OF_MEMORY", ["CUDA_ERROR_OUT_OF_MEMORY"]),
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
     "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5", ["ncclSystemError"]),
    ("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
     ["ncclSystemError"]),
    ("RuntimeError: Triton Error [CUDA]: misaligned address", ["CUDA_ERROR_MISALIGNED_ADDRESS"]),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", ["cudaErrorMemoryAllocation"]),
    ("[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
     "CUDA kernel errors might be asynchronously reported at some other API call", ["cudaErrorIllegalAddress"]),
    ("NCCL error in: x.cpp:1, remote process exited or there was a network error, NCCL version 2.21.5",
     ["ncclRemoteError"]),
    ("misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer", []),
    ("timeout while waiting for the tokenizer", []),
    ("ValueError: invalid argument for --tp-size", []),
])
def test_resolve_reads_every_log_form(text: str, names: list[str]) -> None:
    assert [e.name for e in cuda_codes.resolve(text)] == names


def test_an_entry_explains_itself_and_names_its_origin() -> None:
    e = cuda_codes.resolve("CUDA error: no kernel image is available for execution on the device")[0]
    assert e.cls == "no-kernel-image" and e.fixes
    assert e.origin() == {"package": "cuda", "name": "cudaErrorNoKernelImageForDevice", "code": 209}
    assert e.explanation.startswith("cudaErrorNoKernelImageForDevice (cudaError_t 209): This indicates")
    drv = cuda_codes.by_name("cudaErrorInsufficientDriver")
    assert drv and drv.cls == "driver-too-old"
    assert {"kind": "system", "name": "nvidia-driver", "action": "raise"}.items() <= drv.fixes[0].items()


def test_curated_classes_name_only_extracted_codes_and_are_embedded_as_written() -> None:
    spec = yaml.safe_load(CLASSES.read_text())["classes"]
    data = _data()
    known = {e["name"] for e in data["entries"]}
    listed = [n for body in spec.values() for n in body["names"]]
    assert not set(listed) - known
    assert len(listed) == len(set(listed)), "a code in two classes"
    assert data["classes"] == {c: {k: v for k, v in b.items() if k != "names"} for c, b in spec.items()}
    assert {e["name"]: e.get("class") for e in data["entries"] if e.get("class")} == \
        {n: c for c, b in spec.items() for n in b["names"]}
    assert len(spec) <= 15  # a map by class, not by case


def test_nothing_is_read_at_import() -> None:
    import subprocess
    import sys

    code = ("from sglang_doctor.registry import cuda_codes, packaged\n"
            "assert not packaged._LOADED, packaged._LOADED\ncuda_codes.load()\nprint(sorted(packaged._LOADED))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['cuda-codes.json']"


@pytest.mark.catalog_build
def test_rebuild_from_local_wheels_gives_the_committed_file(tmp_path: Path) -> None:
    tool = load_tool("extract_cuda_codes")
    wheelcache = load_tool("wheelcache")
    for dist, version, *_ in tool.CUDA_WHEELS + [tool.NCCL_WHEEL]:
        if wheelcache.cached(dist, version) is None:
            pytest.skip(f"{dist}=={version} is not in wheels/")
    out = tmp_path / "cuda-codes.json"
    tool.main(["--out", str(out)])
    assert out.read_text() == DATA.read_text()
