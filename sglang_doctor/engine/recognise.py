"""The catalog recognisers: built-in checks that explain a failure from what SGLang, CUDA, NCCL and the
packages say about themselves (registry/messages, cuda_codes, pins, libraries), for a failed launch no
specific rule explains.

They run late (engine/analyze.late_findings): only when the launch has no specific error, so a log a
rule explains never loads a catalog. Each reads the failure's own texts (facts/crash.py: the
exceptions of the tracebacks that count, exception and native error lines), looks them up, and returns
one hit with the fixes the catalog gives and the finding's `origin`.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

Fix = dict[str, Any]  # a fix as a rule file writes it (engine.rules.Fix fields)

from sglang_doctor.engine.hits import CheckHit
from sglang_doctor.facts.context import Context

# Texts looked up per launch: the first failures say what went wrong; later ones are its echoes.
MAX_TEXTS = 8
# Log levels whose messages count as an error SGLang reported (info/debug lines do not).
_ERROR_LEVELS = ("error", "exception", "critical", "fatal", "warning")


class Failure(NamedTuple):
    """One failure text of the launch: the line quoted for it, and what is looked up."""

    line: int
    quote: str
    message: str  # the exception chain, or the error line
    frames: tuple[str, ...] = ()


def failure_texts(ctx: Context) -> list[Failure]:
    """The launch's failure texts, first first: each counted traceback (its exception chain) and each
    exception or native error line outside them, or the error pasted to `explain`. Empty when the launch shows no sign of failure."""
    crash = ctx.crash
    if crash.lead is None:
        return []
    out: list[Failure] = []
    spans: list[tuple[int, int]] = []
    for t in crash.tracebacks:
        if ctx.handled_near(t.start, t.end) or (crash.user_stop is not None and t.start >= crash.user_stop):
            continue
        if not t.exceptions:
            continue
        spans.append((t.start, t.end))
        sign = next((s for s in crash.signs if s.kind in ("traceback", "native") and t.start <= s.line <= t.end), None)
        line, quote = (sign.line, sign.text) if sign else (t.start, t.exceptions[-1].split("\n")[0])
        if t.cut and t.exception_line:  # a chain cut in a later part: the exception it shows, not the cut frame
            line, quote = t.exception_line
        out.append(Failure(line, quote, "\n".join(t.exceptions), tuple(t.frames)))
    for s in crash.signs:
        if s.kind == "exception" and not any(a <= s.line <= b for a, b in spans) and \
                (crash.user_stop is None or s.line < crash.user_stop):
            out.append(Failure(s.line, s.text, s.text))
    if not out and crash.lead is not None and crash.lead.kind == "pasted":  # `explain "an illegal memory access …"`
        out.append(Failure(crash.first_text[0], crash.first_text[1], crash.first_text[1]))
    out.sort(key=lambda f: f.line)
    return out[:MAX_TEXTS]


# --- SGLang's own messages ---------------------------------------------------------------------

_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*[a-z0-9]")
# The direction an advice sentence gives the flag it names.
_LOWER = re.compile(r"(?i)\b(?:smaller|lower|reduce|decrease|less)\b")
_RAISE = re.compile(r"(?i)\b(?:larger|bigger|higher|increase|raise|more)\b")
_NOT_USING = re.compile(r"(?i)\b(?:not using|without|remove|drop)\s+(?:the\s+)?(?:flag\s+)?--")


def advice_fixes(advice: tuple[str, ...], flags_named: tuple[str, ...], release: str | None,
                 message: str = "") -> list[Fix]:
    """A message's numbered advice as fixes (a flag with the direction its sentence gives, spelled for
    the release), else the flags it names; advice that names no flag becomes a note."""
    from sglang_doctor.registry.spelling import current_spelling

    out: list[Fix] = []
    seen: set[str] = set()

    def add(flag: str, action: str, text: str) -> None:
        for spelled, value in current_spelling(flag, release):
            if spelled in seen:
                continue
            seen.add(spelled)
            act = action
            if value is not None:  # a switch that the release spells as a value of a new flag
                act = "set"
            elif action == "add" and spelled != flag:
                act = "set"
            out.append({"kind": "flag", "flag": spelled, "action": act, "value": value, "text": text})

    for item in advice:
        named = _FLAG.findall(item)
        if not named:
            out.append({"kind": "note", "text": f"the message's advice: {item.strip().rstrip('.')}"})
            continue
        add(named[0], _direction(item, named[0], release), f"the message's advice: {item.strip().rstrip('.')}")
    if not advice:
        # No numbered advice: each sentence that names a flag says what to do with it.
        for flag in flags_named:
            sentence = next((s for s in _SENTENCE.split(message) if flag in s), message)
            add(flag, _direction(sentence, flag, release), "named by the message")
    return out


_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


def _direction(sentence: str, flag: str, release: str | None) -> str:
    """What a sentence asks of the flag it names: remove, lower, raise, add (a switch), else set."""
    if _NOT_USING.search(sentence):
        return "remove"
    if _LOWER.search(sentence):
        return "lower"
    if _RAISE.search(sentence):
        return "raise"
    if _is_switch(flag, release) and _ASKS.search(sentence):
        return "add"
    return "set"


# A message asking for a switch ("Please add `--is-embedding`", "launched with --enable-x").
_ASKS = re.compile(r"(?i)\b(?:add|set|use|enable|specify|pass|with|by)\b")


def _is_switch(flag: str, release: str | None) -> bool:
    """A flag that takes no value in the release (or the newest one)."""
    from sglang_doctor.registry import flags

    spec = flags.resolve(flag, release or flags.releases()[-1], allow_abbrev=False)
    return spec is not None and not spec.takes_value


def sglang_message(ctx: Context) -> list[CheckHit]:
    """The first failure whose text is one of SGLang's own messages (not a wrapper that only passes
    another error on): which check raised it, where, in which releases, and the message's advice."""
    texts = failure_texts(ctx)
    if not texts:
        return []
    from sglang_doctor.registry import messages

    from sglang_doctor.registry.spelling import single_release

    release = single_release(ctx.get("sglang.version"))
    catalog = messages.load()
    for f in texts:
        for e in catalog.lookup(f.message, release):
            if e.generic or (e.kind == "log" and e.cls.lower() not in _ERROR_LEVELS):
                continue
            if not (e.advice or e.flags) and _names_a_code(f.message):
                return []  # a check that only passes a CUDA/NCCL code on: cuda_code explains the code
            origin = e.origin(release)
            caps = {"function": e.function, "file": e.file, "line": str(origin["line"]), "releases": e.release_range,
                    "raised": e.cls if e.kind != "log" else f"logger.{e.cls}", "kind": e.kind,
                    "template": e.template.split("\n")[0][:200]}
            if e.flags:
                caps["flags"] = ", ".join(e.flags)
            if e.advice:
                caps["advice"] = "; ".join(a.strip().rstrip(".") for a in e.advice)
            fixes = [*advice_fixes(e.advice, e.flags, release, e.template),
                     {"kind": "note", "text": f"read the check in sglang/{e.file} ({e.function}) for the condition it tests"}]
            return [CheckHit(f.line, f.quote, caps, tuple(fixes), origin)]
    return []


