"""Whether a launch command's SGLang arguments parse with a release's parser, and the edits that
make them parse on every release a corrected command is meant for.

This mirrors what `ServerArgs.add_cli_args` + `argparse.parse_args` refuse: a flag the release does
not define, an abbreviation that is ambiguous there (`--cuda-graph-max-bs` on 0.5.20+, where it
prefixes `-decode` and `-prefill`), a value flag without its value, a switch given a value, a value
outside the flag's choices, a missing `--model-path`. Deprecated spellings (accepted, but on their
way out) are replaced by their full replacement, value included, when every target release takes it.
An abbreviation some target release finds ambiguous is written out as the flag it abbreviated
where it was unique.

Each problem comes with the edits that fix it, as fixes (`FixOut`) with a reason in `text`:
a flag replaced in place (`replaces`), removed, or its value changed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.launch.command import Arg, LaunchCommand
from sglang_doctor.model import FixOut
from sglang_doctor.registry import flags
from sglang_doctor.registry.spelling import Part, accepted, replacement, spell_value

# Values a switch written with one (`--trust-remote-code true`) may carry, and what they mean.
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


@dataclass
class Problem:
    """One argument some target release refuses (or deprecates), and the edits that fix it."""

    kind: str  # unknown | ambiguous | deprecated | missing-value | switch-value | bad-choice | bad-value | required
    flag: str  # as written ('' for a missing --model-path)
    releases: list[str]  # the target releases it fails on (deprecated: those that deprecate it)
    reason: str
    edits: list[FixOut] = field(default_factory=list)  # empty: nothing here can fix it


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"


def _lookup(opt: str, release: str) -> tuple[str, Any]:
    """How `release`'s argparse reads option `opt`: ("exact", spec), ("abbrev", spec),
    ("ambiguous", [names]) or ("unknown", None)."""
    table = flags.flags_for(release)
    if opt in table:
        return "exact", table[opt]
    if not flags.allows_abbrev(release) or not opt.startswith("--") or len(opt) <= 2:
        return "unknown", None
    names = sorted({name for s, name in table.option_strings().items() if s.startswith(opt)})
    if len(names) == 1:
        return "abbrev", table[names[0]]
    return ("ambiguous", names) if names else ("unknown", None)


def _meant(opt: str, releases: list[str]) -> str | None:
    """The flag `opt` names where some release reads it without doubt (newest first): its exact
    name, or the one flag it abbreviates; a never-seen flag: the nearest option string (a typo)."""
    order = list(reversed(flags.releases()))
    for rel in order:
        how, spec = _lookup(opt, rel)
        if how == "exact":
            return spec.name  # type: ignore[no-any-return]
    for rel in order:
        how, spec = _lookup(opt, rel)
        if how == "abbrev":
            return spec.name  # type: ignore[no-any-return]
    if opt.startswith("-"):
        fixed = "--" + opt.lstrip("-").replace("_", "-")
        if fixed != opt and any(accepted(fixed, r) for r in order):
            return fixed
    strings = flags.flags_for(releases[-1]).option_strings()
    import difflib  # (only for a flag no release knows)

    near = difflib.get_close_matches(opt.replace("_", "-"), list(strings), n=1, cutoff=0.75)
    return strings[near[0]] if near else None


def _resolve_parts(parts: tuple[Part, ...], cmd: LaunchCommand, releases: list[str],
                   value: str | None) -> list[Part] | None:
    """A recorded replacement made concrete for this command and spelled for every target release
    (None: a part no target release takes, or a `<flag>` value the command does not give)."""
    out: list[Part] = []
    for name, v in parts:
        if v is not None and v.startswith("<") and v.endswith(">"):
            v = _value_of("--" + v[1:-1], cmd, releases[-1])
            if v is None:
                return None
        elif v is None:
            v = value
        spelled = spell_value(name, v, releases)
        if spelled is None:
            return None
        out.append(spelled)
    return out


def _value_of(flag: str, cmd: LaunchCommand, release: str) -> str | None:
    """The value `flag` has in this launch: the command's, else the release's default."""
    if cmd.has(flag):
        return cmd.get(flag)
    spec = flags.resolve(flag, release, allow_abbrev=False)
    return None if spec is None or spec.default is None or isinstance(spec.default, bool) else str(spec.default)


def _edits(arg: Arg, parts: list[Part] | None, reason: str) -> list[FixOut]:
    """The fixes replacing `arg` with `parts` in place (no parts: removing it)."""
    if not parts:
        return [FixOut(kind="flag", flag=arg.flag, action="remove", text=reason)]
    out = []
    for k, (name, value) in enumerate(parts):
        out.append(FixOut(kind="flag", flag=name, action="set" if value is not None else "add", value=value,
                          replaces=arg.flag, text=reason, combined=True if k else None))
    return out


def _value_problem(arg: Arg, spec: Any, releases: list[str], server_args: dict[str, Any]) -> Problem | None:
    """A value the flag's type or choices refuse, a missing value, a switch given one."""
    opt = arg.spelled
    if not spec.takes_value:
        if arg.value is None:
            return None
        word = arg.value.lower()
        reason = f"{opt} is a switch: it takes no value ('{arg.value}')"
        if word in _TRUE:
            return Problem("switch-value", opt, releases, reason,
                           [FixOut(kind="flag", flag=arg.flag, action="add", replaces=arg.flag, text=reason)])
        if word in _FALSE:
            return Problem("switch-value", opt, releases, reason,
                           [FixOut(kind="flag", flag=arg.flag, action="remove", text=reason)])
        return Problem("switch-value", opt, releases, reason)
    if arg.value is None:
        known = server_args.get(spec.name[2:].replace("-", "_"))
        reason = f"{opt} needs a value"
        if known is not None and not isinstance(known, (bool, dict, list)):
            return Problem("missing-value", opt, releases, reason + f" (the log's server_args: {known})",
                           [FixOut(kind="flag", flag=arg.flag, action="set", value=str(known), text=reason)])
        return Problem("missing-value", opt, releases, reason,
                       [FixOut(kind="flag", flag=arg.flag, action="remove", text=reason)])
    values = arg.values
    if any("$" in v or "`" in v for v in values):
        return None  # expanded by the shell: not ours to judge
    if spec.choices:
        choices = [str(c) for c in spec.choices]
        bad = [v for v in values if v not in choices]
        if bad:
            fixed = [_nearest_choice(v, choices) if v in bad else v for v in values]
            reason = f"{opt} takes one of {', '.join(choices)}; '{bad[0]}' is not one"
            if all(f is not None for f in fixed):
                return Problem("bad-choice", opt, releases, reason,
                               [FixOut(kind="flag", flag=arg.flag, action="set", value=" ".join(fixed),  # type: ignore[arg-type]
                                       text=reason)])
            return Problem("bad-choice", opt, releases, reason,
                           [FixOut(kind="flag", flag=arg.flag, action="remove", text=reason)])
    conv = {"int": int, "float": float}.get(spec.type)
    if conv is not None:
        try:
            conv(values[0])
        except ValueError:
            reason = f"{opt} takes a number ('{values[0]}')"
            return Problem("bad-value", opt, releases, reason,
                           [FixOut(kind="flag", flag=arg.flag, action="remove", text=reason)])
    return None


