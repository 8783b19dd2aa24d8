"""One run: inputs through the pipeline into a Report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import io

from sglang_doctor.engine.prefilter import ScannerCache
from sglang_doctor.engine.analyze import InputResult, Matcher, analyze_chunks
from sglang_doctor.model import Finding, FixOut, InputInfo, Report, from_json
from sglang_doctor.read.reader import InputError, display_name, iter_chunks, open_input
from sglang_doctor.facts.input_notes import input_warnings, is_empty
from sglang_doctor.policy.redact import redact
from sglang_doctor.engine.rules import Rule


@dataclass
class Options:
    """How a run reads its inputs (the command line and config, resolved)."""

    command: str | None = None  # the launch command, when the user gave it
    command_yaml: bool = False  # it came from a compose / Kubernetes file: no shell reads its prefixes
    redact_hosts: bool = False
    fast: bool = True  # stage-one scanner for long logs (False: every line the slow way)
    trace: Any = None  # --why: observer of the matcher, told of each input (see why.py)
    interrupt: Any = None  # an Interrupt: Ctrl-C ends the run early with what was read so far
    jobs: int | None = None  # worker processes for several files (None: decided by parallel.auto_jobs)


@dataclass
class Run:
    """A finished run: the report, plus what the CLI needs beside it."""

    report: Report
    errors: list[str] = field(default_factory=list)  # inputs that could not be read
    warnings: list[str] = field(default_factory=list)
    results: list[InputResult] = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C: the report covers the input read before it


class Interrupt:
    """Ctrl-C during a run: stop reading at the next block and report what was read.

    `handler` is the SIGINT handler (installed by the CLI). While a read blocks (a quiet
    pipe) it raises KeyboardInterrupt there, which ends that input; otherwise it only sets
    `requested`, and the analysis finishes the block it is on. A second Ctrl-C raises.
    """

    def __init__(self) -> None:
        self.requested = False
        self.reading = False

    def handler(self, signum: int, frame: Any) -> None:
        if self.requested or self.reading:
            self.requested = True
            raise KeyboardInterrupt
        self.requested = True

    def wrap(self, chunks: Any) -> Any:
        it = iter(chunks)
        while not self.requested:
            self.reading = True
            try:
                item = next(it)
            except StopIteration:
                return
            except KeyboardInterrupt:
                self.requested = True
                return
            finally:
                self.reading = False
            yield item


def diagnose(names: list[str], rules: list[Rule], options: Options | None = None,
             texts: dict[str, str] | None = None, progress: Any = None) -> Run:
    """Analyze each input (a path, '-' for stdin, or a name whose text is in `texts`).

    `progress` (see progress.py) is told of each input read from a file or stdin.
    """
    options = options or Options()
    run = Run(Report())
    for index, result, error in _outcomes(names, rules, options, texts, progress):
        name = names[index]
        info = InputInfo(name=display_name(name))
        run.report.inputs.append(info)
        if result is None:
            info.error = error
            run.errors.append(error if name in str(error) or info.name in str(error) else f"{name}: {error}")
            continue
        info.lines, info.bytes = result.lines, result.bytes
        run.results.append(result)
        run.report.findings.extend(result.findings)
        run.warnings.extend(w for w in result.warnings if w not in run.warnings)
        if options.interrupt is not None and options.interrupt.requested:
            break
    run.interrupted = options.interrupt is not None and options.interrupt.requested
    if len(run.results) > 1:  # logs of one deployment: root cause and consequences across them
        from sglang_doctor.engine.attribution import attribute

        run.report.findings = attribute(run.report.findings, rules, [i.name for i in run.report.inputs])
    _fill_context(run, options)
    run.report.count()
    data = redact(run.report.to_json_dict(), hosts=options.redact_hosts)
    run.report = from_json(Report, data)
    return run


def _outcomes(names: list[str], rules: list[Rule], options: Options, texts: dict[str, str] | None,
              progress: Any) -> Iterator[tuple[int, InputResult | None, str | None]]:
    """(input index, result or None, read error) for each input, in input order."""
    jobs = 1
    if len(names) > 1 and not texts and options.trace is None and progress is None:
        from sglang_doctor.pipeline.parallel import auto_jobs

        jobs = options.jobs if options.jobs is not None else auto_jobs(names)
    if jobs > 1 and "-" not in names:
        from concurrent.futures.process import BrokenProcessPool

        from sglang_doctor.pipeline.parallel import analyze_files

        done = 0
        try:
            for outcome in analyze_files(names, rules, jobs, options.fast, options.command, options.interrupt):
                done += 1
                yield outcome
            return
        except (BrokenProcessPool, OSError):  # no worker processes here: go on in this one
            names_left = list(enumerate(names))[done:]
    else:
        names_left = list(enumerate(names))
    matcher = Matcher(rules)
    matcher.trace = options.trace
    scanner = ScannerCache(rules, options.fast)
    for index, name in names_left:
        if options.trace is not None:
            options.trace.start(index, display_name(name))
        try:
            if texts and name in texts:
                stream: Any = io.BytesIO(texts[name].encode("utf-8", errors="replace"))
            else:
                stream = open_input(name)
            try:
                tick = progress.start(display_name(name), stream) if progress is not None and not texts else None
                chunks = iter_chunks(stream) if options.interrupt is None else options.interrupt.wrap(iter_chunks(stream))
                result = analyze_chunks(chunks, matcher, index, scanner, options.command, tick,
                                        pasted=bool(texts and name in texts))
                result.warnings.extend(input_warnings(name, stream, result))
            finally:
                if name != "-":
                    stream.close()
        except InputError as e:
            yield index, None, str(e)
            continue
        if is_empty(result):
            yield index, None, f"{display_name(name)}: empty input (no log lines to diagnose)"
            continue
        yield index, result, None
        if options.interrupt is not None and options.interrupt.requested:
            return


def _fill_context(run: Run, options: Options) -> None:
    if not run.results:
        return
    primary = run.results[0].context
    ctx: dict[str, Any] = {}
    for res in reversed(run.results):
        ctx.update(res.context.to_json())
    version = primary.get("sglang.version")
    if version:
        ctx["sglang_version"] = version
    command = options.command or next((r.context.command for r in run.results if r.context.command), None)
    if command is None and primary.server_args:
        from sglang_doctor.fix.rebuild import rebuild_command
        from sglang_doctor.registry.spelling import releases_of

        rels = releases_of(version)
        command = rebuild_command(primary.server_args, rels[-1] if rels else None)
        if command:
            ctx["command_source"] = "rebuilt from the server_args line (resolved values)"
    if command:
        ctx["command"] = command
    run.report.context = ctx
    _spell_flags(run.report.findings, version)
    from sglang_doctor.fix.router_spelling import spell_router_fixes

    spell_router_fixes(run.report.findings, primary.get("router.version"), command)
    from sglang_doctor.facts.startup import startup_summary

    run.report.startup = startup_summary(primary)
    yaml = options.command_yaml and command == options.command
    run.report.corrected_command = corrected_command(command, run.report.findings, primary, env_wrapper=yaml)


def _spell_flags(findings: list[Finding], version: str | None) -> None:
    """Name each flag fix the way the log's SGLang release spells it; drop flags it lacks."""
    from sglang_doctor.registry.spelling import in_range, spell_for, value_for

    if not version:
        return
    for f in findings:
        kept = []
        for fix in f.fixes:
            if fix.launcher == "router":  # a router flag: its releases are sglang-router's (router_spelling)
                kept.append(fix)
                continue
            if fix.versions and not in_range(version, fix.versions):
                continue
            if fix.kind == "flag" and fix.flag and fix.action != "remove":  # a removal names what the user typed
                spelled = spell_for(fix.flag, version)
                if spelled is None:
                    continue
                if spelled != fix.flag and fix.value is None:  # a switch renamed into a flag's value
                    fix.value = value_for(fix.flag, spelled)
                    if fix.value is not None and fix.action == "add":
                        fix.action = "set"
                fix.flag = spelled
            kept.append(fix)
        f.fixes = kept