# --- CUDA runtime / driver and NCCL result codes ------------------------------------------------

def cuda_code(ctx: Context) -> list[CheckHit]:
    """The first result code the failure names (any form: `CUDA error: <message>`, `code=35(...)`,
    `CUresult error: 2`, `cudaErrorX`, `NCCL error ...: unhandled system error`), explained from the
    header's doc comment, with its class's fixes (data/cuda-classes.yaml). A class the map defers to
    other rules (out of memory: the memory rules) gives no finding."""
    texts = failure_texts(ctx)
    if not texts:
        return []
    from sglang_doctor.registry import cuda_codes

    for f in texts:
        found = [e for e in cuda_codes.resolve(f.message) if e.code != 0]
        if not found:
            continue
        e = found[0]  # the first code named is the cause; later ones are its echoes
        if e.defer:
            return []
        caps = {"name": e.name, "enum": e.enum, "code": str(e.code), "package": e.package,
                "library": "NCCL" if e.package == "nccl" else
                           ("the CUDA driver API" if e.enum == "CUresult" else "the CUDA runtime"),
                "what": _sentence(e.what)}
        if e.message:
            caps["message"] = e.message
        if e.cls:
            caps["class"] = e.cls
            caps["summary"] = e.summary or ""
        # a kernel fault: engine/isolate.py adds the crash subsystem's switches (before the class's fixes)
        return [CheckHit(f.line, f.quote, caps, tuple(dict(fx) for fx in e.fixes), e.origin(), isolate=e.isolate)]
    return []


def _names_a_code(text: str) -> bool:
    from sglang_doctor.registry import cuda_codes

    return any(e.code != 0 for e in cuda_codes.resolve(text))


def _sentence(text: str) -> str:
    """A doc comment's text as one clause ("This indicates that ..." -> "... ")."""
    text = " ".join(text.split()).rstrip(".")
    return re.sub(r"^This (?:indicates|error indicates|result indicates)(?: that)? ", "", text)
