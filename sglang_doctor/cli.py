"""Command line: `sglang-doctor [FILES]`, `sglang-doctor explain`, `sglang-doctor rules …`.

Exit status for every format: 0 no finding at or above --fail-on, 1 findings at or above
it, 2 usage, input or rule-file error (always a one-line message, never a traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from . import __version__

FAIL_LEVELS = {"error": 0, "warning": 1, "info": 2}


def _die(msg: str, code: int = 2) -> NoReturn:
    click.echo(f"sglang-doctor: {msg}", err=True)
    sys.exit(code)


class _DefaultToCheck(click.Group):
    """`sglang-doctor x.log` means `sglang-doctor check x.log`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)


def _load_rules(extra: tuple[str, ...]) -> list[Any]:
    from .rules import RuleLoadError, load_rules

    try:
        return load_rules(list(extra))
    except RuleLoadError as e:
        _die(str(e))


def _exit_code(summary: dict[str, int], fail_on: str) -> int:
    if fail_on == "never":
        return 0
    limit = FAIL_LEVELS[fail_on]
    return 1 if any(n and FAIL_LEVELS[sev] <= limit for sev, n in summary.items()) else 0


def _read_cmd_file(path: str) -> str:
    from .command import extract_command

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        _die(f"{path}: {e.strerror or e}")
    cmd = extract_command(text, path)
    if not cmd:
        _die(f"{path}: no SGLang launch command found")
    return cmd


def _emit(run: Any, fmt: str, fail_on: str, quiet: bool, color: bool | None) -> NoReturn:
    from .report import write_report

    for w in run.warnings:
        click.echo(f"sglang-doctor: warning: {w}", err=True)
    for e in run.errors:
        click.echo(f"sglang-doctor: {e}", err=True)
    try:
        write_report(run.report, fmt, sys.stdout, quiet=quiet, color=color)
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()
    code = _exit_code(run.report.summary, fail_on)
    sys.exit(2 if run.errors and code == 0 else code)


def _quiet_broken_pipe() -> NoReturn:
    # `sglang-doctor big.log | head -1`: the reader went away; exit without a traceback.
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


_common = [
    click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                 help="Output format."),
    click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default="error",
                 show_default=True, help="Exit 1 when a finding has at least this severity."),
    click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR",
                 help="Also load rules from DIR (repeatable)."),
    click.option("--cmd", "command", default=None, metavar="COMMAND",
                 help="The launch command (docker run … / python -m sglang.launch_server …) to correct."),
    click.option("--cmd-file", default=None, type=click.Path(), metavar="FILE",
                 help="Read the launch command from a shell script or a compose file."),
    click.option("--redact-hosts", is_flag=True, help="Also mask IP addresses and host names."),
    click.option("-q", "--quiet", is_flag=True, help="Only errors and warnings; no startup summary."),
    click.option("--color/--no-color", default=None, help="Force colour on or off (default: auto, NO_COLOR)."),
]


def common_options(fn: Any) -> Any:
    for opt in reversed(_common):
        fn = opt(fn)
    return fn


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sglang-doctor")
def main() -> None:
    """Diagnose a crashed SGLang launch from its log.

    \b
      docker logs sgl 2>&1 | sglang-doctor
      sglang-doctor launch.log other-rank.log.gz
      sglang-doctor explain "RuntimeError: Index put requires …"
    """


@main.command()
@click.argument("files", nargs=-1, type=click.Path())
@common_options
def check(files: tuple[str, ...], fmt: str, fail_on: str, rule_dirs: tuple[str, ...], command: str | None,
          cmd_file: str | None, redact_hosts: bool, quiet: bool, color: bool | None) -> None:
    """Read logs (files, directories of *.log, or stdin) and report what went wrong."""
    from .doctor import Options, diagnose

    names = _expand(files) if files else ["-"]
    if names == ["-"] and sys.stdin.isatty():
        click.echo("sglang-doctor: reading a log from standard input (pipe one in: docker logs NAME 2>&1 | "
                   "sglang-doctor); end with Ctrl-D", err=True)
    rules = _load_rules(rule_dirs)
    if cmd_file:
        command = _read_cmd_file(cmd_file)
    run = diagnose(names, rules, Options(command=command, redact_hosts=redact_hosts))
    _emit(run, fmt, fail_on, quiet, color)


