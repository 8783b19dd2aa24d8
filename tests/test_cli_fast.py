"""The entry point's click-free path (cli/argv.py) takes exactly what click would, and sets the same.

Every command line below goes both ways: through click (`sglang-doctor check …` forced through the
group) and through `plain_check`; where `plain_check` takes it, both must reach `run_check` with the
same files, options and "given on the command line" set, and the real command's output and exit
status must match the click path's.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

import sglang_doctor
from sglang_doctor.cli import argv as fast
from sglang_doctor.cli import main as cli_main

DEMO = Path(sglang_doctor.__file__).parent / "fixtures" / "demo" / "qwen3.6-27b-awq-dtype-crash.log"


def _check_command() -> click.Command:
    return cli_main.main.commands["check"]


def _via_click(argv: list[str], monkeypatch) -> tuple[tuple[str, ...], dict[str, Any], set[str]] | str:
    """What click hands to run_check for `sglang-doctor ARGV` (the usage error's text if it refuses)."""
    seen: list[Any] = []
    monkeypatch.setattr(cli_main, "run_check",
                        lambda files, opts, given, follow=False, statistics=False: seen.append((files, opts, given)))
    from click.testing import CliRunner

    res = CliRunner().invoke(cli_main.main, argv, catch_exceptions=False)
    if not seen:
        return res.output
    files, opts, given = seen[0]
    return tuple(files), dict(opts), set(given)


PLAIN = [
    [], ["a.log"], ["a.log", "b.log", "-"], ["--format", "json", "a.log"], ["a.log", "--format=sarif"],
    ["-q", "a.log"], ["--quiet", "--no-color", "a.log"], ["--color", "a.log"], ["--fail-on", "warning", "a.log"],
    ["--fail-on=never", "--format", "junit", "x", "y"], ["--no-baseline", "a.log"], ["--format", "json"],
    ["--format", "text", "--format", "json", "a.log"],  # the last one wins, as with click
]
TO_CLICK = [
    ["check", "a.log"], ["explain", "x"], ["rules", "list"], ["demo"], ["preflight"], ["--help"], ["-h"],
    ["--version"], ["--format", "jsn", "a.log"], ["--format"], ["--fail-on", "bad"], ["-f", "a.log"],
    ["--cmd", "python -m sglang.launch_server", "a.log"], ["--", "a.log"], ["--quiet=yes", "a.log"],
    ["-qj", "a.log"], ["--statistics", "a.log"], ["--format", "--quiet", "a.log"], ["--jobs", "2", "a.log"],
]


@pytest.mark.parametrize("argv", PLAIN, ids=lambda a: " ".join(a) or "stdin")
def test_a_plain_command_line_reaches_run_check_as_click_would_pass_it(argv, monkeypatch):
    assert fast.plain_check(argv) == _via_click(argv, monkeypatch)


@pytest.mark.parametrize("argv", TO_CLICK, ids=lambda a: " ".join(a))
def test_anything_else_is_left_to_click(argv):
    assert fast.plain_check(argv) is None


def test_shell_completion_is_left_to_click(monkeypatch):
    monkeypatch.setenv("_SGLANG_DOCTOR_COMPLETE", "bash_source")
    assert fast.plain_check(["a.log"]) is None


def test_the_table_is_click_s_declaration():
    """Defaults, option strings, flag values and choices all as check's click options declare them."""
    params = {p.name: p for p in _check_command().params if isinstance(p, click.Option)}
    assert set(fast.DEFAULTS) == set(params) - {"follow", "statistics"}  # (the values: the `stdin` case above)
    for opt, (name, value) in fast.FLAGS.items():
        p = params[name]
        assert p.is_flag and (opt in p.opts and value is True or opt in p.secondary_opts and value is False)
    for opt, (name, choices) in fast.VALUED.items():
        p = params[name]
        assert opt in p.opts and not p.is_flag and tuple(p.type.choices) == choices
    ctx = click.Context(cli_main.main)
    assert set(fast.COMMANDS) == set(cli_main.main.list_commands(ctx))


def _hostile(tmp_path: Path, name: str) -> Path:
    """One input the one-line-error promise covers, written into tmp_path."""
    import gzip

    demo = DEMO.read_bytes()
    path = tmp_path / name
    if name == "nologs":
        path.mkdir()
        return path
    path.write_bytes({
        "junk.bin": bytes(range(256)) * 64,
        "latin1.log": demo.replace(b"Traceback", b"Trac\xe9back"),
        "demo.log.gz": gzip.compress(demo),
        "empty.log": b"",
        "giant.log": b"x" * 3_000_000 + b"\n" + demo,
        "crlf.log": demo.replace(b"\n", b"\r\n"),
    }[name])
    return path


def _command(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "sglang_doctor", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("args", [[str(DEMO)], ["--format", "json", str(DEMO)], ["-q", "--fail-on", "never", str(DEMO)],
                                  ["--format", "sarif", str(DEMO)], ["missing.log"]],
                         ids=["text", "json", "quiet-never", "sarif", "missing"])
def test_the_fast_path_prints_and_exits_as_the_click_path(args, tmp_path):
    fast_run = _command(args, tmp_path)
    click_run = _command(["check", *args], tmp_path)  # a subcommand name: always through click
    assert (fast_run.returncode, fast_run.stdout, fast_run.stderr) == (
        click_run.returncode, click_run.stdout, click_run.stderr)
    assert fast_run.returncode in (0, 1, 2) and (fast_run.stdout or fast_run.stderr)


def test_every_dataclass_has_a_docstring():
    """A dataclass without one makes `dataclasses` write one from `inspect.signature`, importing
    `inspect` (~7 ms) into every run that defines it (_speed/standin.py)."""
    root = Path(sglang_doctor.__file__).parent
    bare = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and ast.get_docstring(node) is None and any(
                    "dataclass" in ast.unparse(d) for d in node.decorator_list):
                bare.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert bare == []


@pytest.mark.parametrize("name", ["junk.bin", "latin1.log", "demo.log.gz", "empty.log", "nologs", "giant.log", "crlf.log"])
def test_hostile_inputs_get_the_same_answer_on_the_fast_path(name, tmp_path):
    """The common path is the click-free one now: bad input must still be one line and a status."""
    args = ["--format", "json", str(_hostile(tmp_path, name))]
    fast_run = _command(args, tmp_path)
    click_run = _command(["check", *args], tmp_path)
    assert (fast_run.returncode, fast_run.stdout, fast_run.stderr) == (
        click_run.returncode, click_run.stdout, click_run.stderr)
    assert "Traceback" not in fast_run.stderr and len(fast_run.stderr.strip().splitlines()) <= 1


def _click_only(args: list[str], tmp_path: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The click group itself (cli/main.py), bypassing the entry point's fast path."""
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(tmp_path / "cache"))
    code = "import sys\nfrom sglang_doctor.cli.main import main\nmain()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                          input=stdin, timeout=120)


@pytest.mark.parametrize("args, stdin", [
    (["explain", "RuntimeError: CUDA error: an illegal memory access was encountered"], None),
    (["explain", "--format", "json", "torch.OutOfMemoryError:", "CUDA", "out", "of", "memory."], None),
    (["explain", "-q"], "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                        "ValueError: awq quantization requires some operators from vllm.\n"),
    (["explain"], ""),
], ids=["words", "json-words", "stdin", "nothing"])
def test_explain_on_the_fast_path_answers_as_click_does(args, stdin, tmp_path):
    assert fast.plain_explain(args) is not None
    env = dict(os.environ, SGLANG_DOCTOR_CACHE=str(tmp_path / "cache"))
    fast_run = subprocess.run([sys.executable, "-m", "sglang_doctor", *args], capture_output=True, text=True,
                              env=env, cwd=tmp_path, input=stdin, timeout=120)
    click_run = _click_only(args, tmp_path, stdin)
    assert (fast_run.returncode, fast_run.stdout, fast_run.stderr) == (
        click_run.returncode, click_run.stdout, click_run.stderr)
    assert fast_run.returncode in (1, 2)


@pytest.mark.parametrize("argv", [["explain", "--cmd", "x", "err"], ["explain", "--help"], ["explain", "-f", "x"],
                                  ["check", "explain"], ["x.log"]])
def test_explain_with_anything_else_is_left_to_click(argv):
    assert fast.plain_explain(argv) is None


def test_explain_reaches_run_explain_as_click_would_pass_it(monkeypatch):
    from click.testing import CliRunner

    seen: list = []
    monkeypatch.setattr(cli_main, "run_explain", lambda text, opts, given: seen.append((tuple(text), opts, given)))
    argv = ["explain", "--format=json", "--fail-on", "warning", "RuntimeError:", "boom"]
    CliRunner().invoke(cli_main.main, argv, catch_exceptions=False)
    assert seen and fast.plain_explain(argv) == (seen[0][0], dict(seen[0][1]), set(seen[0][2]))
