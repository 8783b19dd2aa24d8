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
from sglang_doctor.policy.suppress import DEFAULT_BASELINE, BaselineError



def _die(msg: str, code: int = 2) -> NoReturn:
    click.echo(f"sglang-doctor: {msg}", err=True)
    sys.exit(code)


class _DefaultToCheck(click.Group):
    """`sglang-doctor x.log` means `sglang-doctor check x.log`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # While completing (resilient parsing) an empty command line offers the subcommands.
        if (not args and not ctx.resilient_parsing) or (
                args and args[0] not in self.list_commands(ctx) and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    # Commands whose module (and click options) load only when they run: `check`'s cold start stays as is.
    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name == "preflight":
            from sglang_doctor.cli.preflight import preflight

            return preflight
        return super().get_command(ctx, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*self.commands, "preflight"])

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


def _read_cmd_file(path: str) -> tuple[str, str]:
    """The launch command of a script or compose file, and the lines holding it as written (a
    compose / Kubernetes file: its whole text)."""
    from sglang_doctor.launch.command import extract_command
    from sglang_doctor.launch.splice import launch_lines

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        _die(f"{path}: {e.strerror or e}")
    cmd = extract_command(text, path)
    if not cmd:
        _die(f"{path}: no SGLang launch command found")
    return cmd, text if path.lower().endswith((".yml", ".yaml")) else launch_lines(text, text)[0]


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
    click.option("--model-dir", default=None, type=click.Path(), metavar="DIR",
                 help="The model's directory (its config.json): fix values such as a --tp-size that splits its heads. "
                      "Default: the launch's model path on disk or in the Hugging Face cache."),
    click.option("--diff", is_flag=True, help="Also show the corrected command as a unified diff of the given one."),
    click.option("--fix", "fix", is_flag=True,
                 help="Rewrite the --cmd-file in place to run the corrected command (only one that carries the root "
                      "cause's fix), the original kept as FILE.bak; prints the change as a diff, secrets masked."),
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
    command_text: str | None = None  # --cmd-file: the lines holding the launch as written (YAML: the file)
    diff: bool = False  # --diff: the corrected command as a unified diff too
    fix: bool = False  # --fix: rewrite the --cmd-file to run the corrected command
    fix_file: Any = None  # --fix: the file as read (cli/fix_file.FileText)
    model_dir: str | None = None  # --model-dir: the model's config.json for fix values
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
    if st.fix and not st.cmd_file:
        _die("--fix rewrites the file given with --cmd-file: give one")
    if st.cmd_file:
        if st.fix:
            from sglang_doctor.cli.fix_file import read_for_fix

            st.fix_file = read_for_fix(st.cmd_file)
            if isinstance(st.fix_file, str):
                _die(st.fix_file)
        st.command, st.command_text = _read_cmd_file(st.cmd_file)
        st.command_yaml = st.cmd_file.lower().endswith((".yml", ".yaml"))  # as extract_command reads it
    elif st.command is not None:
        from sglang_doctor.launch.command import parse_command

        if parse_command(st.command) is None:
            _die(f"--cmd: no SGLang launch (python -m sglang.launch_server, sglang serve, a router) in {st.command!r}")
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
    """Diagnose, report and exit: the one path of check, demo and explain (`texts`: the text
    pasted to explain, analysed as a log that failed)."""
    from sglang_doctor.pipeline.run import diagnose
    trace = None
    if st.why:
        from sglang_doctor.pipeline.why import WhyTrace

        trace = WhyTrace()
    sup = _suppressor(st)
    from sglang_doctor.cli.progress import progress_for

    bar = progress_for(st.fmt, st.quiet, st.color)  # only text on a terminal: never pipes or machine formats
    interrupt, previous = _catch_sigint()
    try:
        run = diagnose(names, st.rules, _options(st, sup, trace=trace, interrupt=interrupt), texts=texts, progress=bar)
    except BaselineError as e:
        _die(str(e))
    finally:
        if bar is not None:
            bar.close()
        if previous is not None:
            import signal

            signal.signal(signal.SIGINT, previous)
    if display_name is not None and run.report.inputs:
        run.report.inputs[0].name = display_name
    _baseline_notes(run, sup)
    after: list[str] = []
    if trace is not None:
        from sglang_doctor.pipeline.why import explain

        after = explain(trace, st.rules, run.report, run.results, sup.suppressed, st.disabled, st.redact_hosts)
    if st.diff or st.fix:
        from sglang_doctor.report.diff import command_diffs

        after = command_diffs(run.report) + after
    if st.fix:
        from sglang_doctor.cli.fix_file import outcome

        message, failed = outcome(run, st.cmd_file or "", st.fix_file)
        if failed:  # (printed with the run's errors; the exit status is not 0)
            run.errors.append(message)
        else:
            click.echo(f"sglang-doctor: {message}", err=True)
    _emit(run, st, after)


def _options(st: _Settings, sup: Any, **kw: Any) -> Any:
    """The run's options from the settings: the command, the policy (severities, suppressions)."""
    from sglang_doctor.pipeline.run import Options

    yaml_text = st.command_text if st.command_yaml else None  # (the file, not a launch's lines)
    return Options(command=st.command, command_text=None if st.command_yaml else st.command_text,
                   command_yaml=st.command_yaml, command_yaml_text=yaml_text,
                   redact_hosts=st.redact_hosts,
                   jobs=st.jobs, command_source="cmd-file" if st.cmd_file else "cmd",
                   model_dir=st.model_dir, find_model=True,
                   rewrite=(st.cmd_file, st.fix_file.text) if st.fix and st.cmd_file and st.fix_file else None,
                   severity=st.severity, suppressor=sup, **kw)


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


