"""Command line: `sglang-doctor [FILES]`, `sglang-doctor explain`, `sglang-doctor rules …`.

Exit status for every format: 0 no finding at or above --fail-on, 1 findings at or above
it, 2 usage, input or rule-file error (always a one-line message, never a traceback).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import click

from sglang_doctor import __version__
from sglang_doctor.read.reader import InputError, display_name
from sglang_doctor.model import FAIL_ON, FORMATS, SEVERITY_RANK, fails
from sglang_doctor.policy.suppress import DEFAULT_BASELINE



def _die(msg: str, code: int = 2) -> NoReturn:
    click.echo(f"sglang-doctor: {msg}", err=True)
    sys.exit(code)


class _DefaultToCheck(click.Group):
    """`sglang-doctor x.log` means `sglang-doctor check x.log`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # While completing (resilient parsing) an empty command line offers the subcommands.
        if (not args and not ctx.resilient_parsing) or (
                args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        # Ctrl-C outside the analysis (loading rules, a second Ctrl-C): one line, status 130.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _die("interrupted", 130)
        except BrokenPipeError:  # `rules list | head -1`: the reader went away
            _quiet_broken_pipe()
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as e:  # a bug in the tool: one line, the traceback on request
            if os.environ.get("SGLANG_DOCTOR_DEBUG"):
                raise
            _die(f"internal error: {type(e).__name__}: {e} — a bug, please report it with the log "
                 "(SGLANG_DOCTOR_DEBUG=1 shows the traceback)")


def _load_rules(extra: tuple[str, ...] | list[str]) -> list[Any]:
    from sglang_doctor.engine.rules import RuleLoadError, load_rules

    try:
        return load_rules(list(extra))
    except RuleLoadError as e:
        _die(str(e))


def _exit_code(summary: dict[str, int], fail_on: str) -> int:
    return 1 if any(n and sev in SEVERITY_RANK and fails(sev, fail_on) for sev, n in summary.items()) else 0


def _read_cmd_file(path: str) -> str:
    from sglang_doctor.launch.command import extract_command

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        _die(f"{path}: {e.strerror or e}")
    cmd = extract_command(text, path)
    if not cmd:
        _die(f"{path}: no SGLang launch command found")
    return cmd


def _quiet_broken_pipe() -> NoReturn:
    # `sglang-doctor big.log | head -1`: the reader went away; exit without a traceback.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


_common = [
    click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="text", show_default=True,
                 help="Output format."),
    click.option("--fail-on", type=click.Choice(list(FAIL_ON)), default="error",
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
    click.option("--config", "config", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                 help="Read settings from FILE (default: the nearest .sglang-doctor.yaml or pyproject.toml "
                      "[tool.sglang-doctor] from the current directory up)."),
    click.option("--baseline", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                 help=f"Hide the findings listed in FILE (default: {DEFAULT_BASELINE} in the current "
                      "directory, when it exists)."),
    click.option("--no-baseline", is_flag=True, help=f"Do not read {DEFAULT_BASELINE} from the current directory."),
    click.option("--write-baseline", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                 help="Write the current findings to FILE as a baseline (keeps reasons and expiry dates "
                      "already there), then report with it applied."),
    click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
                 help="Analyse up to N files at once in worker processes (default: one per idle core when "
                      "several files add up to 512 MB or more; 1: one at a time)."),
    click.option("--why", is_flag=True,
                 help="Explain every rule on every input: prefilter, matches, conditions (stderr, or "
                      "stdout after a text report)."),
]


def common_options(fn: Any) -> Any:
    for opt in reversed(_common):
        fn = opt(fn)
    return fn


@dataclass
class _Settings:
    """The command line merged with the config file (the command line wins)."""

    fmt: str
    fail_on: str
    rule_dirs: tuple[str, ...]
    command: str | None
    cmd_file: str | None
    redact_hosts: bool
    quiet: bool
    color: bool | None
    config: str | None
    baseline: str | None
    no_baseline: bool
    write_baseline: str | None
    why: bool
    jobs: int | None = None
    command_yaml: bool = False  # --cmd-file was a compose / Kubernetes file
    rules: list[Any] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    severity: dict[str, str] = field(default_factory=dict)  # rule id -> the project's severity
    known: set[str] = field(default_factory=set)  # every loaded rule's id and code, disabled ones too
    statistics: bool = False  # check --statistics: counts instead of findings


