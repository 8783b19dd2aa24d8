"""Rule schema and loading.

A rule is one YAML file (`<family>/<id>.yaml`); its fixtures sit in a directory of the same
stem beside it (`<family>/<id>/fires-*.log`, `<family>/<id>/quiet-*.log`). A user's rule
directory has exactly the same shape as the built-in one. Files are validated against the
dataclasses below (by pydantic, only when the cached rule set does not match the files); a
broken file is a `RuleLoadError` naming the file, the line, the rule id and the field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from functools import cached_property
from pathlib import Path
from collections.abc import Iterable
from typing import Any, Literal, Union

from sglang_doctor import __version__
from sglang_doctor.model import Severity, rule_page
from sglang_doctor.engine import expr
from sglang_doctor._speed.deferred import deferred_dataclass, materialize
from sglang_doctor.engine.rx import RuleRegex, sre_constants, sre_parse


FixKind = Literal["flag", "env", "docker", "package", "system", "note"]
FixAction = Literal["set", "raise", "lower", "add", "remove"]
# Whose command line a `flag` fix's flag belongs to: SGLang's launch flags (data/flags.json,
# `versions` in SGLang releases) or the SGLang router's (data/router-flags.json, named as
# sglang_router.launch_router spells it, `versions` in sglang-router releases).
FixLauncher = Literal["server", "router"]
SYSTEM_PARTS = ("nvidia-driver", "cuda-toolkit", "rocm", "gpu")
MAX_RULE_FILE_BYTES = 256 * 1024
RULE_ID = r"^[a-z0-9][a-z0-9-]{2,63}$"
RULE_CODE = r"^SGD\d{3,4}$"
# YAML keys that are Python keywords, and the field names that hold them.
KEYWORD_KEYS = {"in": "in_", "not": "not_"}
YAML_KEYS = {v: k for k, v in KEYWORD_KEYS.items()}  # and back
CACHE_FORMAT = 7  # bump when the cached objects change shape (or move: pickles name their module)


class RuleLoadError(Exception):
    """A rule file that cannot be used; the message is one line."""


# The schema is plain frozen dataclasses: a run that loads the rule set from the cache never
# imports a validation library, nor makes the classes' dataclass methods (deferred.py).
# Files are validated by pydantic (TypeAdapter over these classes, `extra: forbid`) and by
# each class's __post_init__; a message "field: ..." names the field it is about.
_STRICT = {"extra": "forbid"}


def _compile_check(field_name: str, pattern: str) -> None:
    import regex

    try:
        regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"{field_name}: regex does not compile: {e}") from None
    except (RecursionError, OverflowError, MemoryError):
        raise ValueError(f"{field_name}: regex does not compile: nested too deeply or too large") from None


@deferred_dataclass(frozen=True, eq=False)
class Pattern:
    """A rule regex and the part of a record it looks at."""

    __pydantic_config__ = _STRICT
    regex: str
    # Where to search: the whole record, its exception line(s), or its frame lines.
    in_: Literal["text", "exception", "frames"] = "text"

    def __post_init__(self) -> None:
        _compile_check("regex", self.regex)

    @cached_property
    def literal(self) -> str | None:
        """A string every match contains (None: none known); a text without it is not searched."""
        return required_literal(self.regex)

    @cached_property
    def safe(self) -> bool:
        """No backtracking hazard (decided once, when the rule set is cached): `re` may run it."""
        from sglang_doctor.engine.regex_safety import backtrack_safe

        return backtrack_safe(self.regex)

    @cached_property
    def compiled(self) -> RuleRegex:
        return RuleRegex(self.regex, self.safe)


@deferred_dataclass(frozen=True, eq=False)
class Match:
    """How a rule recognises its records (patterns) or facts (a built-in check)."""

    __pydantic_config__ = _STRICT
    any: list[Pattern] = field(default_factory=list)  # the rule matches a record when one of these does
    require: list[Pattern] = field(default_factory=list)  # ... and all of these match the same record too
    exclude: list[Pattern] = field(default_factory=list)  # ... and none of these does (another rule owns that case)
    # Or a built-in check over facts (see checks.py), for what no log line states, such as
    # a launch flag the detected SGLang release does not have.
    check: str | None = None

    def __post_init__(self) -> None:
        from sglang_doctor.engine.checks import CHECKS

        if bool(self.any) == bool(self.check):
            raise ValueError("match needs either 'any' (patterns) or 'check' (a built-in check)")
        if self.check and self.check not in CHECKS:
            raise ValueError(f"check: unknown check {self.check!r}; known: {', '.join(sorted(CHECKS))}")


@deferred_dataclass(frozen=True, eq=False)
class Condition:
    """A test on a context fact, or a group of conditions (any_of / all_of / not)."""

    __pydantic_config__ = _STRICT
    fact: str | None = None
    op: Literal["exists", "missing", "eq", "ne", "lt", "le", "gt", "ge", "in", "not_in",
                "startswith", "contains", "matches", "version_ge", "version_lt", "expr"] = "exists"
    value: Any = None
    any_of: list["Condition"] | None = None
    all_of: list["Condition"] | None = None
    not_: "Condition | None" = None

    def __post_init__(self) -> None:
        groups = sum(x is not None for x in (self.any_of, self.all_of, self.not_))
        if groups > 1 or (groups and self.fact is not None):
            raise ValueError("a condition is either a fact test or one of any_of/all_of/not")
        if not groups and self.fact is None and self.op != "expr":
            raise ValueError("a condition needs 'fact' (or op: expr with value)")
        if self.op == "expr":
            if not isinstance(self.value, str):
                raise ValueError("value: op expr needs a string expression in 'value'")
            expr.compile_expr(self.value)
        if self.op == "matches":
            _compile_check("value", str(self.value))

    @cached_property
    def compiled(self) -> RuleRegex:
        """The pattern of an `op: matches` test (its safety decided when the rule set is cached)."""
        from sglang_doctor.engine.regex_safety import backtrack_safe

        return RuleRegex(str(self.value), backtrack_safe(str(self.value)))

    def walk(self) -> list["Condition"]:
        """This condition and every condition nested in it."""
        out = [self]
        for c in (*(self.any_of or ()), *(self.all_of or ()), *((self.not_,) if self.not_ else ())):
            out.extend(c.walk())
        return out


@deferred_dataclass(frozen=True, eq=False)
class Fix:
    """A fix as the rule file writes it (templates filled in per log by the engine)."""

    __pydantic_config__ = _STRICT
    kind: FixKind = "flag"
    flag: str | None = None
    name: str | None = None
    action: FixAction | None = None
    value: str | None = None  # a template: "{capture}" / "{let_name:.2f}"
    text: str | None = None  # for kind note; also an optional one-line reason on any fix
    # For a renamed flag: the flag this one replaces (removed from the command, its value kept).
    replaces: str | None = None
    when: list[Condition] = field(default_factory=list)
    # Releases this fix applies to, when narrower than the rule's (a flag added later);
    # dropped for a log whose release is known and outside this range. For a router flag,
    # sglang-router releases.
    versions: str | None = None
    launcher: FixLauncher = "server"
    # Part of the recommended change: the corrected command applies it together with the first
    # fix of the finding (one plan over several flags), not as an alternative.
    combined: bool = False
    # The fix written once for each item of a list a `let` computes (`argparse_flags(args)`: every
    # flag of one message), the item as `{item}` in its templates; none when the list is empty.
    each: str | None = None

    def __post_init__(self) -> None:
        if self.launcher != "server" and self.kind != "flag":
            raise ValueError("'launcher' is for flag fixes only")
        if self.kind in ("flag", "docker") and not (self.flag and (self.flag.startswith("-") or self.flag.startswith("{"))):
            # A template such as "{bad_flag}" names a flag captured from the log.
            raise ValueError(f"a {self.kind} fix needs 'flag' starting with '-' (or a {{capture}} template)")
        if self.kind in ("env", "package", "system") and not self.name:
            raise ValueError(f"a {self.kind} fix needs 'name'")
        if self.kind == "system" and self.name not in SYSTEM_PARTS:
            raise ValueError(f"system fix name must be one of {', '.join(SYSTEM_PARTS)}")
        if self.kind == "note" and not self.text:
            raise ValueError("a note fix needs 'text'")
        if self.kind != "note" and self.action is None:
            raise ValueError("a fix needs 'action' (set, raise, lower, add, remove)")


def condition_names(conds: Iterable[Condition]) -> set[str]:
    """The names a list of conditions reads (facts, captures, lets; through groups and expressions)."""
    out: set[str] = set()
    for c in conds:
        for group in (c.any_of, c.all_of, [c.not_] if c.not_ is not None else None):
            if group:
                out |= condition_names(group)
        if c.fact:
            out.add(c.fact)
        if c.op == "expr" and isinstance(c.value, str):
            out |= expr.names_in(c.value)
    return out


@deferred_dataclass(frozen=True, eq=False)
class ExplanationPart:
    """A sentence of an explanation, with the conditions it needs."""

    __pydantic_config__ = _STRICT
    text: str
    when: list[Condition] = field(default_factory=list)


@deferred_dataclass(frozen=True, eq=False)
class Docs:
    """The rule's documentation: what, why, fix, and when the fix is wrong."""

    __pydantic_config__ = _STRICT
    what: str
    why: str
    fix: str
    wrong_when: str | None = None  # when the suggested fix is the wrong answer


