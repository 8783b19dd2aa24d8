"""One run: inputs through the pipeline into a Report.

read + engine (per input, each launch apart) → units (a launch, or one deployment's inputs)
→ attribution across a deployment's inputs → policy (severities, suppressions) → fix (spelling
for the release, the corrected command: once per unit) → facts summary (startup) → report →
redaction (once) → Report. `--follow` (pipeline/follow.py) runs the same stages on the result
of its incremental analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import io

from sglang_doctor.engine.prefilter import ScannerCache
from sglang_doctor.engine.analyze import InputResult, Matcher, analyze_chunks
from sglang_doctor.pipeline.units import Unit, group_units
from sglang_doctor.model import Finding, InputInfo, LaunchInfo, Report
from sglang_doctor.read.reader import InputError, display_name, iter_chunks, open_input
from sglang_doctor.facts.input_notes import input_warnings, is_empty
from sglang_doctor.policy.redact import redact_report
from sglang_doctor.engine.rules import Rule


@dataclass
class Options:
    """How a run reads its inputs (the command line and config, resolved)."""

    command: str | None = None  # the launch command, when the user gave it
    command_text: str | None = None  # the script lines holding it as written (--cmd-file), else None
    command_yaml: bool = False  # it came from a compose / Kubernetes file: no shell reads its prefixes
    command_yaml_text: str | None = None  # that file's text: the corrected command is its edited keys
    redact_hosts: bool = False
    fast: bool = True  # stage-one scanner for long logs (False: every line the slow way)
    trace: Any = None  # --why: observer of the matcher, told of each input (see why.py)
    interrupt: Any = None  # an Interrupt: Ctrl-C ends the run early with what was read so far
    jobs: int | None = None  # worker processes for several files (None: decided by parallel.auto_jobs)
    command_source: str = "cmd"  # where `command` came from: cmd | cmd-file
    severity: dict[str, str] = field(default_factory=dict)  # the project's severity per rule (config)
    suppressor: Any = None  # a policy.suppress.Suppressor: baseline and inline ignores
    model_dir: str | None = None  # the model's directory (--model-dir): its config.json gives fix values
    find_model: bool = False  # else look the launch's model path up on disk / in the HF cache (the CLI does)
    # --fix: the --cmd-file's name and whole text, rewritten (unredacted) to run the corrected command
    rewrite: tuple[str, str] | None = None


@dataclass
class Run:
    """A finished run: the report, plus what the CLI needs beside it."""

    report: Report
    errors: list[str] = field(default_factory=list)  # inputs that could not be read
    warnings: list[str] = field(default_factory=list)
    results: list[InputResult] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C: the report covers the input read before it
    rewritten: str | None = None  # --fix: the --cmd-file's text running the corrected command (never shown)
    rewrite_refused: str = ""  # --fix: why there is none


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
    infos: list[InputInfo] = []
    results: list[InputResult] = []
    errors: list[str] = []
    for index, result, error in _outcomes(names, rules, options, texts, progress):
        name = names[index]
        info = InputInfo(name=display_name(name))
        infos.append(info)
        if result is None:
            info.error = error
            errors.append(error if name in str(error) or info.name in str(error) else f"{name}: {error}")
            continue
        info.lines, info.bytes = result.lines, result.bytes
        results.append(result)
        if options.interrupt is not None and options.interrupt.requested:
            break
    run = assemble(infos, results, rules, options, [n for n, _ in zip(names, infos)])
    run.errors = errors
    run.interrupted = options.interrupt is not None and options.interrupt.requested
    return run


def assemble(infos: list[InputInfo], results: list[InputResult], rules: list[Rule], options: Options,
             paths: list[str]) -> Run:
    """The stages after the engine, for analysed inputs (`paths[i]`: where input i was read from)."""
    run = Run(Report(inputs=infos), results=results)
    for res in results:
        run.warnings.extend(w for w in res.warnings if w not in run.warnings)
    run.units = group_units(results)
    names = [i.name for i in infos]
    per_unit: list[list[Finding]] = []
    for unit in run.units:
        findings = [f for la in unit.launches for f in la.findings]
        if len(unit.launches) > 1:  # one deployment's logs: root cause and consequences across them
            from sglang_doctor.engine.attribution import attribute

            findings = attribute(findings, rules, names)
        per_unit.append(findings)
    per_unit = _policy(per_unit, options, names, paths)
    report = run.report
    befores: list[str | None] = []
    for unit, findings in zip(run.units, per_unit):
        findings, launch, written = _fix_unit(unit, findings, options)
        run.rewritten = written.rewritten if len(run.units) == 1 else None
        run.rewrite_refused = written.refused
        befores.append(written.before)
        launch.findings = list(range(len(report.findings), len(report.findings) + len(findings)))
        report.findings.extend(findings)
        report.launches.append(launch)
    if run.units:
        report.context = _context(run.units[0], report.launches[0], options, befores[0])
        report.startup = report.launches[0].startup
        if len(report.launches) == 1:
            report.corrected_command = report.launches[0].corrected_command
    report.count()
    sup = options.suppressor
    report.suppressed = (len(sup.suppressed) or None) if sup is not None else None
    run.report = redact_report(report, hosts=options.redact_hosts)
    return run


def _policy(per_unit: list[list[Finding]], options: Options, names: list[str],
            paths: list[str]) -> list[list[Finding]]:
    """The project's severities, then the baseline and inline ignores."""
    from sglang_doctor.policy.config import apply_severity

    out = [apply_severity(options.severity, findings) for findings in per_unit]
    if options.suppressor is not None:
        out = [options.suppressor.filter(findings, names, paths) for findings in out]
    return out


