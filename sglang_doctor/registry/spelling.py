"""Spell a launch flag the way a given SGLang release, or every release of a range, accepts it.

Rules name one flag (e.g. `--cuda-graph-max-bs`); releases rename flags (0.5.14 made it
`--cuda-graph-max-bs-decode`, 0.5.20 dropped the old name). The registry records each
deprecated name with its replacement, which gives the renames in both directions. A
replacement is kept in full: `--disable-cuda-graph` became `--cuda-graph-backend-decode=disabled`
AND `--cuda-graph-backend-prefill=disabled` (the record's hint spells it
`--cuda-graph-backend-{decode,prefill}=disabled`); `--enable-deepep-moe` became
`--moe-a2a-backend deepep` (said only by the flag's help text of later releases).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from sglang_doctor.registry import flags


class Part(NamedTuple):
    """One flag of a replacement. `value` None: the old flag's own value carries over (a rename);
    `<name>`: the value of `--name` in the same command (`--attn-dp-size <dp-size>`)."""

    flag: str
    value: str | None = None


# `--new=value`, `--new value`, `--new-{a,b}=value` (a hint may name two flags with one brace).
_HINT_RE = re.compile(r"^(--[\w-]*?)(?:\{([\w,-]+)\}([\w-]*))?(?:[= ](\S+))?$")
# The help texts of later releases: "Please set `--moe-a2a-backend` to 'deepep' instead",
# "Please set `--ep-size` to the same value as `--tp-size` instead", "Please drop this argument".
_HELP_SET_RE = re.compile(r"set `(--[\w-]+)` to (?:'([^']+)'|the same value as `--([\w-]+)`)")
_HELP_DROP_RE = re.compile(r"(?i)please drop this argument")


def _hint_parts(hint: str) -> tuple[Part, ...]:
    m = _HINT_RE.match(hint.strip())
    if not m:
        return ()
    head, alts, tail, value = m.groups()
    names = [head + a + (tail or "") for a in alts.split(",")] if alts else [head]
    return tuple(Part(n, value) for n in names)


def _help_parts(text: str) -> tuple[Part, ...] | None:
    m = _HELP_SET_RE.search(text)
    if m:
        return (Part(m[1], m[2] if m[2] is not None else f"<{m[3]}>"),)
    return () if _HELP_DROP_RE.search(text) else None


@lru_cache(maxsize=1)
def _replacements() -> dict[str, tuple[Part, ...]]:
    """old name -> its replacement in full, from every release's deprecation records.

    The richest record wins: a hint with values, then the help text's instruction, then a bare
    rename. An empty tuple means the flag is simply to be dropped. Kept across runs (a function of
    the flag catalog alone: reading the help texts for it was ~2.5 ms of a cold start).
    """
    from sglang_doctor._speed.datacache import derived

    made = derived((flags.catalog_text(), flags.helps_text()), "flag-replacements",
                   lambda: {k: [list(p) for p in v] for k, v in _replacements_made().items()})
    return {k: tuple(Part(*p) for p in v) for k, v in made.items()}


def _replacements_made() -> dict[str, tuple[Part, ...]]:
    best: dict[str, tuple[int, tuple[Part, ...]]] = {}
    for spec in flags.deprecated_specs():
        found: list[tuple[int, tuple[Part, ...]]] = []
        if spec.hint:
            parts = _hint_parts(spec.hint)
            if parts:
                found.append((3 if any(p.value for p in parts) else 2, parts))
        helped = _help_parts(spec.help)
        if helped is not None:
            found.append((2, helped))
        if spec.replacement and spec.replacement != spec.name:
            found.append((1, (Part(spec.replacement),)))
        for rank, parts in found:
            if rank > best.get(spec.name, (0, ()))[0]:
                best[spec.name] = (rank, parts)
    return {name: parts for name, (_, parts) in best.items()}


def replacement(flag: str) -> tuple[Part, ...] | None:
    """The recorded replacement of a deprecated or removed flag (None: none is recorded)."""
    return _replacements().get(flag)


@lru_cache(maxsize=1)
def _renames() -> dict[str, str]:
    """old name -> new name, for like-for-like renames only (one flag, the value carried over)."""
    return {old: parts[0].flag for old, parts in _replacements().items()
            if len(parts) == 1 and parts[0].value is None and parts[0].flag != old}


def _forward(flag: str) -> list[Part]:
    """The names `flag` was renamed to, in order, each with the value it takes to mean what `flag`
    meant (a switch renamed into a value: `--disable-piecewise-cuda-graph` ->
    `--cuda-graph-backend-prefill disabled`; a later like-for-like rename keeps that value)."""
    out: list[Part] = []
    seen = {flag}
    cur, carried = flag, None
    while True:
        parts = replacement(cur)
        if not parts or len(parts) != 1 or parts[0].flag in seen:
            return out
        new, value = parts[0]
        if value is not None and carried is not None:
            return out
        carried = value if value is not None else carried
        out.append(Part(new, carried))
        seen.add(new)
        cur = new


def value_for(flag: str, spelled: str) -> str | None:
    """The value `spelled` (a respelling of the switch `flag`) needs to mean what `flag` meant."""
    return next((p.value for p in _forward(flag) if p.flag == spelled), None)


def releases_of(version: str | None) -> list[str]:
    """Registry releases for a stated version ('0.5.14') or an inferred range ('0.5.10-0.5.14')."""
    if not version:
        return []
    ends = [p.strip() for p in str(version).split("-") if p.strip()]
    return [v for v in dict.fromkeys(ends) if flags.known_release(v)]


def single_release(version: str | None) -> str | None:
    """The registry release of a stated version; None when unknown or only bounded by a range."""
    rels = releases_of(version)
    return rels[0] if len(rels) == 1 else None


def target_releases(version: str | None) -> list[str]:
    """Every registry release a command for `version` must work on: the stated release (or the
    newest recorded one before it), every release of an inferred range, or the newest release
    when the version is unknown (a corrected command is then spelled as the newest takes it)."""
    ends = releases_of(version)
    if not ends:
        return [flags.releases()[-1]]
    if len(ends) == 1:
        return [flags.pick_release(flags.releases(), ends[0], "SGLang")]
    inside = flags.releases_in_range(f"{ends[0]}-{ends[1]}")
    return inside or [flags.pick_release(flags.releases(), ends[1], "SGLang")]


def spell_for(flag: str, version: str | None) -> str | None:
    """Spelling for a version or range: one every release of it accepts, when there is one; else
    the flag as written when some release of it takes it, else the spelling of the range's newest
    end (a corrected command leaves out a flag not every release takes: fix/correct.writable)."""
    if not releases_of(version):
        return flag
    targets = target_releases(version)
    found = spell_value(flag, None, targets)
    if found is not None:
        return found.flag
    if any(accepted(flag, r) for r in targets):
        return flag  # the releases disagree: the rule's own spelling (the command leaves it out)
    return spell(flag, targets[-1])


def accepted(flag: str, release: str) -> bool:
    """Whether `release`'s parser takes `flag` exactly (a name or alias, no abbreviation)."""
    return flags.resolve(flag, release, allow_abbrev=False) is not None