@deferred_dataclass(frozen=True, eq=False)
class Rule:
    """One rule file: what it matches, when it applies, what it says and fixes."""

    __pydantic_config__ = _STRICT
    id: str
    # Built-in rules use SGD100-SGD999; four digits (SGD1000+) are left to users' own rules.
    code: str
    title: str
    severity: Severity
    family: str
    match: Match
    # Sentences; one whose placeholders are unknown for this log, or whose `when` fails, is left out.
    explanation: Union[str, list[Union[str, ExplanationPart]]]
    docs: Docs
    versions: str = "*"  # SGLang releases that print the message, e.g. "0.4.6-0.5.23"
    sources: list[str] = field(default_factory=list)  # "sglang srt/x.py:12 (0.5.14)", "pytorch"
    # Why the patterns need not match SGLang's message catalog although `sources` cite SGLang (a
    # message formatted at run time): `rules lint` checks them against it otherwise.
    catalog_exempt: str | None = None
    conditions: list[Condition] = field(default_factory=list)
    let: dict[str, Union[str, int, float]] = field(default_factory=dict)  # name: expression, computed in order
    fixes: list[Fix] = field(default_factory=list)
    fix_none: str | None = None  # why the rule has no fix, when it has none
    consequence: bool = False  # a symptom of another failure (SIGQUIT, peer timeouts)
    fallback: bool = False  # generic: dropped when a more specific error explains the input
    last_resort: bool = False  # dropped when another rule reports an error that is not a consequence
    # Append the switches that take the crash's subsystem out of the picture (engine/isolate.py).
    isolate: bool = False
    # Ignores tracebacks the log says were handled: a failed request, a retried call, an
    # exception Python ignored (context.py, "handled exceptions").
    skip_handled: bool = False
    follows: list[str] = field(default_factory=list)  # rule ids this one is a symptom of, when they fire in the same input
    priority: int = 50  # among findings on the same record, higher sorts first
    path: str | None = None  # the file it was loaded from (not part of the rule)

    def __post_init__(self) -> None:
        import re

        if not re.match(RULE_ID, self.id):
            raise ValueError(f"id: must match {RULE_ID} (lower-case kebab-case, 3-64 characters)")
        if not re.match(RULE_CODE, self.code):
            raise ValueError(f"code: must match {RULE_CODE}")
        if not 5 <= len(self.title) <= 120:
            raise ValueError("title: must be 5 to 120 characters")
        if not self.fixes and not self.fix_none:
            raise ValueError("a rule needs at least one fix, or 'fix_none' saying why there is none")
        for name, source in self.let.items():
            try:
                expr.compile_expr(str(source))
            except expr.ExpressionError as e:
                raise ValueError(f"let.{name}: {e}") from None

    def to_data(self) -> dict[str, Any]:
        """The rule as its YAML file's data (keys as written, defaults left out)."""
        materialize()  # dataclasses.fields() below needs the processed classes
        return _data_of(self)  # type: ignore[no-any-return]

    @property
    def explanation_parts(self) -> list[ExplanationPart]:
        items = [self.explanation] if isinstance(self.explanation, str) else list(self.explanation)
        return [ExplanationPart(text=x) if isinstance(x, str) else x for x in items]

    @cached_property
    def let_compiled(self) -> dict[str, Any]:
        return {k: expr.compile_expr(str(v)) for k, v in self.let.items()}

    @cached_property
    def condition_stages(self) -> tuple[list[Condition], list[Condition]]:
        """(conditions reading no `let`, the others): the first are checked before the lets are
        computed, so a rule whose conditions fail never runs a costly let (mem_plan())."""
        lets = set(self.let)

        def late(c: Condition) -> bool:
            return any(n in lets or n.split(".", 1)[0] in lets for n in condition_names([c]))

        return [c for c in self.conditions if not late(c)], [c for c in self.conditions if late(c)]

    @property
    def docs_path(self) -> str:
        """The rule's page, relative to the repository (ruledev/docs.py writes it)."""
        return rule_page(self.code, self.id)

    @property
    def fixture_dir(self) -> Path | None:
        return Path(self.path).with_suffix("") if self.path else None

    def fixtures(self) -> tuple[list[Path], list[Path]]:
        d = self.fixture_dir
        if d is None or not d.is_dir():
            return [], []
        return sorted(d.glob("fires*.log")), sorted(d.glob("quiet*.log"))

    @property
    def scan_patterns(self) -> tuple[str, ...]:
        """The regexes stage one scans for (kept in the rule cache's summary: building the scanner
        unpickles no rule)."""
        return tuple(p.regex for p in self.match.any)

    @cached_property
    def prefilter_literals(self) -> list[str] | None:
        """Literals one of which must appear in a record for this rule to match it.

        None means the rule cannot be prefiltered (some pattern has no required literal);
        such rules run on every record. Computed once when the rule set is cached.
        """
        if self.match.check:
            return []  # never matches records; the check runs once per input
        out: list[str] = []
        for p in self.match.any:
            lit = required_literal(p.regex)
            if lit is None:
                return None
            out.append(lit)
        return out


