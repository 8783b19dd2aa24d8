"""SGLang's own messages: which `raise`, `assert` or `logger.<level>` call printed a line.

The catalog (``data/messages.jsonl.gz``) is built by ``tools/extract_messages.py`` from the
release wheels. Each entry is one message template at one call site, with the sampled releases
it exists in. Format (JSON lines, gzip): line 1 a header (``releases``, ``wheels`` with their
sha256, ``min_literal``, ``notes``, ``files`` -- paths under the ``sglang/`` package --, and
``columns``), line 2 every entry's ``literal``, line 3 every entry's ``anchor``, then one array
per entry in the order of ``columns``:

* ``parts``         -- alternating literal text and field names: ``["Capture cuda graph failed: ",
                       "e", "\\nPossible solutions:\\n1. ..."]``
* ``kind``          -- ``r:<ExceptionClass>`` | ``a:AssertionError`` | ``l:<level>``
* ``file``          -- index into ``files``; ``function`` -- the enclosing ``Class.method``
* ``releases_mask`` -- bit i set: exists in ``releases[i]``; ``lines`` -- its line in each of them
* (line 2) ``literal`` -- the longest literal run of the first message line with enough literal
                       text (the prefilter: a text that lacks it cannot match)
* (line 3) ``anchor``  -- the rarest whole word of ``literal``, lowercased (the word index key)
* ``head_line``     -- which message line ``literal`` is on (earlier lines are all fields)
* ``flags``, ``env``, ``advice`` -- the ``--flags`` and environment variables the text names and
                       its numbered advice ("Possible solutions: 1. ...")

Nothing is read at import. The first lookup reads the file and builds a word index
(anchor word -> rows); a lookup tokenizes the text, takes the rows of its words, keeps those
whose literal occurs in it, and only then builds their entries and runs their regexes (each
compiled once, on first use).
"""

from __future__ import annotations

import bisect
import gzip
import json
import threading
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any, Iterable

import regex

DATA_FILE = "messages.jsonl.gz"
_KINDS = {"r": "raise", "a": "assert", "l": "log"}
_WORD = regex.compile(r"[A-Za-z0-9_]+")
# Field names that hold an exception or its traceback (e, err, exc, error, traceback, tb, ...).
_EXCEPTION_FIELD = regex.compile(r"(?i)(?:e|ex|exc|err|error|exception|tb|traceback|trace|"
                                 r"get_exception_traceback|format_exc|str_e|exc_info|reason|cause)(?:_\d+)?")
# Budget for one template's regex on one text; a field-heavy template on a long line could
# otherwise backtrack for long.
_MATCH_TIMEOUT_S = 0.05