def _baseline_notes(run: Any, sup: Any) -> None:
    """What the policy stage has to say: expired baseline entries, a baseline written."""
    run.warnings.extend(sup.warnings)
    if sup.written is not None:
        click.echo(f"sglang-doctor: wrote {sup.written} baseline entr{'y' if sup.written == 1 else 'ies'} "
                   f"to {sup.write_path}", err=True)


def _emit(run: Any, st: _Settings, after: list[str], compact: bool = False,
          shown_already: set[tuple[str, int]] | None = None) -> NoReturn:
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
                         rules=st.rules, compact=compact, shown_already=shown_already or set())
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
    """--follow: one input; findings stream out as they happen (text and JSON, one object a line),
    then the whole report, the same as for the saved log (the other formats print only that)."""
    import json

    from sglang_doctor.model import to_json
    from sglang_doctor.pipeline.follow import follow

    if len(files) > 1:
        _die("--follow takes one file (or stdin)")
    if st.fix:
        _die("--fix rewrites the --cmd-file after a finished log, not with --follow")
    source = files[0] if files else "-"
    streamed: set[tuple[str, int]] = set()
    sup = _suppressor(st)

    def emit(finding: Any) -> None:  # already redacted by the pipeline
        if st.fmt not in ("text", "json"):
            return
        try:
            if st.fmt == "json":
                sys.stdout.write(json.dumps(to_json(finding), ensure_ascii=False) + "\n")
            else:
                from sglang_doctor.report.text import write_finding

                write_finding(finding, sys.stdout, [display_name(source)], color=st.color)
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_broken_pipe()
        streamed.add((finding.rule, finding.evidence[0].line if finding.evidence else 0))

    try:
        run = follow(source, st.rules, emit, _options(st, sup), stop=_stop_on_sigterm())
    except InputError as e:
        _die(str(e))
    except BaselineError as e:
        _die(str(e))
    _baseline_notes(run, sup)
    _emit(run, st, [], compact=True, shown_already=streamed)  # (text: the streamed blocks not again)


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
            from sglang_doctor.read.reader import log_files

            found = log_files(p)
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
    """Explain a pasted traceback (stdin) or an error message given as arguments.

    \b
      sglang-doctor explain "CUDA out of memory."
      docker logs sgl 2>&1 | tail -60 | sglang-doctor explain
    """
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
@click.option("--update", is_flag=True, help="Rewrite each fires fixture's snapshot (<fixture>.snap.yaml) "
                                             "from what the rule says now; review the diff.")
def rules_test(rule_dirs: tuple[str, ...], only_user: bool, update: bool) -> None:
    """Run every rule on its fixtures: fires-*.log must fire it, quiet-*.log must not, and each
    fires fixture's finding must equal its snapshot."""
    from sglang_doctor.ruledev.fixture_test import run_fixture_tests

    all_rules = _load_rules(rule_dirs)
    res = run_fixture_tests(all_rules, rule_dirs if only_user else None, update=update)
    for f in res.failures:
        click.echo(f"FAIL {f}")
    for p in res.updated:
        click.echo(f"{'updated' if p.is_file() else 'removed'} {p}")
    click.echo(f"{res.checked - len(res.failures)} passed, {len(res.failures)} failed"
               + (f", {len(res.updated)} snapshot(s) written" if update else ""))
    sys.exit(1 if res.failures else 0)


@rules.command("lint")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
@click.option("--only-user", is_flag=True, help="Lint only the rules from --rules directories.")
@click.option("--strict", is_flag=True, help="Also report named groups the rule never uses (captures kept "
                                             "only as report data).")
@click.option("--catalog/--no-catalog", default=True, show_default=True,
              help="Check that rules citing SGLang sources match a message of SGLang's catalog (typos in message "
                   "text, wrong release ranges); --no-catalog skips it.")
def rules_lint(rule_dirs: tuple[str, ...], only_user: bool, strict: bool, catalog: bool) -> None:
    """Find rule problems ahead of time: backtracking regexes, patterns without a literal,
    unknown names, flags missing from the rule's releases. Exit 1 on any."""
    from sglang_doctor.ruledev.catalog_lint import catalog_installed
    from sglang_doctor.ruledev.lint import lint_rules

    picked = _load_rules(rule_dirs)
    if only_user:
        roots = [Path(d).resolve() for d in rule_dirs]
        picked = [r for r in picked if r.path and any(Path(r.path).resolve().is_relative_to(d) for d in roots)]
    if catalog and not catalog_installed():
        click.echo("sglang-doctor: the message catalog is not installed; linted without it (--no-catalog)", err=True)
        catalog = False
    problems = lint_rules(picked, strict=strict, catalog=catalog)
    for p in problems:
        click.echo(str(p))
    click.echo(f"sglang-doctor: {len(picked)} rules linted, {len(problems)} problem(s)", err=True)
    sys.exit(1 if problems else 0)


@rules.command("docs")
@click.option("--out", "out_dir", default="docs/rules", show_default=True, type=click.Path())
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if the pages are out of date; write nothing.")
def rules_docs(out_dir: str, check_only: bool) -> None:
    """Write one Markdown page per rule (docs/rules/<code>-<id>.md)."""
    from sglang_doctor.ruledev.docs import write_docs, write_facts_table

    stale = write_docs(_load_rules(()), Path(out_dir), check_only=check_only)
    guide = Path(out_dir).parent / "writing-rules.md"  # its facts table comes from the fact vocabulary
    if write_facts_table(guide, check_only=check_only):
        stale.append(str(guide))
    if check_only and stale:
        for s in stale:
            click.echo(f"out of date: {s}")
        sys.exit(1)
    click.echo(f"{'checked' if check_only else 'wrote'} rule pages in {out_dir}")


if __name__ == "__main__":  # pragma: no cover
    main()