def _expand(files: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for f in files:
        p = Path(f)
        if f != "-" and p.is_dir():
            found = sorted(x for x in p.rglob("*") if x.is_file() and (x.name.endswith(".log") or x.name.endswith(".log.gz")))
            if not found:
                click.echo(f"sglang-doctor: {f}: no *.log files in directory", err=True)
            out.extend(str(x) for x in found)
        else:
            out.append(f)
    return out


def demo_logs() -> list[Path]:
    from importlib import resources

    return sorted(Path(str(resources.files("sglang_doctor") / "fixtures" / "demo")).glob("*.log"))


@main.command()
@click.argument("name", required=False)
@common_options
def demo(name: str | None, fmt: str, fail_on: str, rule_dirs: tuple[str, ...], command: str | None,
         cmd_file: str | None, redact_hosts: bool, quiet: bool, color: bool | None) -> None:
    """Diagnose a bundled example log (the Qwen3.6 dtype crash unless NAME picks another)."""
    from .doctor import Options, diagnose

    logs = demo_logs()
    pick = [p for p in logs if name and name in p.name] if name else [p for p in logs if "dtype" in p.name]
    if not pick:
        _die(f"no demo log matches {name!r}; bundled: {', '.join(p.name for p in logs)}")
    if fmt == "text":
        click.echo(f"Diagnosing the bundled example {pick[0].name}:\n", err=True)
    run = diagnose([str(pick[0])], _load_rules(rule_dirs), Options(command=command, redact_hosts=redact_hosts))
    run.report.inputs[0].name = pick[0].name
    _emit(run, fmt, fail_on, quiet, color)


@main.command()
@click.argument("text", nargs=-1)
@common_options
def explain(text: tuple[str, ...], fmt: str, fail_on: str, rule_dirs: tuple[str, ...], command: str | None,
            cmd_file: str | None, redact_hosts: bool, quiet: bool, color: bool | None) -> None:
    """Explain a pasted traceback (stdin) or an error message given as arguments."""
    from .doctor import Options, diagnose

    if text:
        body = " ".join(text)
    else:
        if sys.stdin.isatty():
            click.echo("Paste the traceback or error, then press Ctrl-D on an empty line "
                       "(Ctrl-Z then Enter on Windows):", err=True)
        body = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if not body.strip():
        _die("nothing to explain: pass the error text as arguments or paste it on standard input")
    rules = _load_rules(rule_dirs)
    if cmd_file:
        command = _read_cmd_file(cmd_file)
    run = diagnose(["<pasted>"], rules, Options(command=command, redact_hosts=redact_hosts),
                   texts={"<pasted>": body})
    if not run.report.findings and fmt == "text":
        _explain_unknown(run)
    _emit(run, fmt, fail_on, quiet, color)


def _explain_unknown(run: Any) -> None:
    """No rule matched: say what was found and how to teach the tool."""
    from .redact import redact_text

    exc = ""
    facts: dict[str, Any] = {}
    if run.results:
        res = run.results[0]
        facts = {k: f.value for k, f in res.context.facts.items()}
        exc = res.context.get("exception.first") or ""
    lines = ["No rule recognises this error."]
    if exc:
        lines.append(f"  exception: {redact_text(exc)}")
    for k, v in list(facts.items())[:8]:
        lines.append(f"  {k}: {redact_text(str(v))}")
    lines.append("  To teach sglang-doctor this error, write a rule (see README 'Writing a rule') and pass it")
    lines.append("  with --rules DIR; `sglang-doctor rules show index-put-dtype-mismatch` shows a complete one.")
    click.echo("\n".join(lines), err=True)


# --- rules -------------------------------------------------------------------------


@main.group()
def rules() -> None:
    """List, show and test the rules."""


@rules.command("list")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
def rules_list(rule_dirs: tuple[str, ...]) -> None:
    """Every rule: code, severity, id and title."""
    for r in sorted(_load_rules(rule_dirs), key=lambda r: r.code):
        click.echo(f"{r.code}  {r.severity:<7}  {r.id:<44}  {r.title}")


@rules.command("show")
@click.argument("rule_id")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
def rules_show(rule_id: str, rule_dirs: tuple[str, ...]) -> None:
    """A rule's docs, match, fixes and fixtures (by id or code)."""
    from .docs import rule_markdown

    for r in _load_rules(rule_dirs):
        if rule_id in (r.id, r.code):
            click.echo(rule_markdown(r, with_output=False))
            return
    _die(f"no rule with id or code {rule_id!r} (see `sglang-doctor rules list`)")


@rules.command("test")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
@click.option("--only-user", is_flag=True, help="Test only the rules from --rules directories.")
def rules_test(rule_dirs: tuple[str, ...], only_user: bool) -> None:
    """Run every rule on its fixtures: fires-*.log must fire it, quiet-*.log must not."""
    from .fixture_test import run_fixture_tests

    all_rules = _load_rules(rule_dirs)
    failures, checked = run_fixture_tests(all_rules, rule_dirs if only_user else None)
    for f in failures:
        click.echo(f"FAIL {f}")
    click.echo(f"{checked - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


@rules.command("docs")
@click.option("--out", "out_dir", default="docs/rules", show_default=True, type=click.Path())
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if the pages are out of date; write nothing.")
def rules_docs(out_dir: str, check_only: bool) -> None:
    """Write one Markdown page per rule (docs/rules/<code>-<id>.md)."""
    from .docs import write_docs

    stale = write_docs(_load_rules(()), Path(out_dir), check_only=check_only)
    if check_only and stale:
        for s in stale:
            click.echo(f"out of date: {s}")
        sys.exit(1)
    click.echo(f"{'checked' if check_only else 'wrote'} rule pages in {out_dir}")


if __name__ == "__main__":  # pragma: no cover
    main()
