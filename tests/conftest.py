from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The suite (and every command it starts) keeps its caches apart from the user's own.
os.environ["SGLANG_DOCTOR_CACHE"] = _CACHE = tempfile.mkdtemp(prefix="sglang-doctor-test-cache-")
atexit.register(shutil.rmtree, _CACHE, True)

from sglang_doctor.engine.rules import load_rules

DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"


@pytest.fixture(scope="session")
def rules():
    return load_rules()


@pytest.fixture
def demo_dir() -> Path:
    return DEMO


def pytest_terminal_summary(terminalreporter) -> None:
    """The real-log figures (strict and lenient), when the real-log cases ran."""
    import sys

    real = sys.modules.get("test_real_logs")
    if real is not None and real.RESULTS:
        terminalreporter.write_line(real.figures())