def _version_key(v: str) -> tuple:
    m = regex.fullmatch(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?", v)
    if not m:
        return ((0,), 0, 0, 0)
    nums = tuple(int(x) for x in m.group(1).split("."))
    while len(nums) > 1 and nums[-1] == 0:
        nums = nums[:-1]
    return (nums, {"a": -3, "b": -2, "rc": -1, None: 0}[m.group(2)], int(m.group(3) or 0),
            int(m.group(4) or -1) + 1)


@lru_cache(maxsize=4096)
def _near_samples(samples: tuple[str, ...], release: str) -> tuple[str, ...]:
    """The sampled releases that stand for ``release``: itself when sampled, else the samples on
    either side of it (a message in one of them may be in it)."""
    if release in samples:
        return (release,)
    key = _version_key(release)
    below = [r for r in samples if _version_key(r) < key]
    above = [r for r in samples if _version_key(r) > key]
    return tuple(([below[-1]] if below else []) + ([above[0]] if above else []))


@dataclass(frozen=True)
class Entry:
    """One message template at one call site."""

    id: int
    parts: tuple[str, ...]
    kind: str  # raise | assert | log
    cls: str  # the exception class, AssertionError, or the log level
    file: str  # under the sglang/ package: "srt/managers/scheduler.py"
    function: str  # "Scheduler.__init__", "<module>"
    releases: tuple[str, ...]  # the sampled releases it exists in, oldest first
    lines: tuple[int, ...]  # its line in each of them
    literal: str
    head_line: int
    flags: tuple[str, ...]
    env: tuple[str, ...]
    advice: tuple[str, ...]
    catalog_releases: tuple[str, ...]  # every sampled release, for ranges

    @property
    def template(self) -> str:
        """The message with its fields as ``{name}``."""
        return "".join(p if i % 2 == 0 else "{" + p + "}" for i, p in enumerate(self.parts))

    @property
    def sample(self) -> str:
        """The message with every field filled with "1": what a rule's regex is tried on when
        checking which catalog messages it recognises."""
        return "".join(p if i % 2 == 0 else "1" for i, p in enumerate(self.parts)).strip()

    def log_forms(self) -> list[LogForm]:
        """How the message can show in a log, for checking which catalog messages a rule regex
        recognises: the message alone (fields filled with "1"), after its exception class
        (``ValueError: ...``, ``AssertionError: ...``) or SGLang's logger prefix (``[time TP0] ...``),
        and the traceback frame of its call site (``File ".../sglang/srt/x.py", line N, in f``).
        A message ending in a field (``warmup error: {e}``, ``Exit code: {code}``) is cut before
        it and left open: the field's value (a wrapped error, a number) follows in a log, so a
        match may run past the end."""
        parts = list(self.parts)
        open_end = len(parts) >= 3 and not parts[-1].strip()
        if open_end:
            parts = parts[:-2]
        msg = "".join(p if i % 2 == 0 else "1" for i, p in enumerate(parts))
        msg = msg.lstrip() if open_end else msg.strip()
        lead = {"raise": f"{self.cls}: ", "assert": "AssertionError: ", "log": _LOG_PREFIX}[self.kind]
        forms = [LogForm(self, msg, ((0, len(msg)),), open_end),
                 LogForm(self, lead + msg, ((len(lead), len(lead) + len(msg)),), open_end)]
        # A frame match must name the function: one on the file name alone (`models/\w*_vl\.py", line`)
        # says the rule looks at a kind of module, not at this call site.
        func = self.function.rsplit(".", 1)[-1]
        frame = f'  File "{_SITE_PACKAGES}{self.file}", line {self.line}, in {func}'
        forms.append(LogForm(self, frame, ((len(frame) - len(func), len(frame)),), False))
        return forms

    @property
    def fields(self) -> tuple[str, ...]:
        return self.parts[1::2]

    @property
    def generic(self) -> bool:
        """A wrapper that only passes another error on (``Scheduler hit an exception: {traceback}``,
        ``Failed to load {path}: {e}``): it ends in an exception-like field, with no text, flag or
        advice of its own after it. The wrapped error says more than the wrapper."""
        if len(self.parts) < 3 or self.parts[-1].strip() or self.flags or self.advice:
            return False
        return bool(_EXCEPTION_FIELD.fullmatch(self.parts[-2]))

    @property
    def line(self) -> int:
        """Its line in the newest sampled release that has it."""
        return self.lines[-1]

    def line_in(self, release: str) -> int | None:
        for r, n in zip(self.releases, self.lines):
            if r == release:
                return n
        return None

    @property
    def release_range(self) -> str:
        """Runs of consecutive sampled releases: "0.5.10.post1-0.5.23", "0.4.0,0.5.1.post3-0.5.8.post1"."""
        present = set(self.releases)
        runs: list[list[str]] = []
        prev_in = False
        for r in self.catalog_releases:
            if r in present:
                if prev_in:
                    runs[-1].append(r)
                else:
                    runs.append([r])
            prev_in = r in present
        return ",".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)

    def may_exist_in(self, release: str) -> bool:
        """Whether the message can be in ``release``: it is in that sample, or (for a release
        between two samples) in the sample on either side of it."""
        return any(r in self.releases for r in _near_samples(self.catalog_releases, release))

    def origin(self, release: str | None = None) -> dict[str, Any]:
        """The JSON ``origin`` of a finding about this message."""
        line = self.line_in(release) if release else None
        return {"package": "sglang", "file": self.file, "line": line or self.line, "function": self.function,
                "releases": self.release_range}

    @cached_property
    def pattern(self) -> str:
        """The template as a regex: literal text escaped, fields as named groups. Message lines
        before the first one with enough literal text are left out; the lines after it are
        optional, each only after the one before (a log line often shows the first line only)."""
        lines: list[list[tuple[bool, str]]] = [[]]
        for i, p in enumerate(self.parts):
            if i % 2:
                lines[-1].append((True, p))
                continue
            for j, chunk in enumerate(p.split("\n")):
                if j:
                    lines.append([])
                lines[-1].append((False, chunk))
        rx = [_line_regex(line) for line in lines[self.head_line:]]
        out = rx[-1]
        for r in reversed(rx[:-1]):
            out = f"{r}(?:\\n[ \\t]*{out})?" if out else r
        return out

    @cached_property
    def regex(self) -> "regex.Pattern[str]":
        return regex.compile(self.pattern)

    def match(self, text: str) -> "regex.Match[str] | None":
        """The match of this template in ``text`` (None on no match or a runaway regex)."""
        try:
            return self.regex.search(text, timeout=_MATCH_TIMEOUT_S)
        except TimeoutError:
            return None