def _nearest_choice(value: str, choices: list[str]) -> str | None:
    norm = {c.lower().replace("-", "_"): c for c in choices}
    hit = norm.get(value.lower().replace("-", "_"))
    if hit is not None:
        return hit
    import difflib

    near = difflib.get_close_matches(value, choices, n=1, cutoff=0.8)
    return near[0] if near else None


def arg_problem(arg: Arg, cmd: LaunchCommand, releases: list[str], server_args: dict[str, Any]) -> Problem | None:
    """What (if anything) the target releases' parsers refuse about one argument, and its fix."""
    opt = arg.spelled
    reads = [(rel, *_lookup(opt, rel)) for rel in releases]
    failing = [rel for rel, how, _ in reads if how not in ("exact", "abbrev")]
    value = " ".join(arg.values) if arg.values else None
    if failing:
        kind = "ambiguous" if any(how == "ambiguous" for _, how, _ in reads) else "unknown"
        meant = _meant(opt, releases)
        where = f"SGLang {_span(failing)}"
        if kind == "ambiguous":
            names = next(spec for _, how, spec in reads if how == "ambiguous")
            reason = f"{where} reads {opt} as ambiguous ({', '.join(names)})"
        else:
            reason = f"{where} has no {opt}"
        if meant is None:
            return Problem(kind, opt, failing, reason, _edits(arg, None, reason + "; no release names a replacement"))
        spelled = spell_value(meant, value, releases)
        if spelled is not None:
            return Problem(kind, opt, failing, reason, _edits(arg, [spelled], reason))
        recorded = replacement(meant)
        parts = _resolve_parts(recorded, cmd, releases, value) if recorded is not None else None
        if parts is not None:
            return Problem(kind, opt, failing, reason, _edits(arg, parts, reason))
        return Problem(kind, opt, failing, reason, _edits(arg, None, reason + "; no release names a replacement"))
    specs = [spec for _, _, spec in reads]
    for spec in specs[::-1]:
        found = _value_problem(arg, spec, releases, server_args)
        if found is not None:
            return found
    deprecating = [rel for rel, _, spec in reads if spec.deprecated]
    if deprecating:
        recorded = replacement(specs[-1].name)
        if recorded is None or any(v and v.startswith("<") for _, v in recorded):
            return None  # no replacement, or one that changes other flags too: it still parses
        parts = _resolve_parts(recorded, cmd, releases, value) if recorded else []
        if parts is None or any(p.flag == specs[-1].name for p in parts):
            return None  # the replacement is not taken by every target release: keep what works
        shown = " ".join(f"{p.flag}" + (f" {p.value}" if p.value is not None else "") for p in parts) or "nothing"
        reason = f"SGLang {_span(deprecating)} deprecates {opt}: use {shown}"
        return Problem("deprecated", opt, deprecating, reason, _edits(arg, parts, reason))
    return None