def _settings(opts: dict[str, Any]) -> _Settings:
    from click.core import ParameterSource

    from sglang_doctor.policy.config import ConfigError, apply_to_rules, resolve_config

    st = _Settings(**opts)
    ctx = click.get_current_context()
    try:
        cfg = resolve_config(st.config)
    except ConfigError as e:
        _die(str(e))
    if cfg.format and ctx.get_parameter_source("fmt") is ParameterSource.DEFAULT:
        st.fmt = cfg.format
    if cfg.fail_on and ctx.get_parameter_source("fail_on") is ParameterSource.DEFAULT:
        st.fail_on = cfg.fail_on
    loaded = _load_rules([*cfg.rules, *st.rule_dirs])
    try:
        st.rules, st.severity = apply_to_rules(cfg, loaded)
    except ConfigError as e:
        _die(str(e))
    kept = {r.id for r in st.rules}
    st.disabled = sorted(r.id for r in loaded if r.id not in kept)
    st.known = {n for r in loaded for n in (r.id, r.code)}
    if st.cmd_file:
        st.command = _read_cmd_file(st.cmd_file)
        st.command_yaml = st.cmd_file.lower().endswith((".yml", ".yaml"))  # as extract_command reads it
    return st


def _suppressor(st: _Settings) -> Any:
    from sglang_doctor.policy.suppress import BaselineError, Suppressor, load_baseline

    path: Path | None = None
    if st.baseline:
        path = Path(st.baseline)
    elif not st.no_baseline and Path(DEFAULT_BASELINE).is_file():
        path = Path(DEFAULT_BASELINE)
    try:
        entries = load_baseline(path) if path else []
    except BaselineError as e:
        _die(str(e))
    return Suppressor(baseline=entries, baseline_path=path,
                      write_path=Path(st.write_baseline) if st.write_baseline else None, known=st.known)


def _diagnose(st: _Settings, names: list[str], texts: dict[str, str] | None = None,
              display_name: str | None = None) -> NoReturn:
    """Diagnose, suppress, report and exit: the one path of check, demo and explain."""
    from sglang_doctor.policy.config import apply_severity
    from sglang_doctor.pipeline.run import Options, diagnose
    trace = None
    if st.why:
        from sglang_doctor.pipeline.why import WhyTrace

        trace = WhyTrace()
    sup = _suppressor(st)
    from sglang_doctor.cli.progress import progress_for

    bar = progress_for(st.fmt, st.quiet, st.color)  # only text on a terminal: never pipes or machine formats
    interrupt, previous = _catch_sigint()
    try:
        run = diagnose(names, st.rules, Options(command=st.command, command_yaml=st.command_yaml,
                                                redact_hosts=st.redact_hosts, trace=trace,
                                                interrupt=interrupt, jobs=st.jobs), texts=texts, progress=bar)
    finally:
        if bar is not None:
            bar.close()
        if previous is not None:
            import signal

            signal.signal(signal.SIGINT, previous)
    if display_name is not None and run.report.inputs:
        run.report.inputs[0].name = display_name
    apply_severity(st.severity, run.report)
    if texts:  # explain: its own answer to an error no rule knows (below) says more than a last resort
        last = {r.id for r in st.rules if r.last_resort}
        run.report.findings = [f for f in run.report.findings if f.rule not in last]
        run.report.count()
    _suppress(run, sup, st, names)
    if texts and not run.report.findings and not run.report.suppressed and st.fmt == "text":
        _explain_unknown(run, st.redact_hosts)
    after: list[str] = []
    if trace is not None:
        from sglang_doctor.pipeline.why import explain

        after = explain(trace, st.rules, run.report, run.results, sup.suppressed, st.disabled, st.redact_hosts)
    _emit(run, st, after)