# What the log forms of an entry look like around the message (Entry.log_forms).
_LOG_PREFIX = "[2026-01-01 00:00:00 TP0] "
_SITE_PACKAGES = "/usr/local/lib/python3.12/dist-packages/sglang/"


@dataclass(frozen=True)
class LogForm:
    """One way an entry shows in a log, and the spans a regex's match must touch to be about it
    (the message, not only the class or prefix before it; the function of a frame)."""

    entry: Entry
    text: str
    touch: tuple[tuple[int, int], ...]
    open_end: bool  # the text stops where the value of its last field would follow

    def matched_by(self, rx: "regex.Pattern[str]") -> bool:
        for m in rx.finditer(self.text, timeout=1.0):
            if any(m.start() < b and m.end() > a for a, b in self.touch):
                return True
        if not self.open_end:
            return False
        # A match that goes on into the last field's value: the text is a prefix of it, and it
        # covers the message's own distinctive literal (an empty match at the end says nothing).
        m = rx.search(self.text, partial=True, timeout=1.0)
        lit = self.text.find(self.entry.literal)
        return bool(m and m.partial and lit >= 0 and m.start() <= lit)


def _line_regex(line: list[tuple[bool, str]]) -> str:
    # Edge whitespace is not kept: log lines are stripped or re-indented.
    while line and not line[0][0] and not line[0][1].strip():
        line = line[1:]
    while line and not line[-1][0] and not line[-1][1].strip():
        line = line[:-1]
    out = []
    for n, (is_field, text) in enumerate(line):
        if is_field:
            # lazy when literal text follows on the line, else the rest of the line
            out.append(f"(?P<{text}>.*?)" if n < len(line) - 1 else f"(?P<{text}>.*)")
        else:
            if n == 0:
                text = text.lstrip()
            if n == len(line) - 1:
                text = text.rstrip()
            out.append(regex.escape(text))
    return "".join(out)


