"""Rule schema and loading.

A rule is one YAML file (`<family>/<id>.yaml`); its fixtures sit in a directory of the same
stem beside it (`<family>/<id>/fires-*.log`, `<family>/<id>/quiet-*.log`). A user's rule
directory has exactly the same shape as the built-in one. Files are validated by the
pydantic models below at load time; a broken file is a `RuleLoadError` naming the file,
the rule id and the field.
"""

from __future__ import annotations

from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Union

import regex
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import __version__, expr

try:  # Python 3.11+ moved the regex parser; the old modules warn on import.
    from re import _constants as sre_constants, _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"error": 0, "warning": 1, "info": 2}
FixKind = Literal["flag", "env", "docker", "package", "system", "note"]
FixAction = Literal["set", "raise", "lower", "add", "remove"]
SYSTEM_PARTS = ("nvidia-driver", "cuda-toolkit", "rocm", "gpu")
MAX_RULE_FILE_BYTES = 256 * 1024


class RuleLoadError(Exception):
    """A rule file that cannot be used; the message is one line."""


class _Strict(BaseModel):
    # defer_build: a run that loads the rule set from the cache never validates, so it never
    # pays for building the validators.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True, defer_build=True)


class Pattern(_Strict):
    regex: str
    # Where to search: the whole record, its exception line(s), or its frame lines.
    in_: Literal["text", "exception", "frames"] = Field("text", alias="in")

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            regex.compile(v)
        except regex.error as e:
            raise ValueError(f"regex does not compile: {e}") from None
        except (RecursionError, OverflowError, MemoryError):
            raise ValueError("regex does not compile: nested too deeply or too large") from None
        return v

    @cached_property
    def compiled(self) -> regex.Pattern[str]:
        # ASCII classes (\\w, \\d, \\s), as the byte-level scanner sees them: both stages agree.
        return regex.compile(self.regex, regex.ASCII)


class Match(_Strict):
    any: list[Pattern] = []  # the rule matches a record when one of these does
    require: list[Pattern] = []  # ... and all of these match the same record too
    exclude: list[Pattern] = []  # ... and none of these does (another rule owns that case)
    # Or a built-in check over facts (see checks.py), for what no log line states, such as
    # a launch flag the detected SGLang release does not have.
    check: str | None = None

    @model_validator(mode="after")
    def _one_way(self) -> "Match":
        from .checks import CHECKS

        if bool(self.any) == bool(self.check):
            raise ValueError("match needs either 'any' (patterns) or 'check' (a built-in check)")
        if self.check and self.check not in CHECKS:
            raise ValueError(f"unknown check {self.check!r}; known: {', '.join(sorted(CHECKS))}")
        return self


class Condition(_Strict):
    """A test on a context fact, or a group of conditions (any_of / all_of / not)."""

    fact: str | None = None
    op: Literal["exists", "missing", "eq", "ne", "lt", "le", "gt", "ge", "in", "not_in",
                "startswith", "contains", "matches", "version_ge", "version_lt", "expr"] = "exists"
    value: Any = None
    any_of: list["Condition"] | None = None
    all_of: list["Condition"] | None = None
    not_: "Condition | None" = Field(None, alias="not")

    @model_validator(mode="after")
    def _shape(self) -> "Condition":
        groups = sum(x is not None for x in (self.any_of, self.all_of, self.not_))
        if groups > 1 or (groups and self.fact is not None):
            raise ValueError("a condition is either a fact test or one of any_of/all_of/not")
        if not groups and self.fact is None and self.op != "expr":
            raise ValueError("a condition needs 'fact' (or op: expr with value)")
        if self.op == "expr":
            if not isinstance(self.value, str):
                raise ValueError("op expr needs a string expression in 'value'")
            expr.compile_expr(self.value)
        if self.op == "matches":
            try:
                regex.compile(str(self.value))
            except (regex.error, RecursionError, OverflowError) as e:
                raise ValueError(f"op matches: value is not a regex: {e}") from None
        return self


class Fix(_Strict):
    kind: FixKind = "flag"
    flag: str | None = None
    name: str | None = None
    action: FixAction | None = None
    value: str | None = None  # a template: "{capture}" / "{let_name:.2f}"
    text: str | None = None  # for kind note; also an optional one-line reason on any fix
    # For a renamed flag: the flag this one replaces (removed from the command, its value kept).
    replaces: str | None = None
    when: list[Condition] = []
    # Releases this fix applies to, when narrower than the rule's (a flag added later);
    # dropped for a log whose release is known and outside this range.
    versions: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> "Fix":
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
        return self


class ExplanationPart(_Strict):
    text: str
    when: list[Condition] = []


class Docs(_Strict):
    what: str
    why: str
    fix: str
    wrong_when: str | None = None  # when the suggested fix is the wrong answer


