"""A cold start imports only what the log needs: the demo crash log's run, through the real command,
leaves these modules unimported (each was once on every run's path; what replaced it is named)."""

from __future__ import annotations

import pytest
from helpers_cli import command_runs

NOT_ON_A_CRASH_LOG_RUN = {
    "yaml": "the packaged YAML data is read from its parsed copy (_speed/datacache.py)",
    "importlib.resources": "data files are opened by path (fix/combinations.py)",
    "pydantic": "rule files are validated only when the rule cache misses",
    "rich": "the text report writes ANSI itself",
    "regex": "rule patterns run on `re` where safe",
    "hashlib": "cache keys use _blake2 alone",
    "click": "a plain `sglang-doctor [FILES] [--format F]` runs cli/check.py without it (cli/argv.py)",
    "inspect": "dataclasses' `inspect` is a stand-in (_speed/standin.py) and every class has a docstring",
    "datetime": "log times are read by read/records.ts_seconds",
    "threading": "the caches' locks are _thread's (what threading.Lock is)",
    "signal": "the Ctrl-C handler is swapped through _signal (cli/check._set_sigint)",
    "pickle": "cached rules are unpickled by _pickle itself (pickle's Python half is for writing them)",
    "sglang_doctor._speed._native": "the compiled block helpers load once an input is past its first 1 MB block",
}


@pytest.mark.parametrize("args, shows", [(("--format", "json"), '"index-put-dtype-mismatch"'),
                                         ((), "error SGD401 ")], ids=["json", "text"])
def test_the_demo_crash_log_run_leaves_the_heavy_modules_unimported(tmp_path, args, shows):
    probe = f"sorted(m for m in {sorted(NOT_ON_A_CRASH_LOG_RUN)!r} if m in sys.modules)"
    first, second = command_runs(tmp_path, probe, args=args)
    assert first.returncode == second.returncode == 1, first.stderr  # an error finding: exit 1
    assert shows in second.stdout  # the run did diagnose the log
    assert "yaml" in first.stderr  # the first run fills the caches (and validates the rules with pydantic)
    assert second.stderr.strip().splitlines()[-1] == "[]"  # the second is a cold start on warm caches


def test_the_command_compiles_no_dataclass_twice(tmp_path):
    """The entry point installs the generated-code cache: a second run compiles nothing."""
    runs = command_runs(tmp_path, "len(codecache._entries), codecache._added",
                        imports="from sglang_doctor._speed import codecache")
    first, second = (r.stderr.split()[-2:] for r in runs)
    assert int(first[1]) > 100  # the report's, the memory model's, the launch command's classes
    assert second[1] == "0" and int(second[0]) >= int(first[1])
    assert runs[0].stdout == runs[1].stdout
