"""`sglang-doctor rules lint`: what is wrong with a rule before it ever runs.

Checks, one line per problem (`file:line: rule-id: message`):

* backtracking: a repeat (unbounded, or bounded at 10 or more) whose body can split
  the same text in more than one way - a variable-length part whose mandatory
  neighbours it can also match (`(a+)+`, `(\\w+\\s?)*`, `(a|aa)+`), or two alternatives
  that can match the same text (`(a|a)*`, `(\\d+|\\d+\\.\\d+)*`). Atomic groups and
  possessive repeats are trusted. The analysis runs on Python's own regex parser; a
  pattern it cannot parse (syntax only the `regex` module has) is not analysed.
* a `match.any` pattern without a required literal of 4 or more characters: the
  prefilter cannot skip records for the rule, so it runs on every record;
* with `strict`: a named group that nothing in the rule uses (explanation, let, fixes,
  conditions, a backreference). Off by default: captures are also published as data (the
  JSON report's `captures`, SARIF `properties.captures`), and the shipped rules keep
  several for that (a rank, a pid, a size); `--strict` lists them;
* a name in a template, expression or condition that no pattern captures, no `let`
  computes and no fact provides;
* with `catalog` (on in `rules lint`, off with `--no-catalog`): a rule whose sources cite an SGLang
  file but whose patterns match no message of SGLang's catalog in its releases
  (ruledev/catalog_lint.py; `catalog_exempt:` opts a rule out with its reason);
* a fix flag that some release of the rule's (or the fix's) range does not have, under
  any spelling.
"""

from __future__ import annotations

import re

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sglang_doctor.engine import expr
from sglang_doctor.facts import vocabulary
from sglang_doctor.engine.regex_safety import regex_problems
from sglang_doctor.engine.rules import Rule, condition_names, required_literal

@dataclass(frozen=True)
class Problem:
    """One lint problem, located in a rule file."""

    path: str
    line: int | None
    rule: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.rule}: {self.message}"


# --- names -----------------------------------------------------------------------------------


def _used_names(rule: Rule) -> set[str]:
    used = condition_names(rule.conditions) | set(expr.template_names(rule.title))
    for part in rule.explanation_parts:
        used |= set(expr.template_names(part.text)) | condition_names(part.when)
    for source in rule.let.values():
        used |= expr.names_in(str(source))
    for fix in rule.fixes:
        names: set[str] = set()
        for t in (fix.value, fix.text, fix.flag, fix.name):  # a package/env name may be a template too
            if t:
                names |= set(expr.template_names(t))
        used |= (names - {"item"} | {fix.each}) if fix.each else names  # (`item`: one of its `each` list)
        used |= condition_names(fix.when)
    return used


def _record_lets(rule: Rule) -> dict[str, str]:
    """Lets bound to a record function's result (`plan: mem_plan(…)`): let name -> function."""
    out = {}
    for name, source in rule.let.items():
        try:
            body = expr.compile_expr(str(source)).body
        except expr.ExpressionError:
            continue
        for node in ast.walk(body):  # also under `None if … else mem_plan(…)`
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in expr.RECORD_FUNCTIONS:
                out[name] = node.func.id
    return out


def _record_problems(rule: Rule) -> list[str]:
    """Keyword arguments a record function does not take."""
    from sglang_doctor.fix.memory_plan import GIVEN  # (only when linting: the memory model is not loaded to run rules)

    takes = {"mem_plan": GIVEN}
    out = []
    for source in rule.let.values():
        try:
            tree = expr.compile_expr(str(source))
        except expr.ExpressionError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in takes:
                out += [f"{node.func.id}() takes no argument {k.arg!r} (it takes {', '.join(takes[node.func.id])})"
                        for k in node.keywords if k.arg not in takes[node.func.id]]
    return out


def _record_fields(rule: Rule) -> set[str]:
    from sglang_doctor.fix.memory_plan import PLAN_FIELDS

    fields = {"mem_plan": PLAN_FIELDS}
    return {f"{let}.{f}" for let, fn in _record_lets(rule).items() for f in fields.get(fn, ())}


def _unknown_names(rule: Rule, captures: set[str]) -> list[str]:
    defined = captures | set(rule.let) | set(vocabulary.BUILTIN_NAMES) | _record_fields(rule)
    out = []
    for name in sorted(_used_names(rule)):
        if name in defined or vocabulary.declared(name):
            continue
        out.append(name)
    return out


# --- flags -----------------------------------------------------------------------------------


def _flag_problems(rule: Rule) -> list[tuple[int, str]]:
    from sglang_doctor.registry import flags
    from sglang_doctor.registry.spelling import spell

    out: list[tuple[int, str]] = []
    releases = flags.releases() if rule.versions.strip() == "*" else flags.releases_in_range(rule.versions)
    if not releases:
        return [(-1, f"versions {rule.versions!r} matches no known SGLang release")]
    for i, fix in enumerate(rule.fixes):
        if fix.kind != "flag" or not fix.flag or "{" in fix.flag:
            continue
        if fix.launcher == "router":
            out.extend((i, msg) for msg in router_flag_problems(fix.flag, fix.versions))
            continue
        span = flags.releases_in_range(fix.versions) if fix.versions else releases
        missing = [r for r in span if r in releases and spell(fix.flag, r) is None]
        if missing:
            where = f"{missing[0]}..{missing[-1]}" if len(missing) > 1 else missing[0]
            out.append((i, f"fix flag {fix.flag} does not exist in {where} ({len(missing)} of the "
                           f"rule's releases); narrow the fix with 'versions:' or the rule's range"))
    return out


