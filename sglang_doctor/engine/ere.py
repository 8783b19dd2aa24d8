"""Rule regexes as POSIX extended regexes, for `grep -E -f` (the speed benchmark's reference)."""

from __future__ import annotations

import regex

_CLASSES = {r"\d": "[0-9]", r"\D": "[^0-9]", r"\w": "[[:alnum:]_]", r"\W": "[^[:alnum:]_]",
            r"\s": "[[:space:]]", r"\S": "[^[:space:]]"}
_IN_CLASS = {r"\d": "0-9", r"\w": "[:alnum:]_", r"\s": "[:space:]"}


def to_ere(pattern: str) -> str | None:
    """Translate the Python-regex subset rules use; None when a construct has no ERE form."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        two = pattern[i:i + 2]
        if c == "\\" and i + 1 < n:
            if in_class and pattern[i + 1] in "]-^":
                return None  # POSIX has no escapes inside brackets
            if two in _CLASSES:
                out.append(_IN_CLASS.get(two, "") if in_class else _CLASSES[two])
                if in_class and two not in _IN_CLASS:
                    return None
            elif pattern[i + 1] == "n":
                return None
            else:
                out.append(two)
            i += 2
            continue
        if in_class:
            out.append(c)
            if c == "]":
                in_class = False
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1:i + 2] == "]":
                out.append("]")
                i += 1
            i += 1
            continue
        if two == "(?":
            m = regex.match(r"\(\?P<\w+>|\(\?:", pattern[i:])
            if not m:
                return None  # lookarounds, inline flags
            out.append("(")
            i += m.end()
            continue
        if c in "*+?}" and pattern[i + 1:i + 2] == "?":
            out.append(c)  # lazy -> greedy: same set of matching lines
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)
