"""Signs that the launch failed, read off the log whatever rule knows (or does not know) why.

A traceback, `Scheduler hit an exception`, `Received sigquit from a child process`, a process
tree killed with its parent, a non-zero exit code, a watchdog timeout or its debug dump, a failed
warm-up, an exception line, faulthandler's report of a native crash, and a launch that stalled
inside CUDA graph capture or weight loading: each is a sign. The context records them as the
stream goes by and, at the end, states the crash as facts (`crash.*`): what the evidence is, where
the log stops, the exception (first and last of its chain), the deepest SGLang frame and the
subsystem it belongs to (registry/subsystems.py). The crash net rule (SGD739) turns those facts
into an error when no other rule explains the failure, so a failed launch is never called clean.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from sglang_doctor.read.records import REQUEST_ECHO, Record, frame_of, ts_seconds

# (The context, facts/context.py, which owns this watch and passes itself to finish(); typed
# loosely here because it imports this module.)
Context = Any

# Signs, by the text that shows them (each message is SGLang's, PyTorch's, the shell's or docker's).
_COMPONENT = re.compile(r"\b(?P<c>Scheduler|DetokenizerManager|TokenizerManager|DataParallelController|"
                        r"TpModelWorkerClient) hit an exception")
_SIGQUIT = "Received sigquit from a child process"
_KILL_TREE = re.compile(r"kill_process_tree called: parent_pid=\d+, include_parent=(?P<parent>True|False)")
# sglang engine.py `Rank N scheduler died during initialization (exit code: -6)`, watchdog.py `crashed with
# exit code -9`, 0.4.x `Exit code: -9`, torch elastic `exitcode  : -6` / `(exitcode: 1)`, docker compose
# `sglang-1 exited with code 137`, a shell's `exit status 1`.
_EXIT = re.compile(r"(?i)\b(?:exit(?:ed with)? ?code|exitcode|exit status)\s*[:=]?\s*\(?(?P<code>-?\d+)\b")
_SCHEDULER_DEAD = re.compile(r"Rank \d+ scheduler is dead|scheduler died during initialization")
# The shell's report of a signal that killed the process it ran.
_SHELL_SIGNAL = re.compile(r"^(?:.*: )?(?:Segmentation fault|Aborted|Bus error|Killed)(?: \(core dumped\))?\s*$")
# sglang watchdog.py `{name} watchdog timeout (...)`, scheduler.py `Watchdog timeout (...)` (0.4.x),
# `{name} debug info:` (the dump before the timeout); PyTorch's NCCL watchdog.
_WATCHDOG = re.compile(r"(?i)\bwatchdog timeout\b|\b\w+ debug info:\s*$|Watchdog caught collective operation timeout")
_SOFT = "self.soft=True"
# http_server.py `Initialization failed. warmup error: …`, `Disaggregation warmup failed`, and a warm-up
# request the HTTP client logged with an error status (urllib3's debug line, through a proxy or not).
_WARMUP = re.compile(r"Initialization failed\. warmup error|warmup failed|"
                     r"\"(?:GET|POST) \S*/(?:get_model_info|model_info|generate|health_generate|health)"
                     r"(?:\?\S*)? HTTP/1\.[01]\" (?P<status>[45]\d\d)\b")
# multiprocessing's report of a child that died of an exception (process.py _bootstrap writes it before
# the traceback): `Process Process-1:`, `Process SpawnProcess-2:`.
_MP_CHILD = re.compile(r"^Process [\w.-]{1,80}:\s*$")
# A C++ exception nothing caught (libstdc++'s verbose terminate handler: the type, then `  what():  <message>`
# on the next line), and a Rust panic (sgl-router, sglang's Rust parts): `thread 'NAME' panicked at FILE:L:C:`
# with the message on the next line (Rust 1.73+), or `panicked at 'MESSAGE', FILE:L:C` before.
_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^'\n]{1,200})'")
_WHAT = re.compile(r"^\s*what\(\):\s+(?P<msg>\S.*)")
_PANIC = re.compile(r"^thread '[^'\n]{0,200}' panicked at (?:'(?P<msg>.{0,500})', )?(?P<where>\S+?:\d+:\d+):?\s*$")
# An error a native library prints on a line of its own (flashinfer's and sgl-kernel's CUDA checks, HIP's).
_NATIVE_ERROR = re.compile(r"^(?:CUDA|HIP|NCCL|cuBLAS|CUBLAS|cuDNN) [Ee]rror: \S")
# A CUDA driver API result a native library prints and then aborts on (torch_memory_saver.cpp:
# `[torch_memory_saver.cpp] CUresult error  result=2 file=… func=cu_mem_create line=103`).
_CURESULT = re.compile(r"\bCUresult error\b[^\n]*?\bresult ?[=:] ?-?\d+")
# An exception line standing at the start of a logged message.
_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*(?:[A-Za-z_]\w*(?:Error|Exception)|Exception)(?::\s|\s*$)")
_TRACEBACK = "Traceback (most recent call last):"
_FATAL = "Fatal Python error: "
_USER_STOP = re.compile(r"^(?:KeyboardInterrupt|SystemExit: 0)\b")
_FRAME_PARTS = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
# A traceback that is not the server's failure: a request failing inside the HTTP stack while the
# server runs, or a client's own traceback (an HTTP library's exception, no SGLang server frame).
_REQUEST_SIDE = re.compile(r"Exception in ASGI application|uvicorn/protocols|starlette/")
_CLIENT_EXC = re.compile(r"^(?:openai|httpx|httpcore|requests|aiohttp|urllib3)\.[\w.]*(?:Error|Exception|Timeout)\b")
_SERVER_FRAME = ("sglang/srt/", "sglang/launch_server")
# What a pasted line must look like to be taken for an error message (`explain "CUDA out of memory."`).
_ERRORISH = re.compile(r"(?i)error|exception|fail|fault|abort|out of memory|not (?:supported|found)|cannot|"
                       r"can't|unable|invalid|illegal|timed? ?out|refused|denied|killed|crash")
FRAGMENT_LINES = 5  # at most this many lines and no SGLang line: a message copied on its own
# What such a fragment must say to be taken for a failure (stricter than a paste to `explain`, which
# the user offers as an error: a warning such as "... is not supported by ..." is not one).
_FRAGMENT_ERROR = re.compile(r"(?i)(?:error|exception)\b|\b(?:fail(?:ed|ure|s)?|fault|abort(?:ed)?|out of memory|illegal|"
                             r"timed? ?out|refused|denied|killed|crash(?:ed)?)\b")
FRAGMENT_CHARS = 500  # longer is a dump (a server_args excerpt), not a message
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")

# An exception that only says something else failed first (a peer rank, the NCCL/gloo link to it, a
# scheduler whose error is "above"): the crash net then reports a symptom, and gives way to the rule that
# says where the cause is.
SYMPTOM_EXCEPTION = re.compile(
    r"gloo/transport|Connection (?:closed|reset) by peer|remote process exited|Broken pipe|"
    r"Watchdog caught collective|could finish the model loading, but there are other ranks|monitoredBarrier|"
    r"Initialization failed\. Please see the error messages above|Rank \d+ scheduler is dead|"
    r"scheduler died during initialization|NCCL communicator was aborted on rank|"
    # ProcessGroupNCCL's watchdog throws it when a collective timed out or the communicator failed
    r"instance of 'c10::DistBackendError'")
# Signs that mean a failure even after the server reported ready (the others may be one request's).
FATAL_KINDS = frozenset({"component", "sigquit", "kill-tree", "exit", "watchdog", "native"})
# Lines a stalled phase may show last that say what it is doing (a JIT build during capture).
# (not PyTorch's hint after a device error: "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions")
_BUILD_NOTE = re.compile(r"(?i)\bJIT\b|\bcompil(?:e|ing)\b(?! with .TORCH_USE_\w+_DSA)|\bninja\b|\bbuilding\b|\bautotun")
# Minutes without progress inside a phase that a healthy launch does not take.
STALL_MINUTES = {"cuda graphs": 10, "weights": 60}
_PHASE_NAMES = {"cuda graphs": "CUDA graph capture", "weights": "weight loading"}


def scan_patterns() -> list[str]:
    """The line-level signs of a failure, for the stage-one scanner: a sign on a line no rule reads
    (a lone `Killed`, an exit code) must reach the crash watch on the block path too."""
    return [_COMPONENT.pattern, re.escape(_SIGQUIT), _KILL_TREE.pattern, _EXIT.pattern, _SCHEDULER_DEAD.pattern,
            _SHELL_SIGNAL.pattern, _WATCHDOG.pattern, _WARMUP.pattern, _MP_CHILD.pattern, _NATIVE_ERROR.pattern,
            _TERMINATE.pattern, _WHAT.pattern, _PANIC.pattern, _CURESULT.pattern]


class Sign(NamedTuple):
    """One sign of failure: its kind, the input line, the line's text and a phrase for it."""

    kind: str
    line: int
    text: str
    what: str
    after_ready: bool = False