class Rule(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{2,63}$")
    # Built-in rules use SGD100-SGD999; four digits (SGD1000+) are left to users' own rules.
    code: str = Field(pattern=r"^SGD\d{3,4}$")
    title: str = Field(min_length=5, max_length=120)
    severity: Severity
    family: str
    versions: str = "*"  # SGLang releases that print the message, e.g. "0.4.6-0.5.23"
    sources: list[str] = []  # where the message comes from: "sglang srt/x.py:12 (0.5.14)", "pytorch"
    match: Match
    conditions: list[Condition] = []
    let: dict[str, Union[str, int, float]] = {}  # name: expression, computed in order
    # Sentences; one whose placeholders are unknown for this log, or whose `when` fails, is left out.
    explanation: Union[str, list[Union[str, ExplanationPart]]]
    fixes: list[Fix] = []
    fix_none: str | None = None  # why the rule has no fix, when it has none
    docs: Docs
    consequence: bool = False  # a symptom of another failure (SIGQUIT, peer timeouts)
    fallback: bool = False  # generic: dropped when a more specific error explains the input
    follows: list[str] = []  # rule ids this one is a symptom of, when they fire in the same input
    priority: int = 50  # among findings on the same record, higher sorts first
    path: str | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _check(self) -> "Rule":
        if not self.fixes and not self.fix_none:
            raise ValueError("a rule needs at least one fix, or 'fix_none' saying why there is none")
        for name, source in self.let.items():
            try:
                expr.compile_expr(str(source))
            except expr.ExpressionError as e:
                raise ValueError(f"let.{name}: {e}") from None
        return self

    @property
    def explanation_parts(self) -> list[ExplanationPart]:
        items = [self.explanation] if isinstance(self.explanation, str) else list(self.explanation)
        return [ExplanationPart(text=x) if isinstance(x, str) else x for x in items]

    @cached_property
    def let_compiled(self) -> dict[str, Any]:
        return {k: expr.compile_expr(str(v)) for k, v in self.let.items()}

    @property
    def fixture_dir(self) -> Path | None:
        return Path(self.path).with_suffix("") if self.path else None

    def fixtures(self) -> tuple[list[Path], list[Path]]:
        d = self.fixture_dir
        if d is None or not d.is_dir():
            return [], []
        return sorted(d.glob("fires*.log")), sorted(d.glob("quiet*.log"))

    @cached_property
    def prefilter_literals(self) -> list[str] | None:
        """Literals one of which must appear in a record for this rule to match it.

        None means the rule cannot be prefiltered (some pattern has no required literal);
        such rules run on every record.
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
    return Path(str(resources.files("sglang_doctor") / "rules"))


def _loc(err: dict[str, Any]) -> str:
    return ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or "(rule)"


def _loc_in_message(msg: str) -> tuple[str, ...]:
    """A rule-level check names its field in the message ("let.x: ..."): the path to it."""
    m = regex.search(r"\b(let)\.(\w+):", msg)
    return (m[1], m[2]) if m else ()


def load_rule_file(path: Path) -> Rule:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise RuleLoadError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_RULE_FILE_BYTES:
        raise RuleLoadError(f"{path}: rule file larger than {MAX_RULE_FILE_BYTES} bytes")
    from .safe_yaml import YamlError, line_of, load_yaml_with_node

    try:
        data, node = load_yaml_with_node(raw.decode("utf-8", errors="replace"))
    except YamlError as e:
        raise RuleLoadError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise RuleLoadError(f"{path}: a rule file holds one mapping (id, code, title, ...)")
    rule_id = data.get("id", path.stem)
    try:
        rule = Rule.model_validate({**data, "path": str(path)})
    except ValidationError as e:
        first = e.errors()[0]
        loc = tuple(first.get("loc", ())) or _loc_in_message(first["msg"])
        where = f"{path}:{line}" if (line := line_of(node, loc)) else str(path)
        raise RuleLoadError(f"{where}: rule {rule_id}: field {_loc({'loc': loc})}: {first['msg']}") from None
    except (expr.ExpressionError, RecursionError) as e:
        raise RuleLoadError(f"{path}: rule {rule_id}: {e}") from None
    if rule.id != path.stem:
        raise RuleLoadError(f"{path}:{line_of(node, ('id',)) or 1}: rule {rule.id}: field id: "
                            f"must equal the file name '{path.stem}'")
    return rule


def rule_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.yaml") if p.is_file())


def cache_dir() -> str:
    """The user's cache directory for validated rules and compiled scanners."""
    import os

    return os.environ.get("SGLANG_DOCTOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "sglang-doctor")


def _cache_file(files: list[Path]) -> Path | None:
    """Where the validated rule set for exactly these file contents is cached."""
    import hashlib

    base = cache_dir()
    h = hashlib.sha256(__version__.encode())
    for f in files:
        try:
            h.update(str(f).encode() + b"\0" + f.read_bytes() + b"\0")
        except OSError:
            return None
    return Path(base) / f"rules-{h.hexdigest()[:32]}.pickle"


def _read_cache(path: Path | None) -> list[Rule] | None:
    import pickle

    if path is None:
        return None
    try:
        # Only a cache file this user wrote, in a directory only this user can write.
        import os

        st, dst = os.stat(path), os.stat(path.parent)
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or dst.st_mode & 0o022):
            return None
        with open(path, "rb") as fh:
            rules = pickle.load(fh)
    except Exception:  # missing, stale format, corrupt, unreadable: validate from the files
        return None
    return rules if isinstance(rules, list) and all(isinstance(r, Rule) for r in rules) else None


def _write_cache(path: Path | None, rules: list[Rule]) -> None:
    import os
    import pickle
    import tempfile

    if path is None:
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rules-")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(rules, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
        from .scan import prune

        prune(str(path.parent), "rules-")
    except Exception:  # read-only home, full disk: run without a cache
        pass


def load_rules(extra_dirs: list[str] | None = None, builtin: bool = True, cache: bool = True) -> list[Rule]:
    """Load and validate rule files; the validated set is cached keyed by the files' content.

    The cache holds only what these same bytes validated to (pickled by this tool in the
    user's own cache directory), so an edited or added rule file always gets validated.
    """
    dirs: list[Path] = [builtin_rules_dir()] if builtin else []
    for d in extra_dirs or []:
        p = Path(d)
        if not p.is_dir():
            raise RuleLoadError(f"{d}: rules directory not found")
        dirs.append(p)
    files = [f for d in dirs for f in rule_files(d)]
    cache_path = _cache_file(files) if cache else None
    cached = _read_cache(cache_path)
    if cached is not None:
        return cached
    rules = _load_files(dirs)
    _write_cache(cache_path, rules)
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
