"""Built-in checks: findings about what the log implies rather than what a line says.

A rule names a check in `match.check` instead of patterns; the check runs once per input
after the stream has ended and returns hits (line, text, captures) like a pattern would.
Rules keep their explanation, fixes and docs in YAML as usual.
"""

from __future__ import annotations

from typing import Any, Callable

from sglang_doctor.engine.hits import CheckHit
from sglang_doctor.facts.context import Context


def _command_args(ctx: Context) -> tuple[list, str | None]:
    """The command's SGLang launch flags: none of a router-only launch; of
    `sglang_router.launch_server`, those that are not its router flags."""
    cmd = ctx.parsed_command
    if cmd is None or not cmd.takes_server_flags:
        return [], None
    args = [a for a in cmd.args if a.flag.startswith("--")]
    if cmd.router_launcher is not None and args:
        # the router's flags (and anything in its --router- namespace: router-flag-unknown's) are left out
        args = [a for a in args if not (a.flag.startswith("--router-") or _router_flag_anywhere(a.flag, cmd.router_launcher))]
    return args, cmd.launcher and " ".join(cmd.launcher)


def _router_flag_anywhere(flag: str, launcher: str) -> bool:
    from sglang_doctor.registry.router_flags import flag_exists, releases

    return any(flag_exists(flag, r, launcher, allow_abbrev=False) for r in releases())


def _router_release(ctx: Context) -> str | None:
    from sglang_doctor.registry.router_flags import release_for

    return release_for(ctx.get("router.version"))


def router_flag_unknown(ctx: Context) -> list[CheckHit]:
    """Router flags of the launch command that the stated sglang-router release (or any) does not accept.

    A router-only launch: every flag; `sglang_router.launch_server`: its `--router-…` flags (the
    others are SGLang's, for launch-flag-unknown).
    """
    cmd = ctx.parsed_command
    launcher = cmd.router_launcher if cmd is not None else None
    if launcher is None:
        return []
    from sglang_doctor.registry import router_flags

    release = _router_release(ctx)
    shown = release or router_flags.releases()[-1]
    out = []
    for a in cmd.args:
        if not a.flag.startswith("--") or (cmd.takes_server_flags and not a.flag.startswith("--router-")):
            continue
        if release is not None and router_flags.flag_exists(a.flag, release, launcher):
            continue
        if release is None and any(router_flags.flag_exists(a.flag, r, launcher) for r in router_flags.releases()):
            continue  # with the release unknown, only a flag no release accepts is reported
        caps = {"flag": a.flag, "release": shown, "stated": "yes" if release else "no",
                "launcher": " ".join(cmd.launcher) or "the router image"}
        if a.value is not None:
            caps["value"] = a.value
        key = router_flags.version_key
        later = [r for r in router_flags.releases_with(a.flag, launcher) if release and key(r) > key(release)]
        if later:  # a newer router has it: upgrading is the fix, not a nearby spelling
            caps["since"] = later[0]  # (releases_with is oldest first)
        else:
            near = router_flags.nearest(a.flag, release, launcher)
            if near:
                caps["nearest"] = near
        out.append(CheckHit(ctx.command_line or 0, ctx.command or "", caps))
    return out


def _release(ctx: Context) -> str | None:
    from sglang_doctor.registry.spelling import releases_of

    rels = releases_of(ctx.get("sglang.version"))
    return rels[-1] if rels else None


def launch_flag_unknown(ctx: Context) -> list[CheckHit]:
    """Flags in the launch command that the log's SGLang release (or the newest) does not accept."""
    from sglang_doctor.registry import flags

    args, _ = _command_args(ctx)
    release = _release(ctx)
    shown = release or flags.releases()[-1]
    out = []
    meant = _replacements(ctx, shown) if args else {}
    for a in args:
        if release is not None and flags.flag_exists(a.flag, release):
            continue
        # With the release unknown, only a flag no release has ever accepted is reported.
        if release is None and any(flags.flag_exists(a.flag, r) for r in flags.releases()):
            continue
        caps = {"flag": a.flag, "release": shown, "stated": "yes" if release else "no"}
        if a.value is not None:
            caps["value"] = a.value
        near = meant.get(a.spelled) or (flags.nearest(a.flag, release), a.value)
        if near[0]:
            caps["nearest"] = near[0]
            if near[1] is not None:
                caps["value"] = near[1]
        out.append(CheckHit(ctx.command_line or 0, _arg_text(a), caps))
    return out


def _replacements(ctx: Context, release: str) -> dict[str, tuple[str, str | None]]:
    """What `release` calls each flag of the command it refuses (fix/validity: a rename, a removed
    switch's recorded replacement such as `--enable-ep-moe` -> `--ep-size <tp-size>`, a typo's
    nearest flag), with its value, read on the command as repaired in order (a misspelt
    `--tp-szie 2` before it already counts as `--tp-size 2`)."""
    from sglang_doctor.fix.validity import repair

    cmd = ctx.parsed_command
    if cmd is None:
        return {}
    out: dict[str, tuple[str, str | None]] = {}
    for p in repair(cmd, [release], ctx.server_args)[1]:
        edit = next((e for e in p.edits if e.replaces and not e.combined and e.flag), None)
        if edit is not None and edit.flag:
            out.setdefault(p.flag, (edit.flag, edit.value))
    return out


