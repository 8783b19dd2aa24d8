from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.rules import load_rules

DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"


@pytest.fixture(scope="session")
def rules():
    return load_rules()


@pytest.fixture
def demo_dir() -> Path:
    return DEMO
