"""Built-in checks: findings about what the log implies rather than what a line says.

A rule names a check in `match.check` instead of patterns; the check runs once per input
after the stream has ended and returns hits (line, text, captures) like a pattern would.
Rules keep their explanation, fixes and docs in YAML as usual.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .context import Context


class CheckHit(NamedTuple):
    """One thing a built-in check found: the line it is about, its text and captures."""

    line: int
    text: str
    captures: dict[str, str]


def _command_args(ctx: Context) -> tuple[list, str | None]:
    """The command's SGLang launch flags: none of a router-only launch; of
    `sglang_router.launch_server`, those that are not its router flags."""
    cmd = ctx.parsed_command
    if cmd is None or not cmd.takes_server_flags:
        return [], None
    args = [a for a in cmd.args if a.flag.startswith("--")]
    if cmd.router_launcher is not None and args:
        from .router_flags import flag_exists, releases

        launcher = cmd.router_launcher
        args = [a for a in args if not any(flag_exists(a.flag, r, launcher, allow_abbrev=False) for r in releases())]
    return args, cmd.launcher and " ".join(cmd.launcher)


def _release(ctx: Context) -> str | None:
    from .spelling import releases_of

    rels = releases_of(ctx.get("sglang.version"))
    return rels[-1] if rels else None


def launch_flag_unknown(ctx: Context) -> list[CheckHit]:
    """Flags in the launch command that the log's SGLang release (or the newest) does not accept."""
    from . import flags

    args, _ = _command_args(ctx)
    release = _release(ctx)
    shown = release or flags.releases()[-1]
    out = []
    for a in args:
        if release is not None and flags.flag_exists(a.flag, release):
            continue
        # With the release unknown, only a flag no release has ever accepted is reported.
        if release is None and any(flags.flag_exists(a.flag, r) for r in flags.releases()):
            continue
        near = flags.nearest(a.flag, release)
        caps = {"flag": a.flag, "release": shown, "stated": "yes" if release else "no"}
        if a.value is not None:
            caps["value"] = a.value
        if near:
            caps["nearest"] = near
        out.append(CheckHit(ctx.command_line or 0, ctx.command or "", caps))
    return out


def launch_flag_deprecated(ctx: Context) -> list[CheckHit]:
    """Flags in the launch command that the log's release marks deprecated."""
    from . import flags

    release = _release(ctx)
    if release is None:
        return []
    args, _ = _command_args(ctx)
    out = []
    for a in args:
        spec = flags.resolve(a.flag, release, allow_abbrev=False)
        if spec is None or not spec.deprecated:
            continue
        caps = {"flag": a.flag, "release": release}
        if a.value is not None:
            caps["value"] = a.value
        if spec.replacement:
            caps["replacement"] = spec.replacement
        if spec.hint:
            caps["hint"] = spec.hint
        out.append(CheckHit(ctx.command_line or 0, ctx.command or "", caps))
    return out


CHECKS: dict[str, Callable[[Context], list[CheckHit]]] = {
    "launch-flag-unknown": launch_flag_unknown,
    "launch-flag-deprecated": launch_flag_deprecated,
}
# The captures each check can give a hit (what its rule's templates may name; see lint.py).
CHECK_CAPTURES: dict[str, frozenset[str]] = {
    "launch-flag-unknown": frozenset({"flag", "release", "stated", "value", "nearest"}),
    "launch-flag-deprecated": frozenset({"flag", "release", "value", "replacement", "hint"}),
}