@dataclass
class _Written:
    """Beside a unit's corrected command: the command it corrects, written the same way (the same
    layout, secrets as the same `$NAME` placeholders: what --diff compares), and with --fix the
    --cmd-file rewritten, unredacted."""

    before: str | None = None
    rewritten: str | None = None
    refused: str = ""  # why there is no rewritten file


def _fix_unit(unit: Unit, findings: list[Finding], options: Options) -> tuple[list[Finding], LaunchInfo, _Written]:
    """The fix stage of one unit: fixes spelled for its release, its corrected command (and with
    --fix, the --cmd-file rewritten to run it, unredacted)."""
    from sglang_doctor.facts.startup import startup_summary
    from sglang_doctor.fix.correct import correct, launch_command, rebuilt_defaults, spell_fixes
    from sglang_doctor.fix.router_spelling import spell_router_fixes
    from sglang_doctor.fix.tp_values import tp_values

    primary = unit.primary
    ctx = primary.context
    version = ctx.get("sglang.version")
    given = options.command or next((la.context.command for la in unit.launches if la.context.command), None)
    source = options.command_source if options.command else ("log-comment" if given else None)
    command, rebuilt = launch_command(given, ctx.server_args, version)
    findings = spell_fixes(findings, version)
    findings = tp_values(findings, ctx.server_args, options.model_dir, options.find_model)
    findings = spell_router_fixes(findings, ctx.get("router.version"), command)
    yaml = options.command_yaml and command == options.command
    known = dict(ctx.server_args)  # the launch's settings as the log shows them (a quantization read at load too)
    if not known.get("quantization") and ctx.get("model.quantization"):
        known["quantization"] = ctx.get("model.quantization")
    known["gpu.sm"] = ctx.get("gpu.sm")  # (GPU-bound combinations: fix/combinations.py)
    found = correct(command, findings, env_wrapper=yaml, version=version, server_args=known)
    fixed = found.command if found is not None else None
    text = nodes = None
    extra = _Written()
    if fixed is not None:
        from sglang_doctor.launch.command import LaunchCommand, parse_command, render
        from sglang_doctor.launch.splice import splice
        from sglang_doctor.policy.redact import env_value, redact_command

        redacted = redact_command(fixed)  # --api-key $SGLANG_API_KEY: pasteable, and no secret
        # the user's own text (wrapper, chains, line continuations) with only the launch's words changed
        written = (options.command_text or command) if command == options.command else command
        from sglang_doctor.launch.yaml_edit import fragment_keys, yaml_fragment

        def write(c: LaunchCommand) -> str:  # a compose / Kubernetes file: the YAML keys that change
            if yaml:
                return (yaml_fragment(options.command_yaml_text, c, found.env, env_value)
                        if options.command_yaml_text else None) or render(c)
            return splice(written, c) if written else render(c)

        text = write(redacted)
        original = parse_command(command or "")
        if original is not None:
            given_as = redact_command(original)
            if yaml and options.command_yaml_text and text:
                extra.before = yaml_fragment(options.command_yaml_text, given_as, None, env_value, fragment_keys(text))
            elif not yaml:
                extra.before = write(given_as)
        from sglang_doctor.fix.nodes import node_commands

        nodes = [write(n) for n in node_commands(redacted)] or None
        if options.rewrite is not None and command == options.command:
            from sglang_doctor.launch.rewrite import rewrite_file

            extra.rewritten, extra.refused = rewrite_file(options.rewrite[1], options.rewrite[0], fixed, found.env)
    launch = LaunchInfo(input=primary.input, first_line=primary.first_line, last_line=primary.last_line,
                        inputs=unit.inputs if len(unit.launches) > 1 else None,
                        sglang_version=str(version) if version else None, corrected_command=text,
                        command_source=rebuilt or (source if command else None),
                        command_defaults_omitted=rebuilt_defaults(ctx.server_args, version, fixed) if rebuilt else None,
                        command_releases=_span(found.releases) if found is not None and found.narrowed else None,
                        command_kind=found.kind if text is not None and found is not None else None,
                        command_notes=(found.notes or None) if text is not None and found is not None else None,
                        node_commands=nodes,
                        startup=startup_summary(ctx))
    return findings, launch, extra


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"


