"""Stage-one forms of patterns: without the leading part that every serving line has.

A serving log is mostly the scheduler's `Decode batch` / `Prefill batch` lines and uvicorn's access
lines. A pattern such as `Decode batch[^\\n]*?cuda graph: False, gen throughput` makes Hyperscan
follow each of those lines from `Decode batch` on, though only its last part is rare: measured on the
bench log, two such rules cost twice the scanning of all the others together. Stage one needs only a
superset of the lines a pattern matches, so it is handed the pattern from its first part that no
such line has: a line where `A[^\\n]*?B` ends also holds a match of `B` ending there (a gap that
cannot cross a newline), and Hyperscan reports every match end. Stage two still applies the whole
pattern to the record, so the findings are the same.
"""

from __future__ import annotations


# The bulk of a serving log, one line of each shape (SGLang 0.4-0.5: a decode line in a CUDA graph
# with and without a queue, hybrid models' pools, prefill lines, which 0.5 ends with `cuda graph:
# False, input throughput`, and an access line). A leading part that one of these has is not rare.
BULK_LINES = (
    "[2026-05-02 09:20:01 DP0 TP0] Decode batch, #running-req: 31, #token: 9400, token usage: 0.44, "
    "cuda graph: True, gen throughput (token/s): 452.18, #queue-req: 0, ",
    "[2026-05-02 09:20:01 TP0] Decode batch. #running-req: 12, #token: 3124, token usage: 0.87, "
    "accept len: 2.91, cuda graph: True, gen throughput (token/s): 1311.70, #queue-req: 17",
    "[2026-05-02 09:20:01] Decode batch, #running-req: 8, #full token: 5120, full token usage: 0.31, "
    "#swa token: 2048, swa token usage: 0.12, cuda graph: True, gen throughput (token/s): 88.01, #queue-req: 3, ",
    "[2026-05-02 09:20:01 DP1 TP1] Prefill batch, #new-seq: 1, #new-token: 812, #cached-token: 64, "
    "token usage: 0.44, #running-req: 30, #queue-req: 0, #pending-token: 0, cuda graph: False, "
    "input throughput (token/s): 5120.33",
    "[2026-05-02 09:20:01 TP0] Prefill batch. #new-seq: 2, #new-token: 1024, #cached-token: 0, "
    "full token usage: 0.30, mamba usage: 0.10, #running-req: 7, #queue-req: 1",
    '[2026-05-02 09:20:01] INFO:     172.17.0.1:40312 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
)

VERSION = 1  # part of the stage-one cache key (engine/scan.py): change it when the forms change

# Gaps that cannot cross a newline (a `.` does not, unless the pattern sets the s flag).
_GAPS = (r"[^\n]*?", r"[^\n]*", r"[^\n]+?", r"[^\n]+")
_DOT_GAPS = (".*?", ".*", ".+?", ".+")
_FLAGS = r"\(\?[aiLmux]+\)"  # leading global flags (not s: there `.` crosses lines)


def _parts(pattern: str) -> list[tuple[str, str]] | None:
    """(part, the gap before it) at the top level of `pattern`, or None when it cannot be read."""
    gaps = _GAPS if "(?s" in pattern else _GAPS + _DOT_GAPS
    out: list[tuple[str, str]] = []
    depth, start, gap, i, n = 0, 0, "", 0, len(pattern)
    while i < n:
        c = pattern[i]
        if depth == 0:
            g = next((g for g in gaps if pattern.startswith(g, i)), None)
            if g is not None and pattern[i + len(g):i + len(g) + 1] not in ("?", "+", "{"):
                out.append((pattern[start:i], gap))
                gap, i = g, i + len(g)
                start = i
                continue
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            if pattern[j:j + 1] == "^":
                j += 1
            if pattern[j:j + 1] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            if j >= n:
                return None
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return None
        i += 1
    if depth:
        return None
    out.append((pattern[start:], gap))
    return out


def _common(part: str, flags: str) -> bool:
    import regex  # (not at import: the scanner's cache key reads VERSION, a cached plan needs no regex)

    try:
        rx = regex.compile(flags + part)
    except regex.error:
        return True  # (a part that is not a pattern alone: keep it)
    return not part or any(rx.search(line) for line in BULK_LINES)


def stage_one_form(pattern: str) -> str:
    """`pattern` from its first top-level part that no bulk serving line has (see the module doc);
    the pattern itself when its first part is rare already, or every part is common."""
    import regex

    m = regex.match(_FLAGS, pattern)
    flags = m.group() if m else ""
    parts = _parts(pattern[len(flags):])
    if parts is None or len(parts) < 2:
        return pattern
    keep = next((i for i, (part, _gap) in enumerate(parts) if not _common(part, flags)), None)
    if not keep:  # None: every part common; 0: already rare
        return pattern
    if regex.search(r"\(\?P=\w+\)|\\[1-9]", pattern):  # (a back-reference may name a dropped group)
        return pattern
    return flags + parts[keep][0] + "".join(gap + part for part, gap in parts[keep + 1:])