class Seen(NamedTuple):
    """A traceback (or faulthandler report) the log holds."""

    start: int
    end: int
    exceptions: list[str]
    frames: list[str]
    cut: str  # "" when complete; else what the paste stops after
    after_ready: bool
    head: str
    exception_line: tuple[int, str] | None = None  # (line, text) of its last exception, cut or not


class CrashWatch:
    """Collects the signs of failure of one input as its records stream by."""

    MAX_SIGNS = 64

    def __init__(self) -> None:
        self.signs: list[Sign] = []
        self.tracebacks: list[Seen] = []
        self.last_line = 0
        self.last_text = ""
        self.begins: dict[int, str] = {}
        self.lead: Sign | None = None  # the sign a finding quotes, once finish() has run
        self.pasted = False  # an error given to `explain`: the paste itself says something failed
        self.first_text: tuple[int, str] | None = None
        self.user_stop: int | None = None  # line of a KeyboardInterrupt: what follows is the shutdown
        self.message_due: tuple[int, str] | None = None  # (line, kind) of a terminate / panic line: its message follows
        self.headers: set[int] = set()  # lines of terminate / panic headers (they count only if their message does)

    def _add(self, kind: str, rec: Record, what: str, ready: bool, text: str | None = None) -> None:
        if len(self.signs) < self.MAX_SIGNS:
            self.signs.append(Sign(kind, rec.start, text if text is not None else rec.lines[0].text, what, ready))

    def observe(self, rec: Record, ready: bool) -> None:
        self.last_line = rec.end
        if rec.kind == "traceback":
            self._traceback(rec, ready)
            return
        msg = rec.message
        if not msg.strip() or msg.startswith(REQUEST_ECHO):  # (a request's text is user data)
            return
        if self.first_text is None:
            self.first_text = (rec.start, rec.lines[0].text)
        self.last_text = msg
        if self.message_due is not None:
            self._native_message(rec, msg, ready)
        if "terminate called" in msg:
            m = _TERMINATE.search(msg)
            if m:
                self._add("native", rec, f"an uncaught C++ exception ended the process ({m['type']})", ready)
                self.message_due = (rec.start, "terminate")
                self.headers.add(rec.start)
        if "panicked at" in msg:
            m = _PANIC.match(msg)
            if m:
                self._add("native", rec, f"a Rust panic at {m['where'].rsplit('/', 1)[-1]}", ready)
                self.headers.add(rec.start)
                if m["msg"]:
                    self._add("exception", rec, f"a panic ({_first_line(m['msg'])})", ready, m["msg"])
                else:
                    self.message_due = (rec.start, "panic")
        if "begin" in msg:  # a phase's start line (weights, CUDA graphs): quoted if the launch stalls there
            self.begins[rec.start] = rec.lines[0].text
            if len(self.begins) > 8:
                del self.begins[min(self.begins)]
        if _TRACEBACK in msg:  # a traceback header behind a prefix no reader peeled
            self._add("traceback", rec, "a traceback", ready)
        m = _COMPONENT.search(msg)
        if m:
            self._add("component", rec, f"the {m['c']} process hit an exception", ready)
        if _SIGQUIT in msg:
            self._add("sigquit", rec, "the launcher received SIGQUIT from a failed child process", ready)
        m = _KILL_TREE.search(msg)
        if m and m["parent"] == "True":  # (include_parent=False is also the normal exit and Ctrl-C cleanup)
            self._add("kill-tree", rec, "the launcher killed its process tree", ready)
        if "xit" in msg or "XIT" in msg:
            m = _EXIT.search(msg)
            if m and m["code"] not in ("0", "-0"):
                self._add("exit", rec, f"a process exited with code {m['code']}", ready)
        if "scheduler" in msg and _SCHEDULER_DEAD.search(msg):
            self._add("exit", rec, "a scheduler process died", ready)
        if msg[-1:] in ")d" and _SHELL_SIGNAL.match(msg):
            self._add("exit", rec, f"the process was killed ({msg.strip()})", ready)
        if ("atchdog" in msg or "debug info:" in msg) and _SOFT not in msg and _WATCHDOG.search(msg):
            self._add("watchdog", rec, "a watchdog found no progress (a hang)", ready)
        if ("arm" in msg or "HTTP/1." in msg) and not ready:
            m = _WARMUP.search(msg)
            if m:
                what = (f"the warm-up request got HTTP {m['status']}" if m["status"]
                        else "the warm-up request failed")
                self._add("warmup", rec, what, ready)
        if msg.startswith("Process ") and _MP_CHILD.match(msg):
            self._add("exception", rec, "a child process died of an exception (multiprocessing)", ready)
        if "CUresult" in msg and _CURESULT.search(msg):
            self._add("exception", rec, f"a CUDA driver error ({_first_line(msg)})", ready, msg)
        if "rror: " in msg[:14] and _NATIVE_ERROR.match(msg):
            self._add("exception", rec, f"an error ({_first_line(msg)})", ready, msg)
        if ("Error" in msg or "Exception" in msg) and _EXC_LINE.match(msg):
            if _USER_STOP.match(msg):
                self.user_stop = self.user_stop or rec.start
            self._add("exception", rec, f"an exception ({_first_line(msg)})", ready, msg)

    def _native_message(self, rec: Record, msg: str, ready: bool) -> None:
        """The message line after a C++ terminate (`  what():  …`) or a Rust panic header: an exception
        text the catalogs can look up (`what():  CUDA error: uncorrectable ECC error encountered`)."""
        line, kind = self.message_due  # type: ignore[misc]
        self.message_due = None
        if rec.start != line + 1:
            return
        if kind == "terminate":
            m = _WHAT.match(msg)
            text = m["msg"] if m else None
        else:
            text = msg.strip() or None
        if text:
            self._add("exception", rec, f"an exception ({_first_line(text)})", ready, text)

    def _traceback(self, rec: Record, ready: bool) -> None:
        excs = rec.exceptions
        head = rec.message
        if _not_the_servers(rec):
            return
        native = bool(excs) and excs[0].startswith(_FATAL)
        if excs and _USER_STOP.match(excs[-1]):
            self.user_stop = self.user_stop or rec.start
        cut = "" if native else _cut_after(rec)
        self.tracebacks.append(Seen(rec.start, rec.end, list(excs), list(rec.frames), cut, ready, head,
                                    _exception_line(rec)))
        qline, qtext = _quote(rec, cut)
        if native:
            self._add("native", rec, f"a native crash ({_first_line(excs[0])})", ready)
        elif len(self.signs) < self.MAX_SIGNS:
            self.signs.append(Sign("traceback", qline, qtext, "a traceback", ready))
        m = _COMPONENT.search(head)
        if m:
            self._add("component", rec, f"the {m['c']} process hit an exception", ready)
        self.last_text = rec.lines[-1].text

    # -- at the end of the input --------------------------------------------------
    def finish(self, ctx: Context) -> None:
        tbs = [t for t in self.tracebacks if not ctx.handled_near(t.start, t.end)
               and (self.user_stop is None or t.start < self.user_stop)]
        signs = [s for s in self.signs if self._counts(s, ctx)]
        ready = ctx.get("server.ready") is not None
        stall = None if signs or ready else self._stall(ctx)
        if stall is not None:
            signs.append(stall)
        # A message given on its own: pasted to `explain`, or a file of a few lines with nothing of SGLang
        # around it (a fragment copied from a thread) - the message is the failure.
        fragment = not self.pasted and 0 < (ctx.input_lines or self.last_line) <= FRAGMENT_LINES and not (
            ctx.sglang_mentioned or ctx.server_args or ctx.command)
        if not self.signs and self.first_text is not None and (
                (self.pasted and _ERRORISH.search(self.first_text[1])) or
                (fragment and len(self.first_text[1]) <= FRAGMENT_CHARS and _FRAGMENT_ERROR.search(self.first_text[1]))):
            what = "the error pasted to explain" if self.pasted else "an error message on its own (no SGLang log around it)"
            signs.append(Sign("pasted", self.first_text[0], self.first_text[1], what))
        if not signs:
            return
        lead = self.lead = _lead(signs)
        ctx.set("crash.evidence", _evidence_phrase(signs), lead.line)
        ctx.set("crash.kind", lead.kind, lead.line)
        tb = next((t for t in tbs if not t.after_ready), tbs[0] if tbs else None)
        if tb is not None:
            self._traceback_facts(ctx, tb)
        ctx.set("crash.stops", self._stops(ctx, tb, stall, ready), self.last_line or None)
        ctx.set("crash.known", known_facts(ctx), None)

    def _counts(self, s: Sign, ctx: Context) -> bool:
        if self.user_stop is not None and s.line >= self.user_stop:
            return False  # Ctrl-C / docker stop: the shutdown that follows is not a failure
        if s.after_ready and s.kind not in FATAL_KINDS:
            return False  # after ready, a traceback or an exception line may be one request's
        if s.kind in ("traceback", "exception"):
            span = next(((t.start, t.end) for t in self.tracebacks if t.start <= s.line <= t.end), (s.line, s.line))
            if ctx.handled_near(*span):
                return False
        if s.line in self.headers and ctx.handled_near(s.line, s.line + 1):
            return False  # a terminate / panic header whose message a rule explains
        return True

    def _stall(self, ctx: Context) -> Sign | None:
        """A phase that began and never ended, with a sign that it hung rather than that the excerpt
        was cut: a build note last, or long minutes without progress."""
        if not ctx.timeline:
            return None
        phase, ts, line = max(ctx.timeline, key=lambda m: m[2])
        if phase not in STALL_MINUTES:
            return None
        ended = {"cuda graphs": "cuda_graph.captured", "weights": "model.arch"}[phase]
        if ctx.get(ended) is not None:
            return None
        name = _PHASE_NAMES[phase]
        minutes = _minutes_between(ts, ctx.last_ts)
        if minutes is not None and minutes >= STALL_MINUTES[phase]:
            why = f"{minutes:.0f} minutes after {name} began without progress"
        elif self.last_line > line and _BUILD_NOTE.search(self.last_text):
            why = f"{name} stopped at a build step ({_first_line(self.last_text)})"
        else:
            return None
        return Sign("hang", line, self.begins.get(line, ""), f"the launch hung in {name}: the log ends {why}")

    def _traceback_facts(self, ctx: Context, tb: Seen) -> None:
        excs = [e.split("\n")[0][:300] for e in tb.exceptions if e]
        if excs:
            ctx.set("crash.exception_first", excs[0], tb.start)
            if len(excs) > 1 and excs[-1] != excs[0]:
                ctx.set("crash.exception_last", excs[-1], tb.end)
        frame = deepest_sglang_frame(tb.frames)
        if frame is not None:
            ctx.set("crash.sglang_frame", frame, tb.start)
        from sglang_doctor.registry.subsystems import classify

        found = classify(tb.frames, tb.exceptions)
        if found:
            first = found[0]
            ctx.set("crash.subsystem_id", first.subsystem.id, tb.start)
            ctx.set("crash.subsystem", first.subsystem.name, tb.start)
            ctx.set("crash.subsystem_why", first.subsystem.why, tb.start)
            ctx.set("crash.subsystem_where", f"frame {describe_frame(first.frame)}" if first.frame
                    else "named by its exception", tb.start)
            if len(found) > 1:
                ctx.set("crash.subsystems", ",".join(f.subsystem.id for f in found), tb.start)
            isolatable = [f.subsystem.name for f in found if f.subsystem.isolate]
            if isolatable:
                ctx.set("crash.isolated", " and ".join(isolatable), tb.start)

    def _stops(self, ctx: Context, tb: Seen | None, stall: Sign | None, ready: bool) -> str | None:
        if tb is not None and tb.cut:
            return f"The traceback is cut after {tb.cut}: paste the rest of it"
        if self.pasted:
            return None  # (an excerpt given to explain: where it ends says nothing)
        if stall is not None:
            return f"The log ends at line {self.last_line} with no progress line after line {stall.line}"
        if not ready:
            return f"The log ends at line {self.last_line} without the server reporting ready"
        return f"The failure came after the server was ready (line {ctx.facts['server.ready'].line})"