def _data_of(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if f.name == "path" or value == default:
                continue
            out[YAML_KEYS.get(f.name, f.name)] = _data_of(value)
        return out
    if isinstance(obj, list):
        return [_data_of(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _data_of(v) for k, v in obj.items()}
    return obj


def _literal_runs(parsed: Any) -> list[str]:
    runs: list[str] = []
    cur: list[str] = []
    for op, av in parsed:
        if op is sre_constants.LITERAL:
            cur.append(chr(av))
            continue
        if op is sre_constants.SUBPATTERN and av[-1] is not None:
            # A group: its literals continue the run only if the whole group is literal.
            inner = av[-1]
            if av[1] & sre_constants.SRE_FLAG_IGNORECASE:  # (?i:...): no literal of known case
                if cur:
                    runs.append("".join(cur))
                    cur = []
                continue
            if all(o is sre_constants.LITERAL for o, _ in inner):
                cur.extend(chr(a) for _, a in inner)
                continue
            if cur:
                runs.append("".join(cur))
                cur = []
            runs.extend(_literal_runs(inner))
            continue
        if op is sre_constants.MAX_REPEAT or op is sre_constants.MIN_REPEAT:
            lo, _hi, inner = av
            if cur:
                runs.append("".join(cur))
                cur = []
            if lo >= 1:
                runs.extend(_literal_runs(inner))
            continue
        if op is sre_constants.AT:
            continue
        if cur:
            runs.append("".join(cur))
            cur = []
        if op is sre_constants.BRANCH:
            common = _common_literal([_literal_runs(list(alt)) for alt in av[1]])
            if common:
                runs.append(common)
    if cur:
        runs.append("".join(cur))
    return runs


def _common_literal(alternatives: list[list[str]]) -> str | None:
    """The longest string (>= 4 chars) inside a literal run of every alternative.

    `image_processing_\\w+|processing_utils` both contain `processing_`, which every match
    of the alternation therefore contains too.
    """
    if not alternatives or len(alternatives) > 32 or any(not runs for runs in alternatives):
        return None  # (a bound on the work for a hostile pattern; no prefilter then)
    first = sorted({r[:100] for r in alternatives[0]}, key=len, reverse=True)
    for size in range(max(len(r) for r in first), 3, -1):
        for run in first:
            for i in range(len(run) - size + 1):
                sub = run[i:i + size]
                if all(any(sub in r for r in runs) for runs in alternatives[1:]):
                    return sub
    return None


def required_literal(pattern: str) -> str | None:
    """The longest literal substring every match of `pattern` must contain (>= 4 chars)."""
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # the `regex` module accepts syntax `re` does not; no prefilter then
        return None
    if parsed.state.flags & (sre_constants.SRE_FLAG_IGNORECASE | sre_constants.SRE_FLAG_VERBOSE):
        return None
    runs = _literal_runs(list(parsed))
    best = max(runs, key=len, default="")
    return best if len(best) >= 4 else None


# --- loading -------------------------------------------------------------------------


def builtin_rules_dir() -> Path:
    return Path(__file__).parent.parent / "rules"  # (not importlib.resources: 10 ms of imports per run)


def _python_keys(data: Any) -> Any:
    """YAML keys that are Python keywords (`in`, `not`) as their field names (`in_`, `not_`)."""
    if isinstance(data, dict):
        return {KEYWORD_KEYS.get(k, k) if isinstance(k, str) else k: _python_keys(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_python_keys(x) for x in data]
    return data


def _error_path(err: dict[str, Any]) -> tuple[tuple[Any, ...], str]:
    """Where a validation error is, as YAML keys, and its message without pydantic's prefix.

    A __post_init__ check names its field at the start of the message ("regex: ...",
    "let.x: ..."), which extends the path to the dataclass holding it.
    """
    import re

    loc: tuple[Any, ...] = tuple(YAML_KEYS.get(p, p) if isinstance(p, str) else p
                                 for p in err.get("loc", ()))
    msg = str(err.get("msg", ""))
    msg = msg.removeprefix("Value error, ")
    m = re.match(r"([a-z_]+(?:\.\w+)?): ", msg)
    if m:
        loc += tuple(m[1].split("."))
        msg = msg[m.end():]
    return loc, msg


_VALIDATOR: Any = None


def _validate(data: dict[str, Any]) -> Rule:
    global _VALIDATOR
    if _VALIDATOR is None:  # built on the first file validated: a cached run never pays for it
        from pydantic import TypeAdapter

        materialize()
        _VALIDATOR = TypeAdapter(Rule)
    return _VALIDATOR.validate_python(data)  # type: ignore[no-any-return]


def load_rule_file(path: Path) -> Rule:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise RuleLoadError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_RULE_FILE_BYTES:
        raise RuleLoadError(f"{path}: rule file larger than {MAX_RULE_FILE_BYTES} bytes")
    from pydantic import ValidationError

    from sglang_doctor.read.safe_yaml import YamlError, line_of, load_yaml_with_node

    try:
        data, node = load_yaml_with_node(raw.decode("utf-8", errors="replace"))
    except YamlError as e:
        raise RuleLoadError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise RuleLoadError(f"{path}: a rule file holds one mapping (id, code, title, ...)")
    rule_id = data.get("id", path.stem)
    if "path" in data:  # the loader sets it; a file cannot
        raise RuleLoadError(f"{path}:{line_of(node, ('path',)) or 1}: rule {rule_id}: field path: not a rule field")
    try:
        rule = _validate(_python_keys(data))
    except ValidationError as e:
        loc, msg = _error_path(e.errors()[0])
        where = f"{path}:{line}" if (line := line_of(node, loc)) else str(path)
        field_name = ".".join(str(p) for p in loc) or "(rule)"
        raise RuleLoadError(f"{where}: rule {rule_id}: field {field_name}: {msg}") from None
    except (expr.ExpressionError, RecursionError) as e:
        raise RuleLoadError(f"{path}: rule {rule_id}: {e}") from None
    if rule.id != path.stem:
        raise RuleLoadError(f"{path}:{line_of(node, ('id',)) or 1}: rule {rule.id}: field id: "
                            f"must equal the file name '{path.stem}'")
    object.__setattr__(rule, "path", str(path))  # where it came from; frozen for everything else
    return rule


def rule_files(directory: Path, walked: list[str] | None = None) -> list[Path]:
    """Every *.yaml under `directory`, at any depth, in path order.

    A rule's fixture directory (named like the rule file beside it) is not entered, and
    symlinked directories are not followed (no loops). `walked` gets every directory read.
    """
    import os

    found: list[str] = []

    def walk(d: str) -> None:
        try:
            entries = list(os.scandir(d))
        except OSError:
            return
        if walked is not None:
            walked.append(d)
        rules_here = {e.name[:-5] for e in entries if e.name.endswith(".yaml") and e.is_file()}
        for e in entries:
            if e.name.endswith(".yaml") and e.is_file():
                found.append(e.path)
            elif e.name not in rules_here and e.is_dir(follow_symlinks=False):
                walk(e.path)

    walk(str(directory))
    return sorted(Path(p) for p in found)


def load_rules(extra_dirs: list[str] | None = None, builtin: bool = True, cache: bool = True) -> list[Rule]:
    """Load and validate rule files; the validated set is cached keyed by the files' content.

    The cache holds only what these same bytes validated to (pickled by this tool in the
    user's own cache directory), so an edited or added rule file always gets validated
    (rulecache.py).
    """
    dirs: list[Path] = [builtin_rules_dir()] if builtin else []
    for d in extra_dirs or []:
        p = Path(d)
        if not p.is_dir():
            raise RuleLoadError(f"{d}: rules directory not found")
        dirs.append(p)
    store = None
    from sglang_doctor._speed import ENABLED

    if cache and ENABLED:
        from sglang_doctor._speed.rulecache import RuleCache

        store = RuleCache(dirs, f"{__version__}/{CACHE_FORMAT}", rule_files)
        cached = store.load()
        if cached is not None:
            return cached
    rules = _load_files(dirs)
    for rule in rules:  # derived once here, kept in the cache: a cached run does not parse regexes
        rule.prefilter_literals
        for p in (*rule.match.any, *rule.match.require, *rule.match.exclude):
            p.literal
            p.safe
        for c in (c for top in rule.conditions for c in top.walk()):
            if c.op == "matches":
                c.compiled.safe
    if store is not None:
        store.store(rules)
    return rules


def _load_files(dirs: list[Path]) -> list[Rule]:
    rules: list[Rule] = []
    seen_id: dict[str, str] = {}
    seen_code: dict[str, str] = {}
    for d in dirs:
        for f in rule_files(d):
            rule = load_rule_file(f)
            if rule.id in seen_id:
                raise RuleLoadError(f"{f}: rule {rule.id}: field id: already defined in {seen_id[rule.id]}")
            if rule.code in seen_code:
                raise RuleLoadError(f"{f}: rule {rule.id}: field code: {rule.code} already used by {seen_code[rule.code]}")
            seen_id[rule.id] = str(f)
            seen_code[rule.code] = rule.id
            rules.append(rule)
    return rules
