"""Properties every piece of advice must have, whatever the rule: checked by `rules test` on each
fires fixture and by the test suite on every real log.

* a `raise` fix's value is above its `from`, a `lower` fix's below it (numbers, or sizes such as
  `32g`, compared as numbers; a fix without both sides, or with a word, is not judged);
* a fix changes something: no `set` to the value the launch already has;
* the printed corrected command differs from the launch command it corrects;
* the line the report prints says what the action does: its verb is the action's (an
  `upgrade` line for `raise`, `uninstall` for `remove` …) and the fix's own text does not ask for
  the opposite (an `install` fix whose text says "uninstall it").
"""

from __future__ import annotations

import re

from sglang_doctor.engine.expr import quantity
from sglang_doctor.model import FixOut, Report
from sglang_doctor.report.fixes import describe_fix

# Words a fix's text may not use for its own action (the opposite direction).
_CONTRADICTS = {
    "set": re.compile(r"\b(uninstall|remove) (it|this|the package)\b", re.IGNORECASE),
    "add": re.compile(r"\b(uninstall|remove) (it|this|the package)\b", re.IGNORECASE),
    "raise": re.compile(r"\b(downgrade|uninstall)\b", re.IGNORECASE),
    "lower": re.compile(r"\b(upgrade|uninstall)\b", re.IGNORECASE),
    "remove": re.compile(r"^(install|upgrade|add|set)\b", re.IGNORECASE),
}
# The verb the printed line starts with when it names the action (lines that show `from → value`
# or a bare value carry no verb).
_VERBS = {"raise": ("raise", "upgrade", "newer"), "lower": ("lower", "downgrade", "older"),
          "remove": ("remove", "unset", "uninstall"), "add": ("add", "install"), "set": ("set", "install", "a matching")}


def fix_problems(fix: FixOut) -> list[str]:
    """What is wrong with one rendered fix ([] when nothing is)."""
    shown = describe_fix(fix)
    if fix.kind == "note" or fix.action is None:
        return []
    if fix.replaces:  # a rename keeps the user's value on purpose
        return []
    out: list[str] = []
    new, old = quantity(fix.value), quantity(fix.from_)
    if new is not None and old is not None:
        if fix.action == "raise" and not new > old:
            out.append(f"'{shown}': raise, but {fix.value} is not above {fix.from_}")
        elif fix.action == "lower" and not new < old:
            out.append(f"'{shown}': lower, but {fix.value} is not below {fix.from_}")
        elif fix.action == "set" and new == old:
            out.append(f"'{shown}': sets the value the launch already has")
    elif fix.value is not None and fix.value == fix.from_ and fix.action in ("set", "raise", "lower"):
        out.append(f"'{shown}': sets the value the launch already has")
    if fix.text and _CONTRADICTS[fix.action].search(fix.text):
        out.append(f"'{shown}': the action is {fix.action} but its text says otherwise")
    head = shown.split(" — ")[0].lower()
    verbs = [v for vs in _VERBS.values() for v in vs]
    said = next((v for v in verbs if head.startswith(v + " ")), None)
    if said is not None and said not in _VERBS[fix.action]:
        out.append(f"'{shown}': printed as '{said}' for action {fix.action}")
    return out


def report_problems(report: Report, only_rule: str | None = None) -> list[str]:
    """Advice problems of a report: its findings' fixes (of `only_rule`, when given) and its
    corrected command."""
    out: list[str] = []
    for f in report.findings:
        if only_rule is None or f.rule == only_rule:
            out += [f"{f.rule}: {p}" for fx in f.fixes for p in fix_problems(fx)]
    command = report.context.get("command")
    if command and report.corrected_command and report.corrected_command.split() == str(command).split():
        out.append("the corrected command is the launch command unchanged")
    return out