def repair(cmd: LaunchCommand, releases: list[str],
           server_args: dict[str, Any] | None = None) -> tuple[LaunchCommand, list[Problem]]:
    """The command with every problem of `problems` fixed (a copy), and the problems.

    Arguments are checked in order on the command as repaired so far, so a replacement that takes
    another flag's value (`--enable-ep-moe` -> `--ep-size <tp-size>`) sees a misspelt `--tp-szie 4`
    already written `--tp-size 4`. A missing `--model-path` is checked last.
    """
    from sglang_doctor.fix.apply import apply_in_place

    work = copy.deepcopy(cmd)
    if not work.takes_server_flags or work.router_launcher is not None or not releases:
        return work, []  # the router's own parser (and its flags) is not this one
    sa = server_args or {}
    found: list[Problem] = []
    checked: set[int] = set()
    while True:
        arg = next((a for a in work.args if id(a) not in checked and a.spelled.startswith("--")), None)
        if arg is None:
            break
        checked.add(id(arg))
        problem = arg_problem(arg, work, releases, sa)
        if problem is None:
            continue
        found.append(problem)
        before = {id(a) for a in work.args}
        apply_in_place(work, problem.edits)
        checked |= {id(a) for a in work.args if id(a) not in before}
    missing = _model_path_problem(work, releases, sa)
    if missing is not None:
        found.append(missing)
        apply_in_place(work, missing.edits)
    return work, found


def problems(cmd: LaunchCommand, releases: list[str], server_args: dict[str, Any] | None = None) -> list[Problem]:
    """Every argument of the launch that some release of `releases` refuses or deprecates, in order
    (a missing `--model-path` last); see `repair`."""
    return repair(cmd, releases, server_args)[1]


def _model_path_problem(cmd: LaunchCommand, releases: list[str], server_args: dict[str, Any]) -> Problem | None:
    serve_positional = cmd.launcher[-1:] == ["serve"] and any(not a.flag for a in cmd.args)
    if serve_positional or cmd.has("--model-path"):
        return None
    reason = f"SGLang {_span(releases)} requires --model-path"
    model = server_args.get("model_path")
    if isinstance(model, str) and model:
        return Problem("required", "", releases, reason + " (the log's server_args: " + model + ")",
                       [FixOut(kind="flag", flag="--model-path", action="set", value=model, text=reason)])
    return Problem("required", "", releases, reason)
