"""Spell a launch flag the way a given SGLang release accepts it.

Rules name one flag (e.g. `--cuda-graph-max-bs`); releases rename flags
(0.5.14 made it `--cuda-graph-max-bs-decode`, 0.5.20 dropped the old name). The
registry records each deprecated name with its replacement, which gives the renames in
both directions.
"""

from __future__ import annotations

from functools import lru_cache

from sglang_doctor.registry import flags


@lru_cache(maxsize=1)
def _renames() -> dict[str, str]:
    """old name -> new name, from every release's deprecation records."""
    return {old: new for old, (new, _) in _rename_records().items()}


@lru_cache(maxsize=1)
def _rename_records() -> dict[str, tuple[str, str | None]]:
    """old name -> (new name, the value the new name takes for it, if the record gives one).

    A switch renamed into a value of a new flag (`--disable-piecewise-cuda-graph` ->
    `--cuda-graph-backend-prefill=disabled`) keeps its meaning only with that value.
    """
    out: dict[str, tuple[str, str | None]] = {}
    for rel in flags.releases():
        table = flags.flags_for(rel)
        for name in list(table):
            spec = table[name]
            if spec.deprecated and spec.replacement and spec.replacement != spec.name:
                out.setdefault(spec.name, (spec.replacement, _hint_value(spec.hint, spec.replacement)))
    return out


def _hint_value(hint: str | None, flag: str) -> str | None:
    """'--new=value' / '--new value' -> 'value' when the hint names `flag`."""
    if not hint or not hint.startswith(flag):
        return None
    rest = hint[len(flag):]
    value = rest[1:] if rest[:1] in ("=", " ") else ""
    return value.strip() or None


def value_for(flag: str, spelled: str) -> str | None:
    """The value `spelled` (a respelling of the switch `flag`) needs to mean what `flag` meant."""
    records = _rename_records()
    seen = {flag}
    cur = flag
    while cur in records:
        new, value = records[cur]
        if new == spelled:
            return value
        if new in seen:  # a loop in the records
            return None
        seen.add(new)
        cur = new
    return None


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


def spell_for(flag: str, version: str | None) -> str | None:
    """Spelling for a version or range: renamed only when both ends of the range agree."""
    rels = releases_of(version)
    if not rels:
        return flag
    spelled = {spell(flag, r) for r in rels}
    if len(spelled) == 1:
        return spelled.pop()
    return flag if flag in spelled else next((s for s in spelled if s), None)


def spell(flag: str, release: str | None) -> str | None:
    """The spelling `release` accepts for `flag`, or None when it has no equivalent.

    With no release known, the flag is returned as written.
    """
    if release is None:
        return flag
    spec = flags.resolve(flag, release, allow_abbrev=False)
    if spec is not None:
        if spec.deprecated and spec.replacement:
            new = flags.resolve(spec.replacement, release, allow_abbrev=False)
            # Only a like-for-like rename; `--disable-cuda-graph` -> `--cuda-graph-backend-decode
            # disabled` changes meaning of the value, and the old flag still works there.
            if new is not None and new.takes_value == spec.takes_value and not spec.hint:
                return new.name
        return spec.name
    renames = _renames()
    # An old name on a newer release: follow renames forward.
    seen = {flag}
    cur = flag
    while cur in renames and renames[cur] not in seen:
        cur = renames[cur]
        seen.add(cur)
        if flags.flag_exists(cur, release, allow_abbrev=False):
            return flags.resolve(cur, release, allow_abbrev=False).name  # type: ignore[union-attr]
    # A new name on an older release: follow renames backward.
    for old, new in renames.items():
        if new == flag and flags.flag_exists(old, release, allow_abbrev=False):
            return flags.resolve(old, release, allow_abbrev=False).name  # type: ignore[union-attr]
    return None


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