def corrected_command(command: str | None, findings: list[Finding], ctx: Any, env_wrapper: bool = False) -> str | None:
    """The launch command with every applicable fix applied (first fix per flag wins).

    `env_wrapper`: the command is a compose / Kubernetes one, so env fixes go into an
    `env NAME=VALUE …` wrapper, which those run without a shell, not into a prefix.
    """
    if not command:
        return None
    try:
        from sglang_doctor.fix.apply import apply_fixes
        from sglang_doctor.launch.command import parse_command, render
        from sglang_doctor.policy.redact import redact_command as placeholders
    except ImportError:
        return None
    cmd = parse_command(command)
    if cmd is None:
        return None
    chosen: list[Any] = []
    taken: set[tuple[str, str]] = set()
    for f in findings:
        if f.severity == "info" or f.consequence_of:
            continue
        for fix in f.fixes[:1]:  # the first fix of each finding is the recommended one
            key = (fix.kind, fix.flag or fix.name or "")
            if key in taken:
                continue
            taken.add(key)
            if fix.kind == "flag" and fix.replaces:
                chosen.append(FixOut(kind="flag", flag=fix.replaces, action="remove", launcher=fix.launcher))
            chosen.append(fix)
    if not chosen:
        return None
    new_cmd, applied = apply_fixes(cmd, chosen, env_wrapper=env_wrapper)
    if not any(applied):
        return None
    return render(placeholders(new_cmd))  # --api-key $SGLANG_API_KEY: pasteable, and no secret
