"""What exists only for speed: caches across runs, deferred class set-up, the stage-one scanner, the
compiled helpers of the block path (_native.c, optional: setup.py builds it where a C compiler is).

One switch turns all of it off: `SGLANG_DOCTOR_SPEEDUPS=0` in the environment. The report must
be the same either way (tests/test_speed_switch.py); only the time differs.
"""

from __future__ import annotations

import os
from typing import Any

ENABLED: bool = os.environ.get("SGLANG_DOCTOR_SPEEDUPS", "1").strip().lower() not in ("0", "false", "no", "off")

_NATIVE: list[Any] = []


def native() -> Any:
    """The compiled helpers (_native.c: decode_scan, newlines), or None: not built here, or speedups off.
    Loaded on first use, by the block path only (a short log never loads them); loading also sets the
    allocator for big blocks (roomy_heap)."""
    if not _NATIVE:
        module = None
        if ENABLED:
            try:
                from sglang_doctor._speed import _native as module
            except ImportError:
                module = None
            if module is not None:
                module.roomy_heap()
        _NATIVE.append(module)
    return _NATIVE[0]
