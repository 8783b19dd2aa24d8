"""The `check` command's work without click: settings, diagnosis, report, exit status.

The click declarations (cli/main.py) and the entry point's fast path for a plain
`sglang-doctor [FILES] [--format F]` (cli/argv.py) both end here, so the common command
never waits for click's import (a tenth of a run on a small log) and behaves the same
either way: one-line errors, exit 0 / 1 / 2, 130 on Ctrl-C.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NoReturn

from sglang_doctor.model import SEVERITY_RANK, fails
from sglang_doctor.policy.suppress import DEFAULT_BASELINE, BaselineError
from sglang_doctor.read.reader import InputError, display_name


def echo(msg: str) -> None:
    """One message line on stderr (a file name the terminal cannot encode escaped, not a crash)."""
    err = sys.stderr
    try:
        err.write(msg + "\n")
    except UnicodeEncodeError:
        err.write((msg + "\n").encode(err.encoding or "utf-8", "backslashreplace").decode(err.encoding or "utf-8"))
    err.flush()


def die(msg: str, code: int = 2) -> NoReturn:
    echo(f"sglang-doctor: {msg}")
    sys.exit(code)


def guarded(call: Callable[[], Any], passthrough: tuple[type[BaseException], ...] = ()) -> Any:
    """Run a command: Ctrl-C outside the analysis (loading rules, a second Ctrl-C) and a bug in the
    tool end in one line (status 130 / 2), a reader that went away quietly; `passthrough`: the
    exceptions the caller's framework handles itself (click's usage errors)."""
    try:
        return call()
    except KeyboardInterrupt:
        die("interrupted", 130)
    except BrokenPipeError:  # `rules list | head -1`: the reader went away
        quiet_broken_pipe()
    except passthrough:
        raise
    except Exception as e:
        if os.environ.get("SGLANG_DOCTOR_DEBUG"):
            raise
        die(f"internal error: {type(e).__name__}: {e} — a bug, please report it with the log "
            "(SGLANG_DOCTOR_DEBUG=1 shows the traceback)")


def run_check(files: tuple[str, ...], opts: dict[str, Any], given: set[str], follow: bool = False,
              statistics: bool = False) -> NoReturn:
    """`sglang-doctor check`: `opts` are the common options by name, `given` those set on the
    command line (a config file's value yields to them only)."""
    if follow:
        _follow(files, settings(opts, given))
    names = expand(files) if files else ["-"]
    if names == ["-"] and sys.stdin.isatty():
        echo("sglang-doctor: reading a log from standard input (pipe one in: docker logs NAME 2>&1 | "
             "sglang-doctor); end with Ctrl-D")
    st = settings(opts, given)
    if statistics:
        from sglang_doctor.report.statistics import FORMATS as STATISTICS_FORMATS

        if st.fmt not in STATISTICS_FORMATS:
            die(f"--statistics writes {' or '.join(STATISTICS_FORMATS)}, not {st.fmt}")
        st.statistics = True
    diagnose(st, names)


def run_explain(text: tuple[str, ...], opts: dict[str, Any], given: set[str]) -> NoReturn:
    """`sglang-doctor explain`: the error given as words, or pasted on standard input."""
    if text:
        body = " ".join(text)
    else:
        if sys.stdin.isatty():
            echo("Paste the traceback or error, then press Ctrl-D on an empty line (Ctrl-Z then Enter on Windows):")
        body = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if not body.strip():
        die("nothing to explain: pass the error text as arguments or paste it on standard input")
    diagnose(settings(opts, given), ["<pasted>"], texts={"<pasted>": body})


def load_rules(extra: tuple[str, ...] | list[str]) -> list[Any]:
    from sglang_doctor.engine.rules import RuleLoadError
    from sglang_doctor.engine.rules import load_rules as load

    try:
        return load(list(extra))
    except RuleLoadError as e:
        die(str(e))


def exit_code(summary: dict[str, int], fail_on: str) -> int:
    return 1 if any(n and sev in SEVERITY_RANK and fails(sev, fail_on) for sev, n in summary.items()) else 0


def read_cmd_file(path: str) -> tuple[str, str]:
    """The launch command of a script or compose file, and the lines holding it as written (a
    compose / Kubernetes file: its whole text)."""
    from sglang_doctor.launch.command import extract_command
    from sglang_doctor.launch.splice import launch_lines

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        die(f"{path}: {e.strerror or e}")
    cmd = extract_command(text, path)
    if not cmd:
        die(f"{path}: no SGLang launch command found")
    return cmd, text if path.lower().endswith((".yml", ".yaml")) else launch_lines(text, text)[0]


def quiet_broken_pipe() -> NoReturn:
    # `sglang-doctor big.log | head -1`: the reader went away; exit without a traceback.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


@dataclass
class Settings:
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


def settings(opts: dict[str, Any], given: set[str]) -> Settings:
    from sglang_doctor.policy.config import ConfigError, apply_to_rules, resolve_config

    st = Settings(**opts)
    try:
        cfg = resolve_config(st.config)
    except ConfigError as e:
        die(str(e))
    if cfg.format and "fmt" not in given:
        st.fmt = cfg.format
    if cfg.fail_on and "fail_on" not in given:
        st.fail_on = cfg.fail_on
    loaded = load_rules([*cfg.rules, *st.rule_dirs])
    try:
        st.rules, st.severity = apply_to_rules(cfg, loaded)
    except ConfigError as e:
        die(str(e))
    kept = {r.id for r in st.rules}
    st.disabled = sorted(r.id for r in loaded if r.id not in kept)
    st.known = {n for r in loaded for n in (r.id, r.code)}
    if st.fix and not st.cmd_file:
        die("--fix rewrites the file given with --cmd-file: give one")
    if st.cmd_file:
        if st.fix:
            from sglang_doctor.cli.fix_file import read_for_fix

            st.fix_file = read_for_fix(st.cmd_file)
            if isinstance(st.fix_file, str):
                die(st.fix_file)
        st.command, st.command_text = read_cmd_file(st.cmd_file)
        st.command_yaml = st.cmd_file.lower().endswith((".yml", ".yaml"))  # as extract_command reads it
    elif st.command is not None:
        from sglang_doctor.launch.command import parse_command

        if parse_command(st.command) is None:
            die(f"--cmd: no SGLang launch (python -m sglang.launch_server, sglang serve, a router) in {st.command!r}")
    return st


def suppressor(st: Settings) -> Any:
    from sglang_doctor.policy.suppress import BaselineError, Suppressor, load_baseline

    path: Path | None = None
    if st.baseline:
        path = Path(st.baseline)
    elif not st.no_baseline and Path(DEFAULT_BASELINE).is_file():
        path = Path(DEFAULT_BASELINE)
    try:
        entries = load_baseline(path) if path else []
    except BaselineError as e:
        die(str(e))
    return Suppressor(baseline=entries, baseline_path=path,
                      write_path=Path(st.write_baseline) if st.write_baseline else None, known=st.known)


def diagnose(st: Settings, names: list[str], texts: dict[str, str] | None = None,
             display_name: str | None = None) -> NoReturn:
    """Diagnose, report and exit: the one path of check, demo and explain (`texts`: the text
    pasted to explain, analysed as a log that failed)."""
    from sglang_doctor.pipeline.run import diagnose as run_pipeline

    trace = None
    if st.why:
        from sglang_doctor.pipeline.why import WhyTrace

        trace = WhyTrace()
    sup = suppressor(st)
    from sglang_doctor.cli.progress import progress_for

    bar = progress_for(st.fmt, st.quiet, st.color)  # only text on a terminal: never pipes or machine formats
    interrupt, previous = _catch_sigint()
    try:
        run = run_pipeline(names, st.rules, options(st, sup, trace=trace, interrupt=interrupt), texts=texts, progress=bar)
    except BaselineError as e:
        die(str(e))
    finally:
        if bar is not None:
            bar.close()
        if previous is not None:
            _set_sigint(previous)
    if display_name is not None and run.report.inputs:
        run.report.inputs[0].name = display_name
    baseline_notes(run, sup)
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
            echo(f"sglang-doctor: {message}")
    emit(run, st, after)


def options(st: Settings, sup: Any, **kw: Any) -> Any:
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
    from sglang_doctor.pipeline.run import Interrupt

    interrupt = Interrupt()
    try:
        previous = _set_sigint(interrupt.handler)
    except (ValueError, OSError):  # not the main thread, or no signals here (embedded interpreter)
        return None, None
    return interrupt, previous


def _set_sigint(handler: Any) -> Any:
    """signal.signal(SIGINT, handler), through the C module: `signal` wraps it in enums (~0.5 ms of a
    cold start) that a handler swap does not need."""
    try:
        import _signal as sig
    except ImportError:  # pragma: no cover - another Python implementation
        import signal as sig  # type: ignore[no-redef]
    return sig.signal(sig.SIGINT, handler)


def baseline_notes(run: Any, sup: Any) -> None:
    """What the policy stage has to say: expired baseline entries, a baseline written."""
    run.warnings.extend(sup.warnings)
    if sup.written is not None:
        echo(f"sglang-doctor: wrote {sup.written} baseline entr{'y' if sup.written == 1 else 'ies'} "
             f"to {sup.write_path}")


def emit(run: Any, st: Settings, after: list[str], compact: bool = False,
          shown_already: set[tuple[str, int]] | None = None) -> NoReturn:
    from sglang_doctor.report import write_report

    for w in run.warnings:
        echo(f"sglang-doctor: warning: {w}")
    for e in run.errors:
        echo(f"sglang-doctor: {e}")
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
        quiet_broken_pipe()
    if getattr(run, "interrupted", False):
        die("interrupted: the report covers the input read before Ctrl-C", 130)
    code = exit_code(run.report.summary, st.fail_on)
    sys.exit(2 if run.errors and code == 0 else code)


def _follow(files: tuple[str, ...], st: Settings) -> NoReturn:
    """--follow: one input; findings stream out as they happen (text and JSON, one object a line),
    then the whole report, the same as for the saved log (the other formats print only that)."""
    import json

    from sglang_doctor.model import to_json
    from sglang_doctor.pipeline.follow import follow

    if len(files) > 1:
        die("--follow takes one file (or stdin)")
    if st.fix:
        die("--fix rewrites the --cmd-file after a finished log, not with --follow")
    source = files[0] if files else "-"
    streamed: set[tuple[str, int]] = set()
    sup = suppressor(st)

    def stream(finding: Any) -> None:  # already redacted by the pipeline
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
            quiet_broken_pipe()
        streamed.add((finding.rule, finding.evidence[0].line if finding.evidence else 0))

    try:
        run = follow(source, st.rules, stream, options(st, sup), stop=_stop_on_sigterm())
    except InputError as e:
        die(str(e))
    except BaselineError as e:
        die(str(e))
    baseline_notes(run, sup)
    emit(run, st, [], compact=True, shown_already=streamed)  # (text: the streamed blocks not again)


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


def expand(files: tuple[str, ...]) -> list[str]:
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

