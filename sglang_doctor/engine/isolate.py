"""The switches that take a crash's subsystem out of the picture, as fixes of the detected release.

A rule with `isolate: true` gets them after its own fixes: for each subsystem the crash facts name
(`crash.subsystems`, from registry/subsystems.py), its switches spelled the way the log's release
spells them (`--disable-cuda-graph` before 0.5.14, `--cuda-graph-backend-decode disabled` from it),
leaving out what the release lacks and what the launch already does.
"""

from __future__ import annotations

from typing import Any

from sglang_doctor.engine.rules import Fix
from sglang_doctor.facts.context import Context

MAX_SWITCHES = 4


def _release(ctx: Context) -> str | None:
    """The log's release; None when unknown or only bounded by a range (the flags as written then)."""
    from sglang_doctor.registry.spelling import releases_of

    rels = releases_of(ctx.get("sglang.version"))
    return rels[0] if len(rels) == 1 else None


def _spelled(flag: str, ctx: Context, release: str | None) -> list[tuple[str, str | None]]:
    """[(flag, value)] as the release says the switch; for a range, only when both ends say it alike."""
    from sglang_doctor.registry.spelling import current_spelling, releases_of

    if release is not None:
        return current_spelling(flag, release)
    ends = [current_spelling(flag, r) for r in releases_of(ctx.get("sglang.version"))]
    if ends and all(e == ends[0] for e in ends):
        return ends[0]
    return [(flag, None)]


def _current(ctx: Context, flag: str) -> Any:
    field = flag.lstrip("-").replace("-", "_")
    return ctx.server_args.get(field, ctx.launch_args.get(field))


def _known_args(ctx: Context) -> bool:
    return bool(ctx.server_args)


def _fixes_for(sw: Any, sub: Any, ctx: Context, release: str | None) -> list[Fix]:
    from sglang_doctor.registry import flags
    from sglang_doctor.registry.spelling import in_range

    version = ctx.get("sglang.version")
    if sw.versions and version and not in_range(str(version), sw.versions):
        return []
    text = f"isolates {sub.name}: {sub.why}"
    if sw.env:
        if ctx.get(f"env.{sw.env}") is not None and sw.values and str(ctx.get(f"env.{sw.env}")) == sw.values[0]:
            return []
        return [Fix(kind="env", name=sw.env, action="set", value=sw.values[0] if sw.values else None, text=text)]
    assert sw.flag is not None
    if release is None and not flags.releases_with(sw.flag):
        return []
    cur = _current(ctx, sw.flag)
    if sw.action == "remove":
        if cur in (None, False, "", "None") and (_known_args(ctx) or cur is not None):
            return []  # the launch does not use it
        if release is not None and not flags.flag_exists(sw.flag, release, allow_abbrev=False):
            return []
        return [Fix(kind="flag", flag=sw.flag, action="remove",
                    text=text if cur else f"if the launch has it: {text}")]
    if sw.action == "add" and cur is True:
        return []
    out = []
    for flag, value in _spelled(sw.flag, ctx, release):
        if sw.action == "set" or value is not None:
            values = (value,) if value is not None else sw.values
            pick = next((v for v in values if str(v) != str(_current(ctx, flag))), None)
            if pick is None:
                continue
            out.append(Fix(kind="flag", flag=flag, action="set", value=str(pick), text=text))
        else:
            out.append(Fix(kind="flag", flag=flag, action=sw.action, text=text))
    return out


def isolating_fixes(ctx: Context) -> list[Fix]:
    """The switches for the subsystems the crash facts name, most telling first."""
    from sglang_doctor.registry.subsystems import by_id

    ids = str(ctx.get("crash.subsystems") or ctx.get("crash.subsystem_id") or "")
    release = _release(ctx)
    out: list[Fix] = []
    seen: set[tuple[str, str]] = set()
    for sid in [i for i in ids.split(",") if i]:
        sub = by_id(sid)
        if sub is None:
            continue
        for sw in sub.isolate:
            for fx in _fixes_for(sw, sub, ctx, release):
                key = (fx.kind, fx.flag or fx.name or "")
                if key not in seen:
                    seen.add(key)
                    out.append(fx)
    return out[:MAX_SWITCHES]