def _not_the_servers(rec: Record) -> bool:
    if _REQUEST_SIDE.search(rec.text):
        return True
    return bool(rec.exceptions) and bool(_CLIENT_EXC.match(rec.exceptions[-1])) and not any(
        p in f for f in rec.frames for p in _SERVER_FRAME)


def _quote(rec: Record, cut: str) -> tuple[int, str]:
    """The line a traceback is quoted by: its last exception line, else (cut short) its last line."""
    found = None if cut else _exception_line(rec)
    if found is not None:
        return found
    last = next((ln for ln in reversed(rec.lines) if ln.text.strip()), rec.lines[-1])
    return last.number, last.text


def _exception_line(rec: Record) -> tuple[int, str] | None:
    """The line of the traceback's last exception (in a chain cut short: the last part that has one)."""
    if not rec.exceptions:
        return None
    want = rec.exceptions[-1].split("\n")[0].strip()
    for ln in reversed(rec.lines):
        if ln.text.strip().endswith(want[-80:]) and want[:20] in ln.text:
            return ln.number, ln.text
    return None


def _lead(signs: list[Sign]) -> Sign:
    """The sign the finding quotes: an exception or traceback first, then the launcher's reports."""
    order = ("traceback", "native", "pasted", "exception", "component", "warmup", "watchdog", "hang", "exit", "sigquit",
             "kill-tree")
    return min(signs, key=lambda s: (order.index(s.kind), s.line))


