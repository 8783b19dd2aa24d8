"""The pre-commit hook for real: pre-commit builds a virtualenv, pip-installs this project
into it (dependencies from the package index, or pip's wheel cache) and runs the hook on
the logs of a throwaway repository.

`pre-commit try-repo` clones the hook repository at HEAD (plus changes to tracked files),
so it would miss a hook file or sources not yet committed: the hook repository here is a
copy of this working tree committed into a temporary repository.

Marked `precommit` (about 30 s: three environment builds); `pytest -m "not precommit"`
leaves it out, CI runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pre_commit", reason="pre-commit is in the test extra: pip install -e '.[test]'")
pytestmark = [pytest.mark.precommit,
              pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")]

PROJECT = Path(__file__).resolve().parent.parent
DEMO = PROJECT / "sglang_doctor" / "fixtures" / "demo"
TIMEOUT_S = 170
CLEAN_LOG = ("[2026-05-02 09:14:10] Init torch distributed begin.\n"
             "[2026-05-02 09:14:11] Init torch distributed ends. elapsed=0.62 s, mem usage=0.09 GB\n"
             "[2026-05-02 09:14:40] The server is fired up and ready to roll!\n")


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "PRE_COMMIT")) and k not in ("PIP_NO_CACHE_DIR", "PIP_REQUIRE_VIRTUALENV")}
    env.update({
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.environ.get("HOME", str(tmp)),
        # pip inside the hook's virtualenv: no prompts, no self-check, no bars; its wheel cache
        # (~/.cache/pip) stays on, so dependencies are downloaded once per machine.
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_PROGRESS_BAR": "off",
        "PRE_COMMIT_HOME": str(tmp / "pre-commit-home"),
        "PRE_COMMIT_COLOR": "never", "NO_COLOR": "1",
    })
    return env


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def _pre_commit(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return _env(tmp_path_factory.mktemp("precommit-env"))


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory, env) -> Path:
    """This working tree (hook file, pyproject, README, package) as a committed repository."""
    dst = tmp_path_factory.mktemp("hook-repo")
    for name in (".pre-commit-hooks.yaml", "pyproject.toml", "README.md"):
        shutil.copy2(PROJECT / name, dst / name)
    shutil.copytree(PROJECT / "sglang_doctor", dst / "sglang_doctor",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    _git(dst, env, "init", "-q")
    _git(dst, env, "add", "-A")
    _git(dst, env, "commit", "-q", "-m", "hook")
    return dst


@pytest.fixture
def work(tmp_path, env) -> Path:
    """A user's repository with a crash log and a clean log committed."""
    _git(tmp_path, env, "init", "-q")
    shutil.copy2(DEMO / "qwen3.6-27b-awq-dtype-crash.log", tmp_path / "crash.log")
    (tmp_path / "ok.log").write_text(CLEAN_LOG, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("RuntimeError: Index put requires the source and destination dtypes match\n")
    _git(tmp_path, env, "add", "-A")
    _git(tmp_path, env, "commit", "-q", "-m", "logs")
    return tmp_path


def test_try_repo_fails_on_a_crash_log(hook_repo, work, env):
    r = _pre_commit(work, env, "try-repo", str(hook_repo), "sglang-doctor", "--all-files")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "sglang-doctor" in out and "Failed" in out
    assert "crash.log:34" in out and "error SGD401" in out and "--dtype auto → bfloat16" in out
    assert "notes.txt" not in out  # only *.log files are passed


def test_try_repo_passes_when_only_a_clean_log_is_staged(hook_repo, work, env):
    (work / "rank1.log").write_text(CLEAN_LOG, encoding="utf-8")
    _git(work, env, "add", "rank1.log")
    r = _pre_commit(work, env, "try-repo", str(hook_repo), "sglang-doctor")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "Passed" in out and "Skipped" not in out  # it ran, on the staged log only


def test_config_with_the_documented_args(hook_repo, work, env):
    # The README's .pre-commit-config.yaml: a warning fails the commit, findings as annotations.
    rev = _git(hook_repo, env, "rev-parse", "HEAD")
    (work / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {hook_repo}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: sglang-doctor\n"
        "        args: [--fail-on, warning, --format, github]\n", encoding="utf-8")
    lines = (DEMO / "qwen3.6-27b-awq-dtype-crash.log").read_text(encoding="utf-8").splitlines(keepends=True)
    (work / "warn.log").write_text("".join(lines[:15]) + CLEAN_LOG.splitlines(keepends=True)[-1], encoding="utf-8")
    _git(work, env, "add", "warn.log", ".pre-commit-config.yaml")
    r = _pre_commit(work, env, "run")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "::warning file=warn.log,line=15,title=SGD128" in out and "::error" not in out
