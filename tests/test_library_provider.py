"""A missing shared library points at what ships it (SGD536 native-library-load-failed through
expr library_provider / library_kind, data/libraries.json): the driver's libraries at the driver
mount, a wheel's library at that wheel."""

from __future__ import annotations

import json

import pytest
from helpers_cli import run

from sglang_doctor.engine import expr

TRACE = """\
Traceback (most recent call last):
  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/usr/local/lib/python3.10/dist-packages/sgl_kernel/__init__.py", line 5, in <module>
    from sgl_kernel import common_ops
{error}
"""


def _value(source: str):
    try:
        return expr.evaluate(expr.compile_expr(source), {})
    except expr.MissingValue:
        return None


@pytest.mark.parametrize("lib, provider, kind", [
    ("libcuda.so.1", "nvidia-driver", "driver"),
    ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "nvidia-driver", "driver"),
    ("libcudart.so.12", "nvidia-cuda-runtime-cu12", "package"),
    ("libnccl.so.2", "nvidia-nccl-cu12", "package"),
    ("libtorch_cuda.so", "torch", "package"),
    ("libnot-a-real-library.so.7", None, None),
])
def test_expressions_name_the_provider(lib: str, provider: str | None, kind: str | None) -> None:
    assert _value(f"library_provider({lib!r})") == provider
    assert _value(f"library_kind({lib!r})") == kind


def _fixes(tmp_path, error: str) -> list[tuple]:
    log = tmp_path / "trace.log"
    log.write_text(TRACE.format(error=error))
    report = json.loads(run(["--format", "json", "--no-baseline", str(log)]).output)
    root = next(f for f in report["findings"] if f["rule"] == "native-library-load-failed")
    return [(f["kind"], f.get("flag") or f.get("name")) for f in root["fixes"]]


def test_a_driver_library_points_at_the_driver_mount_not_a_package(tmp_path) -> None:
    fixes = _fixes(tmp_path, "ImportError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory")
    assert fixes[0] == ("docker", "--gpus")
    assert not [f for f in fixes if f[0] == "package"]  # neither sgl-kernel nor sglang reinstalled


def test_a_wheel_library_names_its_wheel(tmp_path) -> None:
    fixes = _fixes(tmp_path, "OSError: libnccl.so.2: cannot open shared object file: No such file or directory")
    assert ("package", "nvidia-nccl-cu12") in fixes
    assert ("docker", "--gpus") not in fixes