class Catalog:
    """The message catalog. Rows stay as decoded JSON; an Entry is built when a lookup needs it."""

    def __init__(self, raw: bytes) -> None:
        lines = raw.split(b"\n")
        data = json.loads(lines[0])
        self.header = {k: v for k, v in data.items() if k != "files"}
        self.releases: tuple[str, ...] = tuple(data["releases"])
        self._files: list[str] = data["files"]
        self._cols = {name: i for i, name in enumerate(data["columns"])}
        self._literal: list[str] = json.loads(lines[1])
        anchors: list[str] = json.loads(lines[2])
        self._lines = lines[3:3 + len(anchors)]  # one JSON row per template, parsed on demand
        self._built: dict[int, Entry] = {}
        self._blob: tuple[str, list[int], list[LogForm]] | None = None  # every log form (templates_matching)
        self._index: dict[str, list[int]] = {}
        self._no_anchor: list[int] = []
        for n, word in enumerate(anchors):
            if word:
                self._index.setdefault(word, []).append(n)
            else:
                self._no_anchor.append(n)

    def __len__(self) -> int:
        return len(self._lines)

    def entry(self, n: int) -> Entry:
        e = self._built.get(n)
        if e is None:
            row, c = json.loads(self._lines[n]), self._cols
            kind, _, cls = row[c["kind"]].partition(":")
            mask = row[c["releases_mask"]]
            e = self._built[n] = Entry(
                id=n, parts=tuple(row[c["parts"]]), kind=_KINDS[kind], cls=cls, file=self._files[row[c["file"]]],
                function=row[c["function"]], releases=tuple(r for i, r in enumerate(self.releases) if mask >> i & 1),
                lines=tuple(row[c["lines"]]), literal=self._literal[n], head_line=row[c["head_line"]],
                flags=tuple(row[c["flags"]]), env=tuple(row[c["env"]]), advice=tuple(row[c["advice"]]),
                catalog_releases=self.releases)
        return e

    @property
    def entries(self) -> list[Entry]:
        """Every entry (builds them all: for tools, not for the analysis path)."""
        return [self.entry(n) for n in range(len(self._lines))]

    def candidate_ids(self, text: str) -> list[int]:
        """Rows whose prefilter literal occurs in ``text``: the rows of the words ``text`` has, then a
        substring test of each one's literal. No regex runs here."""
        ids: set[int] = set(self._no_anchor)
        index = self._index
        for word in set(_WORD.findall(text.lower())):
            hit = index.get(word)
            if hit:
                ids.update(hit)
        return sorted(i for i in ids if self._literal[i] in text)

    def candidates(self, text: str) -> list[Entry]:
        return [self.entry(i) for i in self.candidate_ids(text)]

    def lookup(self, text: str, release: str | None = None) -> list[Entry]:
        """Entries that match ``text`` (a log line, an exception message, or a block of them),
        longest match first; with ``release``, only those that may exist in it."""
        hits: list[tuple[int, int, Entry]] = []
        for e in self.candidates(text):
            if release and not e.may_exist_in(release):
                continue
            m = e.match(text)
            if m:
                hits.append((-(m.end() - m.start()), -len(e.releases), e))
        hits.sort(key=lambda h: (h[0], h[1], h[2].id))
        return [h[2] for h in hits]

    def literals(self) -> list[str]:
        """Every prefilter literal, for a multi-pattern scanner (a line that has none of them
        matches no entry). Compiling all of them into a Hyperscan database takes ~2 s, so the
        catalog's own lookup uses its word index; a caller with a cached database can use these."""
        return sorted(set(self._literal))

    def _forms(self) -> tuple[list[str], list[int], list[LogForm]]:
        """Every entry's log forms, one blob (forms separated by a blank line) for a substring
        prefilter, each form's start in it, and the forms."""
        if self._blob is None:
            forms = [f for n in range(len(self._lines)) for f in self.entry(n).log_forms()]
            starts, pos = [], 0
            for f in forms:
                starts.append(pos)
                pos += len(f.text) + 2
            self._blob = ("\n\n".join(f.text for f in forms), starts, forms)
        return self._blob

    def templates_matching(self, pattern: str, releases: Iterable[str] | None = None,
                           literal: str | None = None) -> list[Entry]:
        """Entries a regex (a rule's) matches in one of their log forms (see Entry.log_forms),
        optionally only those that may exist in one of ``releases`` (Entry.may_exist_in): a rule regex that matches none of the
        templates of the releases it claims has a typo in its message text, or names a message
        this catalog does not have. ``literal``, a text every match contains, only makes it faster."""
        blob, starts, forms = self._forms()
        wanted = None if releases is None else {s for r in releases for s in _near_samples(self.releases, r)}
        compiled = regex.compile(pattern, regex.MULTILINE)
        if literal:  # the forms containing it, found by substring search (no regex over the blob)
            cand: set[int] = set()
            pos = blob.find(literal)
            while pos >= 0:
                cand.add(bisect.bisect_right(starts, pos) - 1)
                pos = blob.find(literal, pos + 1)
            picked = sorted(cand)
        else:
            picked = range(len(forms))
        found: dict[int, Entry] = {}
        for i in picked:
            form = forms[i]
            if form.entry.id in found or (wanted is not None and not wanted & set(form.entry.releases)):
                continue
            if form.matched_by(compiled):
                found[form.entry.id] = form.entry
        return [found[n] for n in sorted(found)]

    def by_site(self, file: str, line: int | None = None) -> list[Entry]:
        """Entries of one file (and line, in any sampled release): what a traceback frame raised."""
        try:
            fi = self._files.index(file)
        except ValueError:
            return []
        hits = [self.entry(n) for n, row in enumerate(self._lines) if f',{fi},'.encode() in row]
        return [e for e in hits if e.file == file and (line is None or line in e.lines)]


_LOCK = threading.Lock()
_CATALOG: Catalog | None = None


def load(path: str | None = None) -> Catalog:
    """The catalog (the packaged one unless ``path`` is given); read once."""
    global _CATALOG
    if path is not None:
        with gzip.open(path, "rb") as f:
            return Catalog(f.read())
    with _LOCK:
        if _CATALOG is None:
            raw = resources.files("sglang_doctor").joinpath("data", DATA_FILE).read_bytes()
            _CATALOG = Catalog(gzip.decompress(raw))
        return _CATALOG


def lookup(text: str, release: str | None = None) -> list[Entry]:
    """SGLang message templates matching ``text``, best first (see Catalog.lookup)."""
    return load().lookup(text, release)


def iter_entries() -> Iterable[Entry]:
    cat = load()
    return (cat.entry(n) for n in range(len(cat)))
