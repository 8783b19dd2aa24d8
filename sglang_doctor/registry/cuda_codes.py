"""CUDA runtime (cudaError_t), driver (CUresult) and NCCL (ncclResult_t) result codes.

``data/cuda-codes.json`` is built by ``tools/extract_cuda_codes.py`` from NVIDIA's wheels: names,
numbers and doc comments from the headers, the messages the libraries print, and each code's
fix class from the hand-written ``data/cuda-classes.yaml`` (embedded by the same tool).

``resolve(text)`` finds every code a log line names, in any of the forms the stack prints::

    CUDA error: no kernel image is available for execution on the device      (torch)
    CUDA error code=35(b'cudaErrorInsufficientDriver')                        (cuda-python)
    CUresult error: 2 (out of memory) / CUDA_ERROR_OUT_OF_MEMORY             (driver API users)
    Triton Error [CUDA]: misaligned address                                   (cuGetErrorString)
    NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (...)    (ncclGetErrorString)
    ncclSystemError: System call (e.g. socket, malloc) or external library call failed

Short messages ("out of memory", "timeout", "invalid argument") count only in such a context;
long ones ("an illegal memory access was encountered") count anywhere. Nothing is read at import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

from sglang_doctor.registry.packaged import load_json

# A message this long is specific enough to be recognised without a "CUDA error:" before it.
_BARE_MESSAGE_MIN = 24

_NAME = regex.compile(r"\b(cuda(?:Error[A-Z]\w*|Success)|CUDA_(?:ERROR_[A-Z0-9_]+|SUCCESS)|nccl[A-Z]\w*)\b")
# Every form below contains one of these (or a driver call name, or a long message).
_TRIGGERS = ("cuda error", "cuda driver error", "cuda runtime error", "cuda out of memory", "cuda failure",
             "curesult", "triton error", "nccl error", "nccl failure", "ncclresult")
_CU_CALL = regex.compile(r"\bcu[A-Z]\w+")
# (regex, enum the context implies, whether it names the driver API)
_CONTEXTS: list[tuple["regex.Pattern[str]", str, bool]] = [
    (regex.compile(r"CUresult(?: error)?\s*[:=]?\s*(?:result\s*=\s*)?(?P<code>\d+)(?:\s*\((?P<msg>[^)\n]+)\))?"), "CUresult", True),
    (regex.compile(r"Triton Error \[CUDA\]:\s*(?P<msg>[^\n]+)"), "CUresult", True),
    (regex.compile(r"\bcu[A-Z]\w+(?:\(\))? (?:failed|returned)[^\n]*?(?:error|status)?\s*(?P<code>\d+)?\s*[:(]\s*(?P<msg>[^\n)]+)"),
     "CUresult", True),
    (regex.compile(r"(?i)\bCUDA driver error(?: code)?\s*[=:]?\s*(?P<code>\d+)\b"), "CUresult", True),
    (regex.compile(r"(?i)\bCUDA driver error[^:\n]{0,40}:\s*(?P<msg>[^\n]+)"), "CUresult", True),
    (regex.compile(r"(?i)\bCUDA (?:runtime )?error(?: code)?\s*[=:]?\s*(?P<code>\d+)\b"), "cudaError_t", False),
    (regex.compile(r"(?i)\bCUDA(?: runtime)? error[^:\n]{0,40}:\s*(?P<msg>[^\n]+)"), "cudaError_t", False),
    (regex.compile(r"(?i)\bCUDA (?P<msg>out of memory)"), "cudaError_t", False),
    (regex.compile(r"(?i)\bCuda failure (?:\d+ )?'(?P<msg>[^'\n]+)'"), "cudaError_t", False),
    (regex.compile(r"NCCL (?:error|failure)\b[^\n]*?(?:, |: |')(?P<msg>[a-z][^\n']+)"), "ncclResult_t", False),
    (regex.compile(r"\bncclResult\w*\s*[=:]?\s*(?P<code>\d+)"), "ncclResult_t", False),
]


@dataclass(frozen=True)
class CodeEntry:
    """One CUDA / NCCL error code as its header declares it."""

    package: str  # cuda | nccl
    enum: str  # cudaError_t | CUresult | ncclResult_t
    name: str
    code: int
    doc: str  # the first sentence of the header's doc comment ("" for NCCL: nccl.h has none)
    message: str | None  # what the library's *GetErrorString returns
    cls: str | None = None  # the fix class (data/cuda-classes.yaml)
    summary: str | None = None  # the class's one line
    fixes: tuple[dict[str, Any], ...] = field(default=())
    cuda: str | None = None  # "12", "13" or "12,13": the CUDA majors whose headers have it
    message_from: str | None = None  # "cudart" when a CUresult borrows the runtime's message
    deprecated: bool = False
    defer: str | None = None  # the class is left to other rules (why), see data/cuda-classes.yaml
    isolate: bool = False  # the class calls for the crash subsystem's isolating switches

    def origin(self) -> dict[str, Any]:
        """The JSON ``origin`` of a finding about this code."""
        return {"package": self.package, "name": self.name, "code": self.code}

    @property
    def what(self) -> str:
        """The header's doc comment, else (NCCL) the library's own text without its NCCL_DEBUG hint."""
        return self.doc or (self.message or "").split(" (run with")[0]

    @property
    def explanation(self) -> str:
        """One line for a report."""
        return f"{self.name} ({self.enum} {self.code}): {self.what}"


class Codes:
    def __init__(self, data: dict[str, Any]) -> None:
        self.header = {k: v for k, v in data.items() if k != "entries"}
        classes = data.get("classes", {})
        self.entries: list[CodeEntry] = []
        for e in data["entries"]:
            cls = e.get("class")
            body = classes.get(cls, {}) if cls else {}
            self.entries.append(CodeEntry(
                package=e["package"], enum=e["enum"], name=e["name"], code=e["code"], doc=e["doc"],
                message=e["message"], cls=cls, summary=body.get("summary"), fixes=tuple(body.get("fixes", ())),
                cuda=e.get("cuda"), message_from=e.get("message_from"), deprecated=bool(e.get("deprecated")),
                defer=body.get("defer"), isolate=bool(body.get("isolate"))))
        self.by_name = {e.name: e for e in self.entries}
        self.by_code: dict[tuple[str, int], CodeEntry] = {}
        for e in self.entries:
            self.by_code.setdefault((e.enum, e.code), e)
        # message (lowercased, NCCL's "(run with NCCL_DEBUG=...)" tail dropped) -> entries by enum
        self.by_message: dict[str, dict[str, CodeEntry]] = {}
        for e in self.entries:
            if e.message:
                self.by_message.setdefault(_message_key(e.message), {}).setdefault(e.enum, e)
        self._long_keys = [m for m in sorted(self.by_message, key=len, reverse=True) if len(m) >= _BARE_MESSAGE_MIN]
        self._long = regex.compile("|".join(regex.escape(m) for m in self._long_keys), regex.IGNORECASE)
        # the context words, and every code name ("cudaerror...", "cuda_error_...", "ncclsystemerror")
        self._triggers = sorted(set(_TRIGGERS) | {"cudaerror", "cuda_error", "cudasuccess", "cuda_success"}
                                | {e.name.lower() for e in self.entries if e.package == "nccl"})

    def _by_message(self, text: str, enum: str) -> CodeEntry | None:
        """The entry whose message ``text`` starts with (longest first), preferring ``enum``."""
        low = text.strip().strip("'\"").lower()
        best = None
        for key, by_enum in self.by_message.items():
            if low.startswith(key) and (len(low) == len(key) or not low[len(key)].isalnum()):
                if best is None or len(key) > len(best[0]):
                    best = (key, by_enum)
        if best is None:
            return None
        by_enum = best[1]
        return by_enum.get(enum) or by_enum.get("cudaError_t") or next(iter(by_enum.values()))

    def resolve(self, text: str) -> list[CodeEntry]:
        """Every code ``text`` names (by name, by number in context, or by message), in order."""
        low = text.lower()
        if not (any(w in low for w in self._triggers) or _CU_CALL.search(text)
                or any(m in low for m in self._long_keys)):
            return []  # the common case: a line that names no code (a few substring tests)
        found: list[tuple[int, CodeEntry]] = []
        driver_context = False
        for m in _NAME.finditer(text):
            e = self.by_name.get(m.group(1))
            if e:
                found.append((m.start(), e))
        for rx, enum, driver in _CONTEXTS:
            for m in rx.finditer(text):
                driver_context |= driver
                gd = m.groupdict()
                e = None
                if gd.get("code"):
                    e = self.by_code.get((enum, int(gd["code"])))
                if e is None and gd.get("msg"):
                    e = self._by_message(gd["msg"], enum)
                if e:
                    found.append((m.start(), e))
        for m in self._long.finditer(text):
            by_enum = self.by_message[m.group().lower()]
            pick = by_enum.get("CUresult") if driver_context else None
            found.append((m.start(), pick or by_enum.get("cudaError_t") or next(iter(by_enum.values()))))
        out: list[CodeEntry] = []
        seen: set[str] = set()
        for _, e in sorted(found, key=lambda f: f[0]):
            # one error printed two ways (cudaErrorX and its message) is one code
            twin = e.message and any(o.message == e.message and o.package == e.package for o in out)
            if e.name not in seen and not twin:
                seen.add(e.name)
                out.append(e)
        return out


def _message_key(message: str) -> str:
    return message.split(" (run with")[0].strip().lower()


def load() -> Codes:
    return load_json("cuda-codes.json", Codes)


def resolve(text: str) -> list[CodeEntry]:
    """The CUDA / NCCL result codes ``text`` names, in the order they appear."""
    return load().resolve(text)


def by_name(name: str) -> CodeEntry | None:
    """``cudaErrorInsufficientDriver``, ``CUDA_ERROR_OUT_OF_MEMORY``, ``ncclSystemError`` ..."""
    return load().by_name.get(name)


def by_code(enum: str, code: int) -> CodeEntry | None:
    """(``"cudaError_t"`` | ``"CUresult"`` | ``"ncclResult_t"``, number) -> entry."""
    return load().by_code.get((enum, code))


def classes() -> dict[str, dict[str, Any]]:
    """The curated fix classes: name -> {summary, fixes}."""
    return dict(load().header.get("classes", {}))
