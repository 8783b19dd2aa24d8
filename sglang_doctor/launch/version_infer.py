"""Bound the SGLang release from the fields a server_args line prints.

Each release adds and removes ServerArgs fields; the releases whose flag set contains
every field the log shows (as `--field-name`) are the candidates.
"""

from __future__ import annotations


def infer_version(fields: set[str]) -> tuple[str, str] | None:
    """(release range, how it was inferred) or None when the registry cannot tell."""
    try:
        from sglang_doctor.registry import flags
    except ImportError:  # registry not available
        return None
    wanted = {"--" + f.replace("_", "-") for f in fields}
    # Some fields are not flags (no_cli); require most fields to exist.
    try:
        hits_by_release = flags.release_hits(wanted)
    except Exception:  # an unreadable registry: no inference
        return None
    candidates = [(hits, rel) for rel, hits in hits_by_release if wanted and hits >= 0.97 * len(wanted)]
    if not candidates:
        return None
    best = max(h for h, _ in candidates)
    top = [r for h, r in candidates if h == best]
    rng = top[0] if len(top) == 1 else f"{top[0]}-{top[-1]}"
    return rng, f"inferred from the {len(fields)} server_args fields ({best} known to these releases)"
