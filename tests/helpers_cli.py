"""Running the CLI in tests with stdout and stderr kept apart."""

from __future__ import annotations

from click.testing import CliRunner

from sglang_doctor.cli import main


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
    import sglang_doctor.rules as rules_mod

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
