"""The generated-code cache of `dataclasses`: the same classes as compiling, kept across runs,
never trusted blindly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Installs the cache, defines a frozen dataclass with defaults and a factory, and reports how many
# compiled texts came from the file, how many were compiled anew, and whether the class behaves.
PROBE = r"""
from sglang_doctor._speed import codecache
codecache.install()
loaded = len(codecache._entries)
from dataclasses import dataclass, field, FrozenInstanceError
@dataclass(frozen=True)
class Point:
    x: int
    y: int = 2
    tags: tuple = field(default_factory=tuple)
p = Point(1)
try:
    p.x = 5
    frozen = False
except FrozenInstanceError:
    frozen = True
ok = (repr(p) == "Point(x=1, y=2, tags=())" and p == Point(1, 2, ()) and hash(p) == hash(Point(1))
      and frozen and Point.__init__.__code__.co_filename == "<string>")
print(loaded, ok, codecache._added)
"""


def _run(cache: Path) -> list[str]:
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(cache))
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def test_second_run_takes_the_generated_methods_from_the_file(tmp_path):
    cache = tmp_path / "cache"
    loaded, ok, added = _run(cache)
    assert (loaded, ok) == ("0", "True") and int(added) >= 4  # __init__, __repr__, __eq__, __setattr__…
    assert len(list(cache.glob("code-*.marshal"))) == 1
    loaded, ok, added = _run(cache)
    assert int(loaded) >= 4 and ok == "True" and added == "0"  # nothing compiled: nothing rewritten


def test_a_corrupt_file_is_ignored_and_replaced(tmp_path):
    cache = tmp_path / "cache"
    _run(cache)
    next(cache.glob("code-*.marshal")).write_bytes(b"\xff garbage")
    loaded, ok, added = _run(cache)
    assert (loaded, ok) == ("0", "True") and int(added) >= 4
    assert int(_run(cache)[0]) >= 4


def test_switched_off_nothing_is_cached(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(cache), SGLANG_DOCTOR_SPEEDUPS="0")
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.split()[1] == "True"
    assert not list(cache.glob("code-*"))


def test_entries_are_decoded_only_when_used_and_a_bad_one_is_compiled_anew(monkeypatch):
    import marshal
    from types import CodeType

    from sglang_doctor._speed import codecache

    good, bad, unused = "x = 1 + 1\n", "y = 2 * 3\n", "z = 0\n"
    entries = {good: marshal.dumps(compile(good, "<string>", "exec", dont_inherit=True)), bad: b"\x00not code",
               unused: marshal.dumps(compile(unused, "<string>", "exec", dont_inherit=True))}
    monkeypatch.setattr(codecache, "_entries", dict(entries))
    monkeypatch.setattr(codecache, "_used", set())
    monkeypatch.setattr(codecache, "_added", 0)
    ns: dict = {}
    codecache.cached_exec(good, ns)
    codecache.cached_exec(bad, ns)
    assert (ns["x"], ns["y"]) == (2, 6)
    assert isinstance(codecache._entries[good], CodeType) and isinstance(codecache._entries[bad], CodeType)
    assert codecache._entries[unused] == entries[unused] and codecache._added == 1  # only the bad one compiled