def _catch_sigint() -> tuple[Any, Any]:
    """A first Ctrl-C ends the analysis early and still reports (exit 130); see doctor.Interrupt."""
    import signal
    import threading

    from sglang_doctor.pipeline.run import Interrupt

    if threading.current_thread() is not threading.main_thread():
        return None, None
    interrupt = Interrupt()
    try:
        previous = signal.signal(signal.SIGINT, interrupt.handler)
    except (ValueError, OSError):  # no signals here (embedded interpreter)
        return None, None
    return interrupt, previous


def _suppress(run: Any, sup: Any, st: _Settings, paths: list[str]) -> None:
    """Apply the baseline and inline ignores to the finished report (the one place they apply)."""
    from sglang_doctor.policy.redact import redact_text
    from sglang_doctor.policy.suppress import BaselineError

    before = len(run.report.findings)
    try:
        sup.apply(run.report, paths)
    except BaselineError as e:
        _die(str(e))
    run.warnings.extend(sup.warnings)
    if sup.written is not None:
        click.echo(f"sglang-doctor: wrote {sup.written} baseline entr{'y' if sup.written == 1 else 'ies'} "
                   f"to {sup.write_path}", err=True)
    if len(run.report.findings) != before and run.report.corrected_command:
        from sglang_doctor.pipeline.run import corrected_command

        command = st.command or next((r.context.command for r in run.results if r.context.command), None)
        primary = run.results[0].context if run.results else None
        fixed = corrected_command(command, run.report.findings, primary,
                                  env_wrapper=st.command_yaml and command == st.command)
        run.report.corrected_command = redact_text(fixed, hosts=st.redact_hosts) if fixed else None


