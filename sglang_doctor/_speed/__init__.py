"""What exists only for speed: caches across runs, deferred class set-up, the stage-one scanner, the
compiled helpers of the block path (_native.c, optional: setup.py builds it where a C compiler is).

One switch turns all of it off: `SGLANG_DOCTOR_SPEEDUPS=0` in the environment. The report must
be the same either way (tests/test_speed_switch.py); only the time differs.
"""

from __future__ import annotations

import os

ENABLED: bool = os.environ.get("SGLANG_DOCTOR_SPEEDUPS", "1").strip().lower() not in ("0", "false", "no", "off")