def _evidence_phrase(signs: list[Sign]) -> str:
    seen: dict[str, Sign] = {}
    for s in signs:
        seen.setdefault(s.kind, s)
    parts = [f"{s.what} (line {s.line})" for s in sorted(seen.values(), key=lambda s: s.line)]
    return "; ".join(parts[:4]) + ("; …" if len(parts) > 4 else "")


def _first_line(text: str) -> str:
    first = text.strip().split("\n")[0]
    return first if len(first) <= 160 else first[:157] + "..."


def _cut_after(rec: Record) -> str:
    """What a traceback record stops after when it lacks its final exception line ("" when whole)."""
    read = rec.read if rec.read is not None and len(rec.read) == len(rec.lines) else [ln.text for ln in rec.lines]
    last = next((t.strip() for t in reversed(read) if t.strip()), "")
    frame = frame_of(last) or (frame_of(read[-2].strip()) if len(read) > 1 and not rec.exceptions else None)
    if frame is not None:
        return f"frame {describe_frame(frame)}"
    if last.startswith(_CHAIN):
        return f"'{last.rstrip(':')}'"
    if last.endswith(_TRACEBACK):
        return "its 'Traceback (most recent call last):' line"
    if rec.truncated and rec.frames:
        return f"frame {describe_frame(rec.frames[-1])}"
    return ""