def _emit(run: Any, st: _Settings, after: list[str]) -> NoReturn:
    from sglang_doctor.report import write_report

    for w in run.warnings:
        click.echo(f"sglang-doctor: warning: {w}", err=True)
    for e in run.errors:
        click.echo(f"sglang-doctor: {e}", err=True)
    try:
        if st.statistics:
            from sglang_doctor.report import statistics

            statistics.write(run.report, sys.stdout, st.fmt)
        else:
            write_report(run.report, st.fmt, sys.stdout, quiet=st.quiet, color=st.color, fail_on=st.fail_on,
                         rules=st.rules)
        if after:
            if st.fmt == "text":
                sys.stdout.write("\n" + "\n".join(after) + "\n")
            else:
                sys.stderr.write("\n".join(after) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()
    if getattr(run, "interrupted", False):
        _die("interrupted: the report covers the input read before Ctrl-C", 130)
    code = _exit_code(run.report.summary, st.fail_on)
    sys.exit(2 if run.errors and code == 0 else code)


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
@click.argument("files", nargs=-1, type=click.Path(readable=False))  # the reader names unreadable files; the rest still run
@click.option("-f", "--follow", is_flag=True,
              help="Follow a growing file or a live pipe; print findings as they happen (JSON: one line each).")
@click.option("--statistics", is_flag=True,
              help="Instead of the findings: how many each rule gave and what each input holds (text or json).")
@common_options
def check(files: tuple[str, ...], follow: bool = False, statistics: bool = False, **opts: Any) -> None:
    """Read logs (files, directories of *.log, or stdin) and report what went wrong."""
    if follow:
        _follow(files, _settings(opts))
    names = _expand(files) if files else ["-"]
    if names == ["-"] and sys.stdin.isatty():
        click.echo("sglang-doctor: reading a log from standard input (pipe one in: docker logs NAME 2>&1 | "
                   "sglang-doctor); end with Ctrl-D", err=True)
    st = _settings(opts)
    if statistics:
        from sglang_doctor.report.statistics import FORMATS as STATISTICS_FORMATS

        if st.fmt not in STATISTICS_FORMATS:
            _die(f"--statistics writes {' or '.join(STATISTICS_FORMATS)}, not {st.fmt}")
        st.statistics = True
    _diagnose(st, names)


def _follow(files: tuple[str, ...], st: _Settings) -> NoReturn:
    """--follow: one input; findings stream out as they happen, the summary at the end."""
    import json

    from dataclasses import asdict

    from sglang_doctor.pipeline.follow import follow
    from sglang_doctor.model import Finding, from_json, to_json
    from sglang_doctor.policy.redact import redact

    if len(files) > 1:
        _die("--follow takes one file (or stdin)")
    source = files[0] if files else "-"
    printed: list[Any] = []

    def emit(finding: Any) -> None:
        data = redact(to_json(finding), hosts=st.redact_hosts)
        try:
            if st.fmt == "json":
                sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
            else:
                from sglang_doctor.report.text import write_finding

                write_finding(from_json(Finding, data), sys.stdout, [display_name(source)], color=st.color)
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_broken_pipe()
        printed.append(finding)

    try:
        report = follow(source, st.rules, emit, st.command, stop=_stop_on_sigterm())
    except InputError as e:
        _die(str(e))
    s = report.summary
    if st.fmt == "json":
        sys.stdout.write(json.dumps({"summary": s, "inputs": [asdict(i) for i in report.inputs]}) + "\n")
    else:
        from sglang_doctor.report.common import summary_line

        click.echo(summary_line(report) if report.findings else "✓ no known problem found")
    sys.exit(_exit_code(s, st.fail_on))


def _stop_on_sigterm() -> Any:
    """An event SIGTERM sets (`kubectl delete`, `systemctl stop`): --follow ends as at the end of its
    stream, with the summary and the findings' exit status."""
    import signal
    import threading

    stop = threading.Event()
    try:
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    except (ValueError, OSError):  # not the main thread, or no signals here
        pass
    return stop


def _expand(files: tuple[str, ...]) -> list[str]:
    """Inputs: directories walked for logs; a file named twice (or also found in a directory) once."""
    out: list[str] = []
    seen: set[str] = set()

    def add(name: str) -> None:
        key = name if name == "-" else os.path.realpath(name)
        if key not in seen:
            seen.add(key)
            out.append(name)

    for f in files:
        p = Path(f)
        if f != "-" and p.is_dir():
            found = sorted(x for x in p.rglob("*") if x.is_file() and (x.name.endswith(".log") or x.name.endswith(".log.gz")))
            # A directory without logs stays an input: the reader reports it (exit status 2).
            for x in found or [f]:
                add(str(x))
        else:
            add(f)
    return out


def demo_logs() -> list[Path]:
    return sorted((Path(__file__).parent.parent / "fixtures" / "demo").glob("*.log"))


@main.command()
@click.argument("name", required=False)
@common_options
def demo(name: str | None, **opts: Any) -> None:
    """Diagnose a bundled example log (the Qwen3.6 dtype crash unless NAME picks another).

    Exits 0 whatever it finds, unless --fail-on is given."""
    logs = demo_logs()
    pick = [p for p in logs if name and name in p.name] if name else [p for p in logs if "dtype" in p.name]
    if not pick:
        _die(f"no demo log matches {name!r}; bundled: {', '.join(p.name for p in logs)}")
    st = _settings(opts)
    from click.core import ParameterSource

    if click.get_current_context().get_parameter_source("fail_on") is not ParameterSource.COMMANDLINE:
        st.fail_on = "never"  # a demo of a crash is no failure of the user's first command; --fail-on asks for one
    if st.fmt == "text":
        click.echo(f"Diagnosing the bundled example {pick[0].name}:\n", err=True)
    _diagnose(st, [str(pick[0])], display_name=pick[0].name)


@main.command()
@click.argument("text", nargs=-1)
@common_options
def explain(text: tuple[str, ...], **opts: Any) -> None:
    """Explain a pasted traceback (stdin) or an error message given as arguments."""
    if text:
        body = " ".join(text)
    else:
        if sys.stdin.isatty():
            click.echo("Paste the traceback or error, then press Ctrl-D on an empty line "
                       "(Ctrl-Z then Enter on Windows):", err=True)
        body = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if not body.strip():
        _die("nothing to explain: pass the error text as arguments or paste it on standard input")
    _diagnose(_settings(opts), ["<pasted>"], texts={"<pasted>": body})


def _explain_unknown(run: Any, hosts: bool = False) -> None:
    """No rule matched: say what was found and how to teach the tool."""
    from sglang_doctor.policy.redact import redact_text

    exc = ""
    facts: dict[str, Any] = {}
    if run.results:
        res = run.results[0]
        facts = {k: f.value for k, f in res.context.facts.items()}
        exc = res.context.get("exception.first") or ""
    lines = ["No rule recognises this error."]
    if exc:
        lines.append(f"  exception: {redact_text(exc, hosts)}")
    for k, v in list(facts.items())[:8]:
        lines.append("  " + redact_text(f"{k}: {v}", hosts))  # (with its name: a secret-named fact is masked)
    lines.append("  To teach sglang-doctor this error, write a rule (see README 'Writing a rule') and pass it")
    lines.append("  with --rules DIR; `sglang-doctor rules show index-put-dtype-mismatch --yaml` prints a complete one.")
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
@click.option("--yaml", "show_yaml", is_flag=True, help="Print the rule's YAML file (a complete rule to start from).")
@click.option("--fixtures", "show_fixtures", is_flag=True, help="Print the rule's fixture logs (fires-*, quiet-*).")
def rules_show(rule_id: str, rule_dirs: tuple[str, ...], show_yaml: bool, show_fixtures: bool) -> None:
    """A rule's docs page: what, why, fixes, messages (by id or code); --yaml, --fixtures: its files."""
    from sglang_doctor.ruledev.docs import rule_files, rule_markdown

    for r in _load_rules(rule_dirs):
        if rule_id in (r.id, r.code):
            click.echo(rule_files(r, show_yaml, show_fixtures) if show_yaml or show_fixtures else rule_markdown(r))
            return
    _die(f"no rule with id or code {rule_id!r} (see `sglang-doctor rules list`)")


@rules.command("test")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
@click.option("--only-user", is_flag=True, help="Test only the rules from --rules directories.")
def rules_test(rule_dirs: tuple[str, ...], only_user: bool) -> None:
    """Run every rule on its fixtures: fires-*.log must fire it, quiet-*.log must not."""
    from sglang_doctor.ruledev.fixture_test import run_fixture_tests

    all_rules = _load_rules(rule_dirs)
    failures, checked = run_fixture_tests(all_rules, rule_dirs if only_user else None)
    for f in failures:
        click.echo(f"FAIL {f}")
    click.echo(f"{checked - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


@rules.command("lint")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
@click.option("--only-user", is_flag=True, help="Lint only the rules from --rules directories.")
@click.option("--strict", is_flag=True, help="Also report named groups the rule never uses (captures kept "
                                             "only as report data).")
def rules_lint(rule_dirs: tuple[str, ...], only_user: bool, strict: bool) -> None:
    """Find rule problems ahead of time: backtracking regexes, patterns without a literal,
    unknown names, flags missing from the rule's releases. Exit 1 on any."""
    from sglang_doctor.ruledev.lint import lint_rules

    picked = _load_rules(rule_dirs)
    if only_user:
        roots = [Path(d).resolve() for d in rule_dirs]
        picked = [r for r in picked if r.path and any(Path(r.path).resolve().is_relative_to(d) for d in roots)]
    problems = lint_rules(picked, strict=strict)
    for p in problems:
        click.echo(str(p))
    click.echo(f"sglang-doctor: {len(picked)} rules linted, {len(problems)} problem(s)", err=True)
    sys.exit(1 if problems else 0)


@rules.command("docs")
@click.option("--out", "out_dir", default="docs/rules", show_default=True, type=click.Path())
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if the pages are out of date; write nothing.")
def rules_docs(out_dir: str, check_only: bool) -> None:
    """Write one Markdown page per rule (docs/rules/<code>-<id>.md)."""
    from sglang_doctor.ruledev.docs import write_docs

    stale = write_docs(_load_rules(()), Path(out_dir), check_only=check_only)
    if check_only and stale:
        for s in stale:
            click.echo(f"out of date: {s}")
        sys.exit(1)
    click.echo(f"{'checked' if check_only else 'wrote'} rule pages in {out_dir}")


if __name__ == "__main__":  # pragma: no cover
    main()