def _context(unit: Unit, launch: LaunchInfo, options: Options, before: str | None = None) -> dict[str, Any]:
    """The report's context: the unit's facts (its primary launch's win), the version, the command
    (`before`: as the corrected command writes it, when there is one)."""
    from sglang_doctor.fix.correct import unverified_note
    from sglang_doctor.registry.spelling import releases_of

    ctx: dict[str, Any] = {}
    for la in reversed(unit.launches):
        ctx.update(la.context.to_json())
    primary = unit.primary.context
    if launch.sglang_version:
        ctx["sglang_version"] = launch.sglang_version
        fact = primary.facts.get("sglang.version")
        if fact is not None and fact.note and str(fact.value) == launch.sglang_version:
            ctx["sglang_version_note"] = fact.note  # (how an unstated release was bounded)
    given = options.command or next((la.context.command for la in unit.launches if la.context.command), None)
    if launch.corrected_command and not releases_of(launch.sglang_version):
        ctx["corrected_command_unverified"] = unverified_note(launch.sglang_version)
    if launch.corrected_command and launch.command_kind == "suggested":
        ctx["corrected_command_kind"] = "suggested"  # the root cause's fix is not in it
    if launch.corrected_command and launch.command_notes:
        ctx["corrected_command_left_out"] = list(launch.command_notes)
    if launch.corrected_command and launch.command_releases:
        ctx["corrected_command_releases"] = launch.command_releases
        ctx["corrected_command_note"] = (f"written for SGLang {launch.command_releases}: the older releases of "
                                         f"{launch.sglang_version} lack a flag or value it sets")
    if given:
        ctx["command"] = options.command_text if options.command and options.command_text else given
        if before and launch.corrected_command:  # (a YAML file: the keys its fragment replaces)
            ctx["command"] = before
    elif launch.command_source == "server_args":
        from sglang_doctor.fix.correct import launch_command

        ctx["command"] = launch_command(None, primary.server_args, launch.sglang_version)[0]
        ctx["command_source"] = "rebuilt from the server_args line (resolved values)"
    return ctx


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
            split = None
            try:
                tick = progress.start(display_name(name), stream) if progress is not None and not texts else None
                if options.trace is None and not texts:  # a big file: its second half in another process
                    from sglang_doctor.pipeline.split import start

                    split = start(name, stream, scanner)
                source = stream if split is None else split.head(stream)
                chunks = iter_chunks(source) if options.interrupt is None else options.interrupt.wrap(iter_chunks(source))
                result = analyze_chunks(chunks, matcher, index, scanner, options.command,
                                        tick if split is None else split.progress(tick),
                                        None if split is None else split.rest(
                                            lambda: options.interrupt is not None and options.interrupt.requested),
                                        pasted=bool(texts and name in texts))
                result.warnings.extend(input_warnings(name, stream, result))
            finally:
                if split is not None:
                    split.close()
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