def describe_frame(frame: str) -> str:
    """`File "/…/sglang/srt/x.py", line 12, in f` → `f in sglang/srt/x.py:12`."""
    m = _FRAME_PARTS.search(frame)
    if m is None:
        return frame
    path = m["path"]
    i = path.rfind("sglang/")
    short = path[i:] if i >= 0 else "/".join(path.split("/")[-3:])
    line = f":{m['line']}" if m["line"] != "0" else ""
    return f"{m['func']} in {short}{line}"


def deepest_sglang_frame(frames: list[str]) -> str | None:
    """The innermost frame in SGLang's own code, described (`capture in sglang/srt/…/x.py:12`)."""
    for f in reversed(frames):
        m = _FRAME_PARTS.search(f)
        if m and "sglang/" in m["path"] and "sglang_router" not in m["path"]:
            return describe_frame(f)
    return None


def _minutes_between(a: str | None, b: str | None) -> float | None:
    if not a or not b:
        return None
    try:
        return (ts_seconds(b) - ts_seconds(a)) / 60
    except ValueError:
        return None


def known_facts(ctx: Context) -> str | None:
    """What the log says about the launch, as one phrase: release, GPU, model, parallelism."""
    names = ctx.names()
    parts = []
    version = ctx.facts.get("sglang.version")
    if version is not None and not version.note:  # (a range inferred from server_args fields says little)
        parts.append(f"SGLang {version.value}")
    gpu = names.get("gpu.name")
    if gpu:
        sm = names.get("gpu.sm")
        parts.append(f"{gpu}" + (f" (sm{sm})" if sm else ""))
    model = names.get("model.arch") or names.get("server_args.model_path")
    if model:
        parts.append(f"model {model}")
    tp = names.get("server_args.tp_size")
    if isinstance(tp, int) and tp > 1:
        parts.append(f"TP {tp}")
    backend = names.get("server_args.attention_backend")
    if backend:
        parts.append(f"attention backend {backend}")
    return ", ".join(parts) or None
