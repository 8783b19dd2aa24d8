"""`rules lint`: a rule that quotes SGLang must match SGLang's own messages.

For a rule whose `sources:` cite an SGLang file (`sglang srt/….py`), its `match.any` patterns are
searched in the message catalog (registry/messages.py, every raise/assert/logger message of the
releases, fields filled in): when none of them matches a template of the releases the rule claims,
the message text has a typo or names a message SGLang does not print. Rules quoting PyTorch, CUDA
or NCCL text are not checked (the catalog is SGLang's). A rule that matches a message SGLang
formats at run time (the catalog holds its template only as `{e}`) says so with
`catalog_exempt: "<reason>"`.
"""

from __future__ import annotations

import re

from sglang_doctor.engine.rules import Rule, required_literal

_SGLANG_SOURCE = re.compile(r"^\s*sglang\s+(?:\S+/)?[\w/]+\.py\b")


def cites_sglang(rule: Rule) -> bool:
    return any(_SGLANG_SOURCE.match(s) for s in rule.sources)


def catalog_problems(rule: Rule) -> list[str]:
    """Why the rule's patterns match no catalog message of its releases ([] when one does)."""
    if rule.catalog_exempt or not cites_sglang(rule) or not rule.match.any:
        return []
    from sglang_doctor.registry import flags, messages  # (only when linting: the catalog is large)

    releases = flags.releases() if rule.versions.strip() in ("", "*") else flags.releases_in_range(rule.versions)
    catalog = messages.load()
    for p in rule.match.any:
        try:
            if catalog.templates_matching(p.regex, releases, required_literal(p.regex)):
                return []
        except (TimeoutError, ValueError):  # (a pattern the blob search cannot run counts as a match)
            return []
    where = rule.versions if rule.versions.strip() not in ("", "*") else "any release"
    return [f"no match.any pattern matches an SGLang message of {where} in the catalog, though the sources cite "
            "SGLang: a typo in the message text? (a message formatted at run time: set catalog_exempt: <reason>)"]
