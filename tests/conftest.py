from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import sys

import pytest

# tests/realparser is imported as `tests.realparser` (its modules also run as `python -m tests.realparser.x`).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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
