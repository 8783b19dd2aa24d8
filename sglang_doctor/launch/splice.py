"""Write an edited launch back into the text the user gave, keeping everything around it.

The user's command is more than its launch: `docker rm -f x && docker run … bash -c "pip install …
&& python3 -m sglang.launch_server …" | tee server.log &`, written over several lines with `\\`
continuations. The corrected command must be that same text with only the launch's words changed:
pasted, it must still run in the container, after the install step, with its log and in the
background. Words the edit keeps keep their place and the space (or line break) before them; new
words go where the old ones stood, a new flag of a multi-line command on a line of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sglang_doctor.launch.command import DEFAULT_ALIASES, LaunchCommand, _parse_simple, render, render_words
from sglang_doctor.launch.shell import Tok, join_raw, lex, simple_commands, strip_keywords


@dataclass(frozen=True)
class _Quoted:
    """A `-c` string holding the launch: the token, and whether its value is its raw text unquoted."""

    tok: Tok
    plain: bool  # value == raw[1:-1]: positions in the value are positions in the raw text, plus 1


def _locate(text: str, depth: int = 0) -> tuple[list[_Quoted], list[Tok]] | None:
    """The launch's simple command in `text` (the one parse_command reads), and the `-c` strings
    around it, outermost first."""
    simples = [strip_keywords(s) for s in simple_commands(lex(text))]
    for s in simples:
        if _parse_simple(s, DEFAULT_ALIASES) is not None:
            return [], s
    if depth >= 3:
        return None
    for s in simples:
        for a, b in zip(s, s[1:]):
            if a.value == "-c" and b.kind == "word" and "sglang" in b.value:
                found = _locate(b.value, depth + 1)
                if found:
                    q = b.raw[:1]
                    plain = q in ("'", '"') and b.raw.endswith(q) and b.value == b.raw[1:-1]
                    return [_Quoted(b, plain), *found[0]], found[1]
    return None


def _escape_for(raw: str) -> Callable[[str], str]:
    """How a new word is written inside the quotes `raw` uses."""
    if raw.startswith("'"):
        return lambda w: w.replace("'", "'\\''")
    if raw.startswith('"'):
        return lambda w: w.replace("\\", "\\\\").replace('"', '\\"')
    return lambda w: w


def _units(toks: list[Tok]) -> list[tuple[int, int, str]]:
    """The tokens as render_words writes them: (start, end, word); a redirection with its target
    (`> log`) and glued tokens (`2>&1`) are one word each."""
    out: list[tuple[int, int, str]] = []
    k = 0
    while k < len(toks):
        group = [toks[k]]
        if toks[k].kind == "redir" and k + 1 < len(toks) and toks[k + 1].kind == "word":
            group.append(toks[k + 1])
        while k + len(group) < len(toks) and toks[k + len(group)].start == group[-1].end and group[-1].kind == "redir":
            group.append(toks[k + len(group)])
        out.append((group[0].start, group[-1].end, join_raw(group)))
        k += len(group)
    return out


def _merge(text: str, toks: list[Tok], new: list[str], escape: Callable[[str], str]) -> str:
    """The words `new` written over the tokens `toks` of `text` (from the first token's start to the
    last one's end): kept words as the user wrote them, with the space before them."""
    units = _units(toks)
    gaps = [""] + [text[units[k - 1][1]:units[k][0]] for k in range(1, len(units))]
    breaks = [g for g in gaps if "\n" in g]
    flag_break = breaks[-1] if breaks else " "  # a multi-line command: a new flag on a line of its own
    out: list[str] = []
    import difflib  # (a corrected command written over the original only)

    matcher = difflib.SequenceMatcher(a=[u[2] for u in units], b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i1, i2):
                gap = (gaps[k] or " ") if out else ""  # (the first word kept after new ones, or after removed ones)
                out.append(gap + text[units[k][0]:units[k][1]])
            continue
        for n, j in enumerate(range(j1, j2)):
            if not out and n == 0:
                sep = ""
            elif new[j].startswith("-"):
                sep = flag_break
            elif n == 0 and i1 < i2:
                sep = gaps[i1]  # where the old word stood
            else:
                sep = " "
            out.append(sep + escape(new[j]))
    return "".join(out)


def splice(text: str, cmd: LaunchCommand) -> str:
    """`text` (a command line or a script) with its launch replaced by `cmd`; `render(cmd)` when
    no launch is found in it."""
    found = _locate(text)
    if found is None:
        return render(cmd)
    wrappers, toks = found
    return _put(text, wrappers, toks, render_words(cmd), lambda w: w)


def _put(text: str, wrappers: list[_Quoted], toks: list[Tok], new: list[str], escape: Callable[[str], str]) -> str:
    if not wrappers:
        start, end = toks[0].start, toks[-1].end
        return text[:start] + _merge(text, toks, new, escape) + text[end:]
    outer, rest = wrappers[0], wrappers[1:]
    tok = outer.tok
    inner_escape = _escape_for(tok.raw)
    if outer.plain:  # edit inside the quotes, in place: the user's own escapes stay as written
        body = _put(tok.raw[1:-1], rest, toks, new, lambda w: escape(inner_escape(w)))
        return text[:tok.start] + tok.raw[0] + body + tok.raw[-1] + text[tok.end:]
    body = _put(tok.value, rest, toks, new, lambda w: w)
    quote = tok.raw[:1] if tok.raw[:1] in ("'", '"') else "'"
    return text[:tok.start] + quote + escape(_escape_for(quote)(body)) + quote + text[tok.end:]


def launch_lines(text: str, edited: str) -> tuple[str, str]:
    """The lines of a script that hold its launch statement, before and after the edit (the
    statement's first line to the line of its last word; the rest of the script is unchanged)."""
    found = _locate(text)
    if found is None:
        return text, edited
    wrappers, toks = found
    start = wrappers[0].tok.start if wrappers else toks[0].start
    end = wrappers[0].tok.end if wrappers else toks[-1].end
    first = text.rfind("\n", 0, start) + 1
    stop = text.find("\n", end)  # (the text after the launch is the same in both)
    stop_new = len(edited) - (len(text) - stop) if stop >= 0 else len(edited)
    return text[first:stop if stop >= 0 else len(text)].rstrip(), edited[first:stop_new].rstrip()
