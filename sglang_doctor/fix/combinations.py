"""Launch settings SGLang refuses together (data/rejected-combinations.yaml, read from its source),
and whether a fix would make one: the fixer then takes the finding's next fix (fix/correct.py)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sglang_doctor._speed.datacache import packaged_yaml
from sglang_doctor.launch.command import LaunchCommand
from sglang_doctor.model import FixOut


@dataclass(frozen=True)
class Combination:
    """A set of flag values SGLang refuses together in some releases (a corrected command must avoid it)."""

    id: str
    flags: dict[str, tuple[str, ...]]
    releases: str
    error: str
    why: str
    gpu_sm: tuple[tuple[int, int], ...] = ()  # the compute capabilities taking it (none: every GPU)


@lru_cache(maxsize=1)
def combinations() -> tuple[Combination, ...]:
    # (a path, not importlib.resources: its readers cost ~5 ms of a cold run, as the other data files are read)
    text = (Path(__file__).resolve().parent.parent / "data" / "rejected-combinations.yaml").read_text(encoding="utf-8")
    return tuple(Combination(d["id"], {k: tuple(str(x) for x in v) for k, v in d["flags"].items()}, d["releases"],
                             d["error"], d["why"], tuple((int(lo), int(hi)) for lo, hi in d.get("gpu_sm") or ()))
                 for d in packaged_yaml(text))


def _value(cmd: LaunchCommand, flag: str, facts: Mapping[str, Any]) -> str | None:
    """The launch's value of `flag`: the command's, else the log's (ServerArgs field name). A switch
    is "true" when the command has it (the log's True may be a value the removal of it left stale)."""
    from sglang_doctor.registry.flags import takes_value

    if not takes_value(flag):
        return "true" if cmd.has(flag) else None
    if cmd.has(flag):
        return cmd.get(flag)
    v = facts.get(flag[2:].replace("-", "_"))
    return None if v is None or isinstance(v, bool) else str(v)


GPU_SM = "gpu.sm"  # the facts key of the GPU's compute capability (10 x major + minor), when the log names it


def _gpu_refuses(c: Combination, facts: Mapping[str, Any]) -> bool:
    """Whether the launch's GPU is one `c` is refused on: any GPU when `c` names none; when it does,
    a GPU the log names outside its ranges (an unknown GPU: not assumed to refuse)."""
    if not c.gpu_sm:
        return True
    sm = facts.get(GPU_SM)
    return isinstance(sm, int) and not any(lo <= sm <= hi for lo, hi in c.gpu_sm)


def made(cmd: LaunchCommand, facts: Mapping[str, Any], releases: list[str]) -> Combination | None:
    """The rejected combination the launch `cmd` holds on some release of `releases`, if any."""
    from sglang_doctor.registry.spelling import in_range

    for c in combinations():
        if releases and not any(in_range(r, c.releases) for r in releases):
            continue
        if all(_value(cmd, flag, facts) in values for flag, values in c.flags.items()) and _gpu_refuses(c, facts):
            return c
    return None


def created_by(fix: FixOut, cmd: LaunchCommand, facts: Mapping[str, Any], releases: list[str]) -> Combination | None:
    """The rejected combination `fix` would make in `cmd` (one the command does not hold already)."""
    if fix.kind != "flag" or not fix.flag:
        return None
    from sglang_doctor.fix.apply import apply_in_place

    if made(cmd, facts, releases) is not None:
        return None  # already there: not this fix's doing
    new = copy.deepcopy(cmd)
    apply_in_place(new, [fix])
    return made(new, facts, releases)
