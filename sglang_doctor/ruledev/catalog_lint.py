"""`rules lint`: a rule that quotes SGLang must match SGLang's own messages.

For a rule whose `sources:` cite an SGLang file (`sglang srt/….py`), one of its `match.any`
patterns must recognise a message of SGLang's catalog (registry/messages.py: every
raise/assert/logger message of the sampled releases) that exists in the releases the rule claims.
A pattern recognises a catalog message when

* it matches the message as a log shows it (Entry.log_forms): alone, after its exception class
  (`ValueError: ...`) or SGLang's logger prefix, or the traceback frame of its call site, with
  the fields filled with "1" and a trailing field left open; or
* its match on one of the rule's own `fires-*.log` fixtures is (part of) the message, fields as real
  values: a pattern that wants `-\\d+`, `torch\\.\\w+` or `\\[...\\]` where the template has a field.
  (A typo there makes the fixture disagree with SGLang's text, since the rule fires on it.)

When none does, the message text has a typo, the release range is wrong, or the rule quotes
text SGLang does not print itself. Rules citing only PyTorch, CUDA or NCCL are not checked (the
catalog is SGLang's). A rule whose SGLang message the catalog cannot hold (formatted at run
time, too little literal text, a bare `assert` with no message) says so with
`catalog_exempt: "<reason>"`.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING

from sglang_doctor.engine.rules import Rule, required_literal

if TYPE_CHECKING:
    import regex

    from sglang_doctor.registry import messages

_SGLANG_SOURCE = re.compile(r"^\s*sglang\s+(?:\S+/)?[\w/]+\.py\b")


def cites_sglang(rule: Rule) -> bool:
    return any(_SGLANG_SOURCE.match(s) for s in rule.sources)


def catalog_installed() -> bool:
    """Whether the packaged message catalog is there (a trimmed install may leave data files out)."""
    from importlib import resources

    from sglang_doctor.registry import messages

    return resources.files("sglang_doctor").joinpath("data", messages.DATA_FILE).is_file()


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
        except (TimeoutError, ValueError):  # (a pattern the search cannot run counts as a match)
            return []
    if _fixture_shows_a_message(rule, catalog, releases):
        return []
    where = rule.versions if rule.versions.strip() not in ("", "*") else "any release"
    return [f"no match.any pattern matches an SGLang message of {where} in the catalog (nor contains one in its "
            "fires fixtures), though the sources cite SGLang: a typo in the message text, or a wrong release "
            "range? (a message the catalog cannot hold: set catalog_exempt: <reason>)"]


def _fixture_shows_a_message(rule: Rule, catalog: "messages.Catalog", releases: list[str]) -> bool:
    """Whether a pattern's match on one of the rule's fires fixtures overlaps the text of a
    catalog message that may exist in one of ``releases``."""
    import regex

    fires, _ = rule.fixtures()
    for path in fires:
        text = path.read_text(errors="replace")
        for p in rule.match.any:
            try:
                found = [(m.start(), m.end()) for m in regex.finditer(p.regex, text, regex.MULTILINE, timeout=2.0)]
            except TimeoutError:
                continue
            for start, end in found:
                # the whole lines of the match: a message's template matches whole lines, and the
                # rule's match is often a part of one
                a, b = text.rfind("\n", 0, start) + 1, text.find("\n", end)
                lines = text[a:b if b >= 0 else len(text)]
                for e in catalog.lookup(lines):
                    em = e.match(lines)
                    if (em and _touches_literal_text(em, start - a, end - a)
                            and any(e.may_exist_in(r) for r in releases)):
                        return True
    return False


def _touches_literal_text(em: "regex.Match[str]", start: int, end: int) -> bool:
    """Whether [start, end) overlaps the template's own text in its match ``em``, not only the
    values of its fields: a rule matching the error that `Capture cuda graph failed: {e}` wraps
    does not quote SGLang's message."""
    fields = sorted(em.span(g) for g in range(1, len(em.regs)) if em.span(g)[0] >= 0)
    pos = max(start, em.start())
    for a, b in fields:
        if pos < a:
            break
        pos = max(pos, b)
    return pos < min(end, em.end())