def _backward(flag: str) -> list[Part]:
    """Older names of `flag`, nearest first, each with the value of `flag` it stands for (None:
    any value, a like-for-like rename; else the old switch means `flag` set to that value)."""
    out: list[Part] = []
    frontier = [Part(flag, None)]
    seen = {flag}
    while frontier:
        nxt = []
        for cur, carried in frontier:
            for old, parts in _replacements().items():
                # (an old switch that did more, `--disable-cuda-graph` for both phases, still does it)
                part = next((p for p in parts if p.flag == cur), None)
                if old in seen or part is None or (len(parts) > 1 and part.value is None):
                    continue
                value = part.value
                if value is not None and carried is not None:
                    continue
                seen.add(old)
                nxt.append(Part(old, value if value is not None else carried))
        out += nxt
        frontier = nxt
    return out


def _candidates(flag: str, value: str | None) -> list[Part]:
    """`flag value` and its other spellings that mean the same: (name, value to give it); a switch
    gets value None."""
    out = [Part(flag, value)]
    for name, carried in _forward(flag):
        if carried is None:
            out.append(Part(name, value))
        elif value is None and not carried.startswith("<"):  # a switch renamed into a value of another flag
            out.append(Part(name, carried))
    for name, stands_for in _backward(flag):
        if stands_for is None:
            out.append(Part(name, value))
        elif value is not None and value == stands_for:  # the value an old switch meant
            out.append(Part(name, None))
    return out


