"""The SGLang release a launch runs, when no log line states it: the docker image's tag
(`lmsysorg/sglang:v0.5.14-cu129`), else bounded by the fields a server_args line prints, else by
the traceback frames of SGLang's own files.

Each release adds and removes ServerArgs fields; the releases whose flag set contains
every field the log shows (as `--field-name`) are the candidates. Each release also moves its
functions: the releases where every SGLang frame's function spans the frame's line are
(registry/frames.py).
"""

from __future__ import annotations

import re

# SGLang's images: lmsysorg/sglang:v0.5.14, :v0.5.5.post3-cu126, :v0.5.14-rocm700-mi30x (a mirror's
# registry or namespace in front of it too).
_IMAGE_TAG = re.compile(r"(?:^|/)sglang:v?(?P<v>\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)(?![\w.])")


def version_from_image(image: str) -> str | None:
    """The release an SGLang docker image's tag names, or None (`latest`, `dev`, another image)."""
    m = _IMAGE_TAG.search(image.split("@", 1)[0])
    return m["v"] if m else None


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


_FRAME = re.compile(r'File "(?P<path>[^"]*sglang/[^"]+\.py)", line (?P<line>\d+), in (?P<func>[\w<>]+)')


def version_from_frames(frames: list[str]) -> tuple[str, str] | None:
    """(release range, how it was inferred) from traceback frames as records hold them
    (`File "PATH", line N, in FUNC`), or None when they do not bound it."""
    parsed = [(m["path"], int(m["line"]), m["func"]) for f in frames if (m := _FRAME.search(f))]
    if not parsed:
        return None
    from sglang_doctor.registry.frames import releases_of

    try:
        found = releases_of(parsed)
    except Exception:  # (no catalog here, or an unreadable one: no inference; zipfile's errors are its own)
        return None
    if found is None:
        return None
    names, used = found
    rng = names[0] if len(names) == 1 else f"{names[0]}-{names[-1]}"
    return rng, f"inferred from {used} traceback frame{'s' if used != 1 else ''} of SGLang's files"
