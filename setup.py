"""The one compiled part: facts/decode.py's fast path (sglang_doctor/_speed/_decodescan.c).

It is optional. Where no C compiler is found the build skips it and the package runs its pure-Python
path, with the same results (tests/test_decode_scan.py holds the two to each other).
SGLANG_DOCTOR_PURE=1 builds without it (a py3-none-any wheel).
"""

import os

from setuptools import Extension, setup

pure = os.environ.get("SGLANG_DOCTOR_PURE", "").strip().lower() in ("1", "true", "yes", "on")
setup(ext_modules=[] if pure else [
    Extension("sglang_doctor._speed._decodescan", ["sglang_doctor/_speed/_decodescan.c"], optional=True),
])