def router_flag_problems(flag: str, versions: str | None) -> list[str]:
    """Why a router flag fix is wrong: its sglang-router releases (all, without `versions`) must
    all have the flag, as `sglang_router.launch_router` spells it."""
    from sglang_doctor.registry import router_flags

    try:
        span = router_flags.releases_in_range(versions or "*")
    except ValueError as exc:
        return [f"router fix versions {versions!r}: {exc}"]
    if not span:
        return [f"router fix versions {versions!r} matches no known sglang-router release"]
    missing = [r for r in span if not router_flags.flag_exists(flag, r, allow_abbrev=False)]
    if not missing:
        return []
    have = router_flags.releases_with(flag)
    if not have:
        return [f"router fix flag {flag} is no sglang_router.launch_router flag of any sglang-router release"]
    where = f"{missing[0]}..{missing[-1]}" if len(missing) > 1 else missing[0]
    return [f"router fix flag {flag} does not exist in sglang-router {where} ({len(missing)} of {len(span)} "
            f"releases; it is in {have[0]}..{have[-1]}); narrow the fix with 'versions:'"]


# --- one rule ----------------------------------------------------------------------------------


def _display_path(path: str | None) -> str:
    if not path:
        return "<rule>"
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


class _Lines:
    """YAML line numbers of a rule file's fields (None when the file cannot be read again)."""

    def __init__(self, path: str | None) -> None:
        self.node: Any = None
        if path:
            from sglang_doctor.read.safe_yaml import YamlError, load_yaml_with_node

            try:
                self.node = load_yaml_with_node(Path(path).read_text(encoding="utf-8", errors="replace"))[1]
            except (OSError, YamlError):
                self.node = None

    def __call__(self, *loc: Any) -> int | None:
        from sglang_doctor.read.safe_yaml import line_of

        return line_of(self.node, loc) if self.node is not None else None


_ALTERNATIVE = re.compile(r"(?i)or\b")


def lint_rule(rule: Rule, strict: bool = False, catalog: bool = False) -> list[Problem]:
    path = _display_path(rule.path)
    lines = _Lines(rule.path)
    out: list[Problem] = []

    def add(line: int | None, message: str) -> None:
        out.append(Problem(path, line, rule.id, message))

    captures: set[str] = set()
    for kind in ("any", "require", "exclude"):
        for i, p in enumerate(getattr(rule.match, kind)):
            line = lines("match", kind, i, "regex")
            for why in regex_problems(p.regex):
                add(line, f"match.{kind}[{i}]: {why}")
            if kind == "any" and required_literal(p.regex) is None:
                add(line, f"match.any[{i}]: no literal of 4 or more characters every match contains, so the "
                          "rule runs on every record (anchor it on a distinctive word)")
            if kind != "exclude":
                captures |= set(p.compiled.groupindex)
    if rule.match.check:
        from sglang_doctor.engine.checks import CHECK_CAPTURES

        captures |= CHECK_CAPTURES.get(rule.match.check, frozenset())
    used = _used_names(rule)
    backrefs = " ".join(p.regex for kind in ("any", "require", "exclude") for p in getattr(rule.match, kind))
    for kind in ("any", "require") if strict else ():
        for i, p in enumerate(getattr(rule.match, kind)):
            for name in p.compiled.groupindex:
                if name not in used and f"(?P={name})" not in backrefs and f"\\g<{name}>" not in backrefs:
                    add(lines("match", kind, i, "regex"),
                        f"match.{kind}[{i}]: named group '{name}' is never used (explanation, let, fixes, "
                        "conditions); make it (?:...) or use it")
    for name in _unknown_names(rule, captures):
        add(lines("explanation") or lines("title") or lines("let") or lines("fixes"),
            f"'{name}' is used but no pattern captures it, no let computes it and no fact is called that")
    for message in _record_problems(rule):
        add(lines("let"), message)
    for i, message in _flag_problems(rule):
        add(lines("fixes", i, "flag") if i >= 0 else lines("versions"), message)
    for i, fix in enumerate(rule.fixes):
        if fix.text and _ALTERNATIVE.match(fix.text):
            add(lines("fixes", i, "text"), f"fixes[{i}].text: starts with 'or'; the report labels every fix after "
                                           "the first 'or:' itself")
    if catalog:
        from sglang_doctor.ruledev.catalog_lint import catalog_problems

        for message in catalog_problems(rule):
            add(lines("match", "any", 0, "regex"), message)
    return out


def lint_rules(rules: list[Rule], strict: bool = False, catalog: bool = False) -> list[Problem]:
    out: list[Problem] = []
    for rule in rules:
        out.extend(lint_rule(rule, strict, catalog))
    return out
