"""Parse the ``server_args=...`` line SGLang logs at launch into Python values.

Two shapes exist in released SGLang:

* up to 0.5.14: ``logger.info(f"{server_args=}")`` prints the dataclass repr,
  ``server_args=ServerArgs(model_path='/m', tp_size=1, ...)``, whose values can
  be nested dataclass reprs (``CudaGraphConfig(decode=PhaseConfig(...))``),
  ``LoRARef(...)``, enum reprs (``<Foo.BAR: 'bar'>``), ``inf``/``nan`` and so on.
* newer releases log ``server_args={'model_path': '/m', ...}`` (a dict repr).

The text is never handed to ``eval``/``literal_eval``: log lines are untrusted,
are often cut by log shippers, and may contain reprs that are not Python
literals at all.  A small tokenizer feeds a recursive-descent parser with an
explicit depth limit; anything it cannot type is kept as its raw source text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ServerArgsParse", "find_server_args", "parse_server_args"]

# Real lines are tens of KB; the cap bounds time and memory on runaway input
# (anything past it is treated as cut off).
MAX_CHARS = 2_000_000
# Real reprs nest about 4 levels; deeper values are kept as raw text.  This
# keeps Python recursion far below the interpreter limit.
MAX_DEPTH = 64

_MARKER = re.compile(r"(?<!\w)server_args=")
# Prefer a marker followed by ``Name(`` or ``{`` when the line has several.
_GOOD_START = re.compile(r"\s*(?:\{|[^\W\d][\w.]*\()")

# One token per match; leading blanks are folded into the match so ``finditer``
# walks the line without a separate whitespace pass.  Token spans may therefore
# start with blanks: raw-text slices are stripped and adjacency (``Name(``) is
# checked on the characters themselves.
_TOKEN = re.compile(
    r"""[ \t\f\v]*(?:
      (?P<str>[bBrRuU]{0,2}(?:'[^'\\]*(?:\\.[^'\\]*)*'|"[^"\\]*(?:\\.[^"\\]*)*"))
    | (?P<open>[bBrRuU]{0,2}['"])
    | (?P<num>[-+]?(?:(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?[jJ]?
                     |(?:inf|nan)(?![\w.])))
    | (?P<name>[^\W\d]\w*(?:\.[^\W\d]\w*)*)
    | (?P<ell>\.\.\.)
    | (?P<punct>[()\[\]{},:=<>])
    | (?P<other>[^ \t\f\v])
    )""",
    re.VERBOSE | re.DOTALL,
)
_WS = re.compile(r"[ \t\f\v]*")
# Coarse scanner for skipping junk: strings whole, everything else in runs.
_SKIP = re.compile(
    r"""(?P<str>[bBrRuU]{0,2}(?:'[^'\\]*(?:\\.[^'\\]*)*'|"[^"\\]*(?:\\.[^"\\]*)*"))
      | (?P<open>['"])
      | (?P<punct>[()\[\]{}<>,:=]+)
      | (?P<blank>[ \t\f\v]+)
      | (?P<text>[^'"()\[\]{}<>,:=\s]+|\s)""",
    re.VERBOSE | re.DOTALL,
)

_ESCAPE = re.compile(
    r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|[0-7]{1,3}|.)",
    re.DOTALL,
)
_SIMPLE_ESCAPES = {
    "\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r",
    "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\n": "",
}

_CLOSER = {"(": ")", "[": "]", "{": "}", "<": ">"}
# Tokens after which ``<`` starts an angle repr rather than being a stray char.
_VALUE_START = frozenset({"(", "[", "{", ",", ":", "=", "<"})
_OPENERS = frozenset({"(", "[", "{"})
_PATH_TYPES = frozenset(
    {"Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath", "PureWindowsPath"}
)
_SET_TYPES = frozenset({"set", "frozenset"})

_CALL_STOPS = frozenset({",", ")"})
_LIST_STOPS = frozenset({",", "]"})
_KEY_STOPS = frozenset({",", ":", "}"})
_DICT_STOPS = frozenset({",", "}"})
_ANGLE_STOPS = frozenset({">"})

@dataclass
class ServerArgsParse:
    """Result of :func:`parse_server_args`.

    ``fields`` maps names to ``None``/``bool``/``int``/``float``/``str``/``bytes``,
    lists (tuples and sets become lists) and dicts.  A nested call repr such as
    ``PhaseConfig(backend='full')`` becomes ``{"__type__": "PhaseConfig",
    "backend": "full"}`` (positional arguments under ``"__args__"``), an enum
    repr becomes its value, ``PosixPath('/x')`` becomes ``'/x'``, and anything
    else (``torch.bfloat16``, ``<function ...>``, junk) is kept as its text.

    ``shape`` is ``"dataclass"`` (``ServerArgs(...)``), ``"dict"`` (``{...}``) or
    ``"unknown"`` (no marker, or nothing recognisable after it).
    """

    fields: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False
    shape: str = "unknown"
    class_name: str | None = None
    found: bool = False  # a ``server_args=`` marker was present


class _Truncated(Exception):
    """Input ended inside a value."""


def find_server_args(line: str) -> bool:
    """Cheap check that ``line`` carries a ``server_args=`` dump."""
    return isinstance(line, str) and "server_args=" in line and _MARKER.search(line) is not None


def parse_server_args(text: str) -> ServerArgsParse:
    """Parse the first ``server_args=`` dump in ``text``; never raises.

    Only the rest of the line after the marker is read (a repr never contains a
    raw newline, so a following line means the dump was cut).  Fields whose
    value is complete and followed by ``,`` or the closing bracket are kept;
    a field cut mid-value is dropped and ``truncated`` is set.
    """
    result = ServerArgsParse()
    try:
        _parse_into(text, result)
    except Exception:  # noqa: BLE001 - a diagnostics tool must not crash on odd logs
        result.truncated = True
    return result


def _parse_into(text: str, result: ServerArgsParse) -> None:
    if not isinstance(text, str) or "server_args=" not in text:
        return
    marker = None
    for m in _MARKER.finditer(text):
        if marker is None:
            marker = m
        if _GOOD_START.match(text, m.end()):
            marker = m
            break
    if marker is None:
        return
    result.found = True
    start = marker.end()
    end = min(len(text), start + MAX_CHARS)
    newline = _first_newline(text, start, end)
    if newline >= 0:
        end = newline
    # A dump cut by the newline or the cap simply runs out of input mid-value.
    try:
        _Parser(text, start, end).parse_top(result)
    except _Truncated:
        result.truncated = True


def _first_newline(text: str, start: int, end: int) -> int:
    hits = [i for i in (text.find("\n", start, end), text.find("\r", start, end)) if i >= 0]
    return min(hits) if hits else -1


def _decode_escape(m: re.Match[str]) -> str:
    esc = m.group(1)
    head = esc[0]
    if head in "xuU" and len(esc) > 1:  # a bare ``\x`` fell through to ``.``
        code = int(esc[1:], 16)
        return chr(code) if code <= 0x10FFFF else m.group(0)
    if head == "N" and len(esc) > 1:
        try:
            return unicodedata.lookup(esc[2:-1])
        except KeyError:
            return m.group(0)
    if head in "01234567":
        return chr(int(esc, 8))
    return _SIMPLE_ESCAPES.get(esc, m.group(0))


def _decode_bytes_escape(m: re.Match[str]) -> str:
    esc = m.group(1)
    if esc[0] in "uUN":  # not escapes in a bytes literal
        return m.group(0)
    if esc[0] in "01234567":
        return chr(int(esc, 8) & 0xFF)  # Python wraps octal escapes in bytes
    return _decode_escape(m)


def _string_value(tok: str) -> str | bytes:
    q = 0
    while tok[q] not in "'\"":  # skip the (at most two letter) prefix
        q += 1
    prefix = tok[:q].lower()
    body = tok[q + 1 : -1]
    raw = "r" in prefix
    if "b" in prefix:
        if not raw and "\\" in body:
            body = _ESCAPE.sub(_decode_bytes_escape, body)
        return body.encode("latin-1", errors="replace")
    if not raw and "\\" in body:
        body = _ESCAPE.sub(_decode_escape, body)
    return body


def _number_value(tok: str) -> Any:
    try:
        return int(tok)  # the common case; int() tolerates blanks and ``_``
    except ValueError:
        pass
    body = tok.strip()
    if body[-1] in "jJ" or body.lstrip("+-").replace("_", "").isdigit():
        return body  # complex, or an int longer than int() accepts: keep text
    try:
        return float(body)
    except ValueError:
        return body


class _Parser:
    """Recursive-descent parser over a lazily tokenized slice of the line.

    Tokens are ``(kind, start, end)``; ``kind`` is the punctuation character
    itself or one of ``str open num name ell other eof``.
    """

    def __init__(self, text: str, pos: int, end: int) -> None:
        self.text = text
        self.end = end
        self._matches = _TOKEN.finditer(text, pos, end)
        self._peeked: tuple[str, int, int] | None = None
        self.last_end = pos  # end offset of the last consumed token

    # -- tokenizer ---------------------------------------------------------

    def peek(self) -> tuple[str, int, int]:
        tok = self._peeked
        if tok is None:
            m = next(self._matches, None)
            if m is None:
                tok = ("eof", self.end, self.end)
            else:
                kind = m.lastgroup or "other"
                start, end = m.span()
                if kind == "punct":
                    kind = self.text[end - 1]
                tok = (kind, start, end)
            self._peeked = tok
        return tok

    def next(self) -> tuple[str, int, int]:
        tok = self._peeked or self.peek()
        self._peeked = None
        if tok[0] != "eof":
            self.last_end = tok[2]
        return tok

    def tok_text(self, tok: tuple[str, int, int]) -> str:
        return self.text[tok[1] : tok[2]].lstrip()

    def _is_kwarg(self, pos: int) -> bool:
        """Whether a name ending at ``pos`` is followed by ``=`` (not ``==``)."""
        pos = self._nonblank(pos)
        text, end = self.text, self.end
        return text.startswith("=", pos, end) and not text.startswith("==", pos, end)

    def _nonblank(self, pos: int) -> int:
        """Offset of the first non-blank character at or after ``pos``."""
        if self.text[pos : pos + 1] in (" ", "\t"):
            return _WS.match(self.text, pos, self.end).end()
        return pos

    # -- top level ---------------------------------------------------------

    def parse_top(self, result: ServerArgsParse) -> None:
        tok = self.next()
        kind = tok[0]
        if kind == "{":
            result.shape = "dict"
            self._dict_body(0, result.fields, top=True)
        elif kind == "name":
            nxt = self.peek()[0]
            if not self.text.startswith("(", tok[2], self.end) and (
                nxt != "eof" or self.tok_text(tok) in ("None", "True", "False")
            ):
                return  # e.g. ``server_args=None``: nothing to report
            result.shape = "dataclass"
            result.class_name = self.tok_text(tok)
            if self.next()[0] == "eof":
                raise _Truncated
            args: list[Any] = []
            self._call_body(0, result.fields, args)
            if args:
                result.fields.setdefault("__args__", args)
        elif kind in ("eof", "open"):
            raise _Truncated

    # -- values ------------------------------------------------------------

    def value(self, depth: int, stops: frozenset[str]) -> Any:
        """Parse one value; on return the next token is one of ``stops``."""
        tok = self._peeked or self.peek()
        kind, start = tok[0], tok[1]
        # Scalars inline: they are most tokens of a real line.
        if kind == "num":
            self.next()
            val = _number_value(self.text[start : tok[2]])
        elif kind == "str":
            self.next()
            val = _string_value(self.text[start : tok[2]])
        elif kind == "eof" or kind == "open":
            raise _Truncated
        elif kind in stops:
            return ""  # missing value, e.g. ``a=, b=1``
        elif depth > MAX_DEPTH:
            self.skip(stops, at_value_start=True)  # too deep: keep it as text
            return self.text[start : self.last_end].strip()
        else:
            val = self._compound(depth)
        nxt = (self._peeked or self.peek())[0]
        if nxt in stops:
            return val
        if nxt == "eof":
            raise _Truncated
        # Trailing junk after a value (``1 2``, ``0x1f``): keep the span as text.
        self.skip(stops, at_value_start=False)
        return self.text[start : self.last_end].strip()

    def _compound(self, depth: int) -> Any:
        tok = self.next()
        kind = tok[0]
        if kind == "name":
            name = self.tok_text(tok)
            if self.text.startswith("(", tok[2], self.end):
                self.next()
                return self._call(depth, name)
            if name == "None":
                return None
            if name == "True":
                return True
            if name == "False":
                return False
            return name  # e.g. ``torch.bfloat16``
        if kind == "[":
            items: list[Any] = []
            self._seq_body(depth, items, _LIST_STOPS, "]")
            return items
        if kind == "(":
            items = []
            trailing_comma = self._seq_body(depth, items, _CALL_STOPS, ")")
            if len(items) == 1 and not trailing_comma:
                return items[0]  # parenthesised value, not a tuple
            return items  # tuples become lists, like JSON
        if kind == "{":
            out: dict[Any, Any] = {}
            members = self._dict_body(depth, out, top=False)
            return out if members is None else members
        if kind == "<":
            return self._angle(depth, tok[1])
        if kind == "ell":
            return "..."  # recursion marker in a repr
        # stray punctuation or junk: ``value`` keeps the span as text
        return self.tok_text(tok)

    def _seq_body(self, depth: int, items: list[Any], stops: frozenset[str], close: str) -> bool:
        """Elements up to ``close``; returns whether the last one had a trailing comma."""
        comma = False
        while True:
            kind = (self._peeked or self.peek())[0]
            if kind == "eof":
                raise _Truncated
            if kind == close:
                self.next()
                return comma
            items.append(self.value(depth + 1, stops))
            if self.next()[0] == close:
                return False
            comma = True

    def _dict_body(self, depth: int, out: dict[Any, Any], top: bool) -> list[Any] | None:
        """Members up to ``}`` into ``out``; returns a list instead for a set repr."""
        members: list[Any] | None = None
        first = True
        while True:
            tok = self._peeked or self.peek()
            if tok[0] == "eof":
                raise _Truncated
            if tok[0] == "}":
                self.next()
                return members
            if members is not None:
                members.append(self.value(depth + 1, _DICT_STOPS))
                if self.next()[0] == "}":
                    return members
                continue
            key = self.value(depth + 1, _KEY_STOPS)
            key_end = self.last_end
            sep = self.next()[0]
            if sep != ":":
                if first and not top:
                    members = [key]  # ``{1, 2}`` is a set repr; sets become lists
                first = False
                if sep == "}":
                    return members
                continue  # a key without a value: drop it
            first = False
            val = self.value(depth + 1, _DICT_STOPS)
            if not isinstance(key, str):
                try:
                    hash(key)
                    unusable = top  # top-level names are always text
                except TypeError:
                    unusable = True
                if unusable:
                    key = self.text[tok[1] : key_end].strip()
            out[key] = val
            if self.next()[0] == "}":
                return members

    def _call_body(self, depth: int, kwargs: dict[str, Any], args: list[Any]) -> None:
        """``name=value`` and positional arguments up to ``)``."""
        while True:
            tok = self._peeked or self.peek()
            kind = tok[0]
            if kind == "eof":
                raise _Truncated
            if kind == ")":
                self.next()
                return
            if (kind == "name" or kind == "num" and self.tok_text(tok) in ("inf", "nan")) and (
                self._is_kwarg(tok[2])
            ):
                self.next()
                self.next()
                # Assigned only once complete, so a cut value never lands here.
                kwargs[self.tok_text(tok)] = self.value(depth + 1, _CALL_STOPS)
            else:
                args.append(self.value(depth + 1, _CALL_STOPS))
            if self.next()[0] == ")":
                return

    def _call(self, depth: int, name: str) -> Any:
        kwargs: dict[str, Any] = {}
        args: list[Any] = []
        self._call_body(depth, kwargs, args)
        short = name.rsplit(".", 1)[-1]
        if short in _PATH_TYPES and len(args) == 1 and not kwargs:
            return args[0]
        if short in _SET_TYPES and not kwargs and len(args) <= 1:
            return list(args[0]) if args and isinstance(args[0], (list, dict)) else []
        out: dict[str, Any] = {"__type__": name}
        out.update(kwargs)
        if args:
            out["__args__"] = args
        return out

    def _angle(self, depth: int, start: int) -> Any:
        # Enum repr ``<Color.RED: 'red'>`` -> its value; other ``<...>`` -> text.
        tok = self._peeked or self.peek()
        if tok[0] == "name" and self.text.startswith(":", self._nonblank(tok[2]), self.end):
            self.next()
            self.next()
            val = self.value(depth + 1, _ANGLE_STOPS)
            self.next()
            return val
        self.skip(_ANGLE_STOPS, at_value_start=True)
        self.next()
        return self.text[start : self.last_end].strip()

    def skip(self, stops: frozenset[str], at_value_start: bool) -> None:
        """Consume text up to (not including) a depth-0 character in ``stops``.

        Junk can be most of a line, so this walks runs of characters with its
        own regex and an explicit bracket stack (linear, no recursion), then
        restarts the tokenizer where it stopped.  ``<`` only opens an angle
        repr where a value may start; elsewhere it is an ordinary character.
        """
        text, end = self.text, self.end
        pos = self._peeked[1] if self._peeked is not None else self.last_end
        stack: list[str] = []
        value_start = at_value_start
        while True:
            m = _SKIP.match(text, pos, end)
            if m is None or m.lastgroup == "open":
                raise _Truncated
            kind = m.lastgroup
            if kind == "punct":
                for i in range(m.start(), m.end()):
                    c = text[i]
                    if not stack and c in stops:
                        self.last_end = i  # the run's earlier brackets were consumed
                        self._restart(i)
                        return
                    if c in _OPENERS or (c == "<" and value_start):
                        stack.append(_CLOSER[c])
                    elif stack and c == stack[-1]:
                        stack.pop()
                    value_start = c in _VALUE_START
            elif kind != "blank":
                value_start = False
            pos = m.end()
            self.last_end = pos

    def _restart(self, pos: int) -> None:
        self._matches = _TOKEN.finditer(self.text, pos, self.end)
        self._peeked = None