def spell_value(flag: str, value: str | None, releases: list[str]) -> Part | None:
    """`flag value` spelled so that every release of `releases` accepts it and it means the same:
    the flag itself, a rename, an old switch for one value of a new flag, or a new flag's value for
    an old switch. Among several, the one the newest release does not call deprecated, then the
    fix's own. None when no spelling works in all of them."""
    if not releases:
        return Part(flag, value)
    fits = [c for c in _candidates(flag, value) if all(accepted(c.flag, r) for r in releases)]
    if not fits:
        return None
    newest = releases[-1]

    def rank(c: Part) -> tuple[int, int]:
        spec = flags.resolve(c.flag, newest, allow_abbrev=False)
        return (1 if spec is not None and spec.deprecated else 0, 0 if c.flag == flag else 1)

    best = min(fits, key=rank)
    spec = flags.resolve(best.flag, newest, allow_abbrev=False)
    return Part(spec.name, best.value) if spec is not None else best


def spell_across(flag: str, releases: list[str]) -> str | None:
    """A like-for-like spelling of `flag` (itself or a rename) that every release accepts."""
    found = spell_value(flag, None, releases)
    return found.flag if found is not None and found.value is None else None


def spell(flag: str, release: str | None) -> str | None:
    """A spelling `release` accepts for `flag` (for some value of it), or None when it has no
    equivalent. With no release known, the flag is returned as written."""
    if release is None:
        return flag
    found = spell_value(flag, None, [release])
    if found is not None:
        return found.flag
    old = next((p.flag for p in _backward(flag) if accepted(p.flag, release)), None)
    return flags.resolve(old, release, allow_abbrev=False).name if old else None  # type: ignore[union-attr]


def in_range(version: str, spec: str) -> bool:
    """Whether a stated version (or any release of an inferred range) is inside `spec`."""
    wanted = set(flags.releases_in_range(spec))
    rels = releases_of(version)
    if not rels:
        return True  # unknown to the registry: keep the fix
    if len(rels) == 2:  # an inferred range: any overlap counts
        inside = flags.releases_in_range(f"{rels[0]}-{rels[1]}")
        return any(r in wanted for r in inside)
    return rels[0] in wanted


def _expand_braces(text: str) -> list[str]:
    """`--cuda-graph-backend-{decode,prefill}=disabled` → both flags' `=disabled` forms."""
    i, j = text.find("{"), text.find("}")
    if i < 0 or j < i:
        return [text]
    return [out for alt in text[i + 1:j].split(",") for out in _expand_braces(text[:i] + alt.strip() + text[j + 1:])]


def current_spelling(flag: str, release: str | None) -> list[tuple[str, str | None]]:
    """How `release` says a switch without its deprecated spelling: [(flag, value)], [] when it has none.

    A deprecated switch whose hint spells the replacement with a value (`--disable-cuda-graph` →
    `--cuda-graph-backend-{decode,prefill}=disabled` in 0.5.14+) becomes those flags and values; other
    flags are spelled as `spell` does. With no release known, the flag as written.
    """
    if release is None:
        return [(flag, None)]
    spec = flags.resolve(flag, release, allow_abbrev=False)
    if spec is not None and spec.deprecated and spec.hint and spec.hint.startswith("--"):
        out: list[tuple[str, str | None]] = []
        for part in _expand_braces(spec.hint):
            name, sep, value = part.replace(" ", "=", 1).partition("=")
            if flags.flag_exists(name, release, allow_abbrev=False):
                out.append((name, value.strip() or None if sep else None))
        if out:
            return out
    if spec is None:
        # gone from this release: its replacement, with the value the deprecation record gives
        new = spell(flag, release)
        if new is None:
            return []
        return [(new, value_for(flag, new) if new != flag else None)]
    new = spell(flag, release)
    return [(new, None)] if new else []
