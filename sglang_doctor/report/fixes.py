"""Fixes as a person reads them: one short line each, shared by the human formats."""

from __future__ import annotations

from sglang_doctor.model import FixOut

_VERB = {"raise": "raise", "lower": "lower", "set": "set", "add": "add", "remove": "remove"}


def fix_label(index: int, fix: FixOut) -> str:
    """"fix" for the recommended fix, "and" for one combined with it, "or" for an alternative."""
    return "fix" if index == 0 else "and" if fix.combined else "or"


def describe_fix(fix: FixOut) -> str:
    a = fix.action or "set"
    if fix.kind == "note":
        return fix.text or ""
    if fix.kind in ("flag", "docker"):
        where = "docker run " if fix.kind == "docker" else ""
        if fix.replaces:
            s = f"{where}{fix.replaces} → {fix.flag}" + (f" {fix.value}" if fix.value is not None else "")
        elif a == "remove":
            s = f"remove {where}{fix.flag}"
        elif a == "add" and not fix.value:
            s = f"add {where}{fix.flag}"
        elif fix.value is not None and fix.from_ is not None:
            s = f"{where}{fix.flag} {fix.from_} → {fix.value}"
        elif fix.value is not None:
            s = f"{where}{fix.flag} {fix.value}"
        else:
            s = f"{_VERB[a]} {where}{fix.flag}" + (f" (now {fix.from_})" if fix.from_ else "")
    elif fix.kind == "env":
        was = None if fix.from_ is None else fix.from_ or "''"  # an empty value is a value
        now = f" (now {was})" if was is not None else ""
        if a == "remove":
            s = f"unset env {fix.name}{now}"
        elif fix.value is not None and was is not None:
            s = f"env {fix.name}={was} → {fix.value}"
        elif fix.value is not None:
            s = f"env {fix.name}={fix.value}"
        else:
            s = f"{'set' if a == 'set' else 'add'} env {fix.name}{now}"
    elif fix.kind == "package":
        spec = fix.value or ""
        if spec and spec[0].isdigit():
            spec = "==" + spec
        verb = {"raise": "upgrade", "lower": "downgrade", "remove": "uninstall"}.get(a, "install")
        s = f"pip {verb} '{fix.name}{spec}'" if spec else f"{verb} {fix.name} (pip)"
    else:  # system
        verb = {"raise": "newer", "lower": "older", "set": "a matching"}.get(a, a)
        s = f"{verb} {fix.name}" + (f" ({fix.value})" if fix.value else "")
    if fix.text and fix.kind != "note":
        s += f" — {fix.text}"
    return s


def fix_lines(fixes: list[FixOut]) -> list[str]:
    """The fixes as the text report lists them: `fix: …` for the recommended one, `and: …` for one
    combined with it, `or:  …` for an alternative."""
    return [f"{fix_label(i, fx) + ':':<5}" + describe_fix(fx) for i, fx in enumerate(fixes)]
