"""Stand-ins for the modules `dataclasses` and `pathlib` import but seldom call (_speed/standin.py):
never imported by a run that does not call them, the real module the moment something does."""

from __future__ import annotations

import os
import subprocess
import sys


def _probe(code: str, tmp_path, before: str = "") -> list[str]:
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(tmp_path))
    head = f"import sys\n{before}\nfrom sglang_doctor._speed import standin\nstandin.install()\n"
    # -S: no site (an editable install's path finder imports pathlib and urllib.parse there)
    p = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path[:0] = {sys.path!r}\n" + head + code],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout.split("\n")


def test_inspect_waits_until_a_class_without_a_docstring_needs_it(tmp_path):
    out = _probe(r"""
from dataclasses import dataclass
@dataclass
class Documented:
    "Has one."
    x: int
before = "inspect" in sys.modules
@dataclass
class Bare:
    x: int
    y: str = "a"
import inspect
print(before, Bare.__doc__, Documented.__doc__, sys.modules["inspect"] is inspect, callable(inspect.signature))
""", tmp_path)
    assert out[0] == "False Bare(x: int, y: str = 'a') Has one. True True"


def test_urllib_parse_waits_until_a_path_becomes_a_uri(tmp_path):
    out = _probe(r"""
from pathlib import Path
p = Path("/tmp/a b") / "c"
before = "urllib.parse" in sys.modules
uri = p.as_uri()
import urllib.parse
print(before, uri, urllib.parse.urlparse(uri).path, sys.modules["urllib.parse"] is urllib.parse)
""", tmp_path)
    assert out[0] == "False file:///tmp/a%20b/c /tmp/a%20b/c True"


def test_a_module_already_imported_is_left_alone(tmp_path):
    out = _probe("import dataclasses\nprint(type(dataclasses.inspect).__name__)", tmp_path, before="import inspect")
    assert out[0] == "module"  # the real one: nothing deferred


def test_a_name_the_stand_in_lacks_reaches_the_real_module():
    from sglang_doctor._speed.standin import StandIn

    s = StandIn("json", ("dumps",))
    assert s.dumps({"a": 1}) == '{"a": 1}' and s.loads("[1]") == [1]
