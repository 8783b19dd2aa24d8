"""Shell words as the launch command's parser reads them: a small POSIX-quoting lexer.

`shlex` cannot report where a token came from (needed to keep the user's quoting on render),
treats `$((a + b))` as three words and raises on an unbalanced quote; this lexer keeps
`$VAR`, `${VAR}`, `$(...)` and backticks verbatim, never expanded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Tok:
    """A shell token: its kind, its text as written and its value once unquoted."""

    kind: str  # 'word' | 'sep' | 'redir'
    raw: str
    value: str
    start: int
    end: int


_SPACE = " \t\r\f\v"
_OPERATOR_CHARS = ";&|<>()"
_SEP_RE = re.compile(r";;|&&|\|\||\|&|[;&|()]")
_REDIR_RE = re.compile(r"&>>?|\d*(?:>>|>&|>\||<>|<<<|<<-?|<&|>|<)")
SAFE_RE = re.compile(r"^[\w@%+=:,./-]+$", re.ASCII)  # what shlex.quote leaves bare
VAR_REF_RE = re.compile(r"^(?:[A-Za-z_]\w*=)?\$(?:[A-Za-z_]\w*|\{[A-Za-z_]\w*\})$")
ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
NUMBER_RE = re.compile(r"^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def _match_close(text: str, i: int) -> int:
    """Index just past the bracket closing text[i] ('(' or '{'), skipping quoted parts."""
    open_c = text[i]
    close_c = ")" if open_c == "(" else "}"
    depth, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = text.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            i = _skip_dquote(text, i + 1)
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _skip_dquote(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return n


def _lex_dquote(text: str, i: int, buf: list[str]) -> int:
    """Consume a double-quoted body starting at i; return the index past the closing quote."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "\n":  # line continuation inside quotes
                i += 2
                continue
            if nxt in '"\\':  # the only escapes shlex honours; \$ and \` stay verbatim
                buf.append(nxt)
                i += 2
                continue
        if c == "$" and i + 1 < n and text[i + 1] in "({":
            j = _match_close(text, i + 1)
            buf.append(text[i:j])
            i = j
            continue
        buf.append(c)
        i += 1
    return n  # unterminated quote: be lenient, take the rest


def _lex_word(text: str, i: int) -> Tok:
    start, n = i, len(text)
    buf: list[str] = []
    while i < n:
        c = text[i]
        if c in _SPACE or c == "\n" or c in _OPERATOR_CHARS:
            if i == start:  # never stall: an operator the callers did not match becomes a word
                buf.append(c)
                i += 1
            break
        if c == "\\":
            if i + 1 >= n:
                buf.append(c)
                i += 1
            elif text[i + 1] == "\n":
                i += 2
            elif text.startswith("\r\n", i + 1):
                i += 3
            else:
                buf.append(text[i + 1])
                i += 2
        elif c == "'":
            j = text.find("'", i + 1)
            j = n if j < 0 else j
            buf.append(text[i + 1 : j])
            i = j + 1
        elif c == '"':
            i = _lex_dquote(text, i + 1, buf)
        elif c == "$" and i + 1 < n and text[i + 1] in "({":
            j = _match_close(text, i + 1)
            buf.append(text[i:j])
            i = j
        elif c == "`":
            j = i + 1
            while j < n and text[j] != "`":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            buf.append(text[i:j])
            i = j
        else:
            buf.append(c)
            i += 1
    i = min(i, n)
    return Tok("word", text[start:i], "".join(buf), start, i)


def lex(text: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
        elif c == "\\" and text.startswith("\n", i + 1):
            i += 2
        elif c == "\\" and text.startswith("\r\n", i + 1):
            i += 3
        elif c == "#":  # comments start only at a word boundary, as in bash
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c == "\n":
            toks.append(Tok("sep", c, c, i, i + 1))
            i += 1
        elif m := _REDIR_RE.match(text, i):
            toks.append(Tok("redir", m.group(), m.group(), i, m.end()))
            i = m.end()
        elif m := _SEP_RE.match(text, i):
            toks.append(Tok("sep", m.group(), m.group(), i, m.end()))
            i = m.end()
        else:
            tok = _lex_word(text, i)
            toks.append(tok)
            i = tok.end
    return toks


def simple_commands(toks: list[Tok]) -> Iterator[list[Tok]]:
    cur: list[Tok] = []
    for t in toks:
        if t.kind == "sep":
            if cur:
                yield cur
            cur = []
        else:
            cur.append(t)
    if cur:
        yield cur


_LEADING_KEYWORDS = {"then", "do", "else", "{", "!"}


def strip_keywords(toks: list[Tok]) -> list[Tok]:
    i = 0
    while i < len(toks) and toks[i].kind == "word" and toks[i].raw in _LEADING_KEYWORDS:
        i += 1
    return toks[i:]


def join_raw(toks: list[Tok]) -> str:
    """Original text of the tokens on one line: adjacent tokens (2>&1) stay glued."""
    out: list[str] = []
    prev_end = None
    for t in toks:
        if out and t.start != prev_end:
            out.append(" ")
        out.append(t.raw)
        prev_end = t.end
    return "".join(out)


# --------------------------------------------------------------------------- parsing


def basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1]


def pythonish(word: str) -> bool:
    # $PYTHON / ${PY_BIN} cannot be resolved, so any variable counts as an interpreter
    return word.startswith("$") or "python" in basename(word).lower() or basename(word) in ("py", "pypy", "pypy3")
