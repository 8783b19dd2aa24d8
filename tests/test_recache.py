"""The compiled-pattern cache: same patterns as compiling, kept across runs, never trusted blindly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers_cli import command_runs

PATTERNS = [r"KV Cache is allocated\. #tokens: (?P<tokens>\d+)", r"(?i)cuda (out of) memory", rb"\x00+[\x80-\xff]"]

# Installs the cache, compiles PATTERNS (and a few with flags), then reports which came from the
# file and whether each equals a plain compile (done with the real compiler, kept aside first).
PROBE = r"""
import re, sys
from re import _compiler
real = _compiler.compile
from sglang_doctor._speed import recache
before = dict(recache._entries)
recache.install()
loaded = len(recache._entries)
pats = %r
out = []
for p in pats:
    for flags in (0, re.ASCII | re.MULTILINE):
        re.purge()
        got = re.compile(p, flags)
        out.append(got == real(p, flags) and got.groupindex == real(p, flags).groupindex)
print(loaded, all(out), recache._added)
"""


def _run(cache: Path, code: str = PROBE % (PATTERNS,)) -> list[str]:
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(cache))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def _cache_file(cache: Path) -> Path:
    files = list(cache.glob("re-*.marshal"))
    assert len(files) == 1, files
    return files[0]


def test_second_run_rebuilds_the_same_patterns_from_the_file(tmp_path):
    cache = tmp_path / "cache"
    loaded, same, added = _run(cache)
    assert (loaded, same) == ("0", "True") and int(added) >= 6
    loaded, same, added = _run(cache)
    assert int(loaded) >= 6 and same == "True" and added == "0"  # nothing new: the file is not rewritten


def test_a_corrupt_file_is_ignored_and_replaced(tmp_path):
    cache = tmp_path / "cache"
    _run(cache)
    _cache_file(cache).write_bytes(b"\xff garbage")
    loaded, same, _ = _run(cache)
    assert (loaded, same) == ("0", "True")
    assert int(_run(cache)[0]) >= 6


def test_a_file_others_can_write_is_not_read(tmp_path):
    if not hasattr(os, "getuid"):
        pytest.skip("POSIX permissions")
    cache = tmp_path / "cache"
    _run(cache)
    cache.chmod(0o777)
    try:
        assert _run(cache)[0] == "0"
    finally:
        cache.chmod(0o700)


def test_unwritable_cache_still_compiles(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    loaded, same, _ = _run(blocker / "cache")
    assert (loaded, same) == ("0", "True")


def test_debug_patterns_are_never_cached(tmp_path):
    code = ("import re, io, contextlib\nfrom sglang_doctor._speed import recache\nrecache.install()\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    re.compile('ab+c', re.DEBUG)\n"
            "print(('ab+c', int(re.DEBUG)) in recache._entries)")
    assert _run(tmp_path / "cache", code) == ["False"]


def test_the_command_uses_it(tmp_path):
    """The entry point installs it: a second run of the command rebuilds its patterns from the file."""
    runs = command_runs(tmp_path, "len(recache._entries), recache._added", imports="from sglang_doctor._speed import recache")
    first, second = (r.stderr.split()[-2:] for r in runs)
    assert int(first[1]) > 50  # the rules' patterns, the log parsers', the libraries'
    assert second[1] == "0" and int(second[0]) >= int(first[1])
    assert runs[0].stdout == runs[1].stdout
