"""Running the CLI in tests with stdout and stderr kept apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from sglang_doctor.cli.main import main


def runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into stdout unless told not to
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def run(args, input=None, env=None):
    return runner().invoke(main, [str(a) for a in args], input=input, env=env, catch_exceptions=False)


_BUILTIN: list = []


def cache_builtin_rules(monkeypatch) -> None:
    """Load the built-in rules once per test session (each CLI call would parse every YAML file again)."""
    import sglang_doctor.engine.rules as rules_mod

    real = rules_mod.load_rules

    def cached(extra_dirs=None, builtin=True):
        if extra_dirs or not builtin:
            return real(extra_dirs, builtin)
        if not _BUILTIN:
            _BUILTIN.extend(real())
        return list(_BUILTIN)

    monkeypatch.setattr(rules_mod, "load_rules", cached)


def isolate(tmp_path, monkeypatch) -> None:
    """Run in an empty directory (no config or baseline from the machine) with the rules cached."""
    monkeypatch.chdir(tmp_path)
    cache_builtin_rules(monkeypatch)


DEMO_LOG = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo" / "qwen3.6-27b-awq-dtype-crash.log"


def command_runs(tmp_path: Path, probe: str, imports: str = "", runs: int = 2,
                 args: tuple[str, ...] = ("--format", "json")) -> list[subprocess.CompletedProcess]:
    """Run the real command (entry point, `args` and the demo log: a JSON report by default) `runs`
    times in one fresh cache directory; each prints `probe` (a Python expression) on stderr as it exits."""
    # The entry point ends the process itself (entry.exit_now): report through an exit function.
    code = (f"import atexit, sys\n{imports}\nfrom sglang_doctor.cli.entry import main\n"
            f"atexit.register(lambda: print({probe}, file=sys.stderr))\n"
            f"sys.argv = ['sglang-doctor', *{list(args)!r}, sys.argv[1]]\nmain()")
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(tmp_path / "cache"))
    return [subprocess.run([sys.executable, "-c", code, str(DEMO_LOG)], capture_output=True, text=True, env=env,
                           cwd=tmp_path) for _ in range(runs)]