def _arg_text(a: Any) -> str:
    """One argument (a launch.command.Arg) as the command writes it: a flag's own evidence, not the
    whole command again."""
    value = [] if a.value is None or a.uses_equals or a.attached else [a.value]
    return " ".join([a.written, *value, *a.extra])


def launch_flag_deprecated(ctx: Context) -> list[CheckHit]:
    """Flags in the launch command that the log's release marks deprecated, with their replacement
    in full (fix/validity: `--disable-cuda-graph` -> `--cuda-graph-backend-decode disabled` and
    `--cuda-graph-backend-prefill disabled`), when the release takes it."""
    from sglang_doctor.registry import flags

    release = _release(ctx)
    if release is None:
        return []
    args, _ = _command_args(ctx)
    deprecated = [(a, spec) for a in args
                  if (spec := flags.resolve(a.flag, release, allow_abbrev=False)) is not None and spec.deprecated]
    if not deprecated:
        return []  # (most commands: the repair below, ~20 ms on a cold run, only for one that has some)
    from sglang_doctor.fix.validity import repair

    full = {p.flag: p.edits for p in repair(ctx.parsed_command, [release], ctx.server_args)[1]  # type: ignore[arg-type]
            if p.kind == "deprecated"}
    out = []
    for a, spec in deprecated:
        caps = {"flag": a.flag, "release": release}
        edits = [e for e in full.get(a.spelled, []) if e.action != "remove"]
        for n, e in enumerate(edits[:2]):
            caps["replacement" + ("2" if n else "")] = str(e.flag)
            if e.value is not None:
                caps["value" + ("2" if n else "")] = e.value
        if spec.hint:
            caps["hint"] = spec.hint
        out.append(CheckHit(ctx.command_line or 0, _arg_text(a), caps))
    return out


def crash_evidence(ctx: Context) -> list[CheckHit]:
    """A launch that failed (facts/crash.py), quoted by its most telling sign, with what the log knows."""
    lead = ctx.crash.lead
    if lead is None:
        return []
    from sglang_doctor.facts.crash import SYMPTOM_EXCEPTION

    caps = {"evidence": str(ctx.get("crash.evidence")), "kind": lead.kind}
    for name in ("stops", "exception_first", "exception_last", "sglang_frame", "subsystem", "subsystem_why",
                 "subsystem_where"):
        value = ctx.get(f"crash.{name}")
        if value:
            caps[name] = str(value).rstrip(".") if name.startswith("exception") else str(value)
    exc = caps.get("exception_last") or caps.get("exception_first") or (
        lead.text.strip().rstrip(".") if lead.kind in ("exception", "native") else None)
    if exc:
        caps["exception"] = exc
    if not exc or SYMPTOM_EXCEPTION.search(exc):
        # No exception of its own, or one that only says something else failed first: a symptom, which
        # gives way to any other error (see rank_findings).
        caps["lead"] = "symptom"
    known = ctx.get("crash.known")
    if known:
        caps["known"] = str(known)
    return [CheckHit(lead.line, lead.text, caps)]


def _recogniser(name: str) -> Callable[[Context], list[CheckHit]]:
    """A catalog recogniser of recognise.py, imported when first run (it is not on a clean run's path)."""
    def run(ctx: Context) -> list[CheckHit]:
        from sglang_doctor.engine import recognise

        return getattr(recognise, name)(ctx)  # type: ignore[no-any-return]
    run.__name__ = name
    return run


# Checks that run only for a launch no specific rule explains (engine/analyze.late_findings).
LATE_CHECKS: frozenset[str] = frozenset({"sglang-message", "cuda-code"})

CHECKS: dict[str, Callable[[Context], list[CheckHit]]] = {
    "crash-evidence": crash_evidence,
    "sglang-message": _recogniser("sglang_message"),
    "cuda-code": _recogniser("cuda_code"),
    "launch-flag-unknown": launch_flag_unknown,
    "launch-flag-deprecated": launch_flag_deprecated,
    "router-flag-unknown": router_flag_unknown,
}
# The captures each check can give a hit (what its rule's templates may name; see lint.py).
CHECK_CAPTURES: dict[str, frozenset[str]] = {
    "cuda-code": frozenset({"name", "enum", "code", "package", "library", "what", "message", "class", "summary"}),
    "sglang-message": frozenset({"function", "file", "line", "releases", "raised", "kind", "template", "flags",
                                 "advice"}),
    "crash-evidence": frozenset({"evidence", "kind", "stops", "exception_first", "exception_last", "sglang_frame",
                                 "subsystem", "subsystem_why", "subsystem_where", "known", "exception", "lead"}),
    "launch-flag-unknown": frozenset({"flag", "release", "stated", "value", "nearest"}),
    "launch-flag-deprecated": frozenset({"flag", "release", "value", "replacement", "value2", "replacement2", "hint"}),
    "router-flag-unknown": frozenset({"flag", "release", "stated", "launcher", "value", "nearest", "since"}),
}
