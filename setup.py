"""The one compiled part: the block path's compiled helpers (facts/decode.py, read/reader.py) (sglang_doctor/_speed/_native.c).

It is optional. Where no C compiler is found the build skips it and the package runs its pure-Python
path, with the same results (tests/test_native.py holds the two to each other).
SGLANG_DOCTOR_PURE=1 builds without it (a py3-none-any wheel).
"""

import os

from setuptools import Extension, setup

pure = os.environ.get("SGLANG_DOCTOR_PURE", "").strip().lower() in ("1", "true", "yes", "on")
setup(ext_modules=[] if pure else [
    Extension("sglang_doctor._speed._native", ["sglang_doctor/_speed/_native.c"], optional=True),
])
