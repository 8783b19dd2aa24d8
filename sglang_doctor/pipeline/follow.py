"""`--follow`: diagnose a growing file or a live pipe, printing findings as they happen.

    docker logs -f sgl 2>&1 | sglang-doctor --follow
    sglang-doctor --follow /var/log/sglang.log

A reader thread moves raw bytes into a queue so the main loop can wake up on an idle
timeout: a traceback is complete when the next record starts or when nothing has arrived
for IDLE_S. What has piled up in the queue (the history `docker logs -f` dumps first, a
fast writer) is taken at once, up to a block, and goes through the same block path as a
batch run (the stage-one scanner, the decode lines of the block counted at once); a
trickle of lines goes line by line. A finding is printed as soon as its rule has matched and its conditions hold;
at the end of the stream (pipe closed) or on Ctrl-C the whole report follows: the same
stages as a batch run (pipeline.run.assemble) on the same analysis, so it is the report
`sglang-doctor` gives for the saved log. Generic and last-resort findings are only in that
report: whether they stand depends on what the whole log explains.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from typing import Any, Callable

from sglang_doctor.engine.analyze import Matcher, _Analysis, build_finding
from sglang_doctor.engine.prefilter import ScannerCache
from sglang_doctor.engine.rules import Rule
from sglang_doctor.facts.context import HANDLED_AFTER
from sglang_doctor.fix.correct import spell_fixes
from sglang_doctor.model import Finding, InputInfo, Report, mark_consequence
from sglang_doctor.pipeline.run import Options, Run, assemble
from sglang_doctor.policy.config import apply_severity
from sglang_doctor.policy.redact import redact_report
from sglang_doctor.read.reader import MAX_LINE_CHARS, InputError, Line, decode_line, display_name, newlines

IDLE_S = 0.2  # no new bytes for this long: close an open traceback
POLL_S = 0.05  # how often a followed file is checked for growth
READ_SIZE = 64 * 1024
BLOCK_BYTES = 1024 * 1024  # at most this much is taken from the queue at once
SCAN_BYTES = 64 * 1024  # from this size on, what was taken goes through the block path
# A matched rule whose conditions do not hold yet is checked again when another rule matches, when the
# stream pauses, or after this long: each check recomputes the context (the decode summary of a long
# history among it), which on a backlog would otherwise run after every block.
RECHECK_S = 1.0


def _pipe_reader(fd: int, out: queue.Queue[bytes | None]) -> None:
    try:
        while True:
            data = os.read(fd, READ_SIZE)
            if not data:
                break
            out.put(data)
    except OSError:
        pass
    out.put(None)


def _file_reader(path: str, out: queue.Queue[bytes | None], stop: threading.Event) -> None:
    """tail -f: read to the end, then poll for growth; reopen when the file is truncated."""
    try:
        fh = open(path, "rb")
    except OSError as e:
        out.put(InputError(f"{path}: {e.strerror or e}"))  # type: ignore[arg-type]
        out.put(None)
        return
    pos = 0
    while not stop.is_set():
        data = fh.read(READ_SIZE)
        if data:
            pos += len(data)
            out.put(data)
            continue
        try:
            if os.path.getsize(path) < pos:  # truncated or rotated in place
                fh.close()
                fh = open(path, "rb")
                pos = 0
        except OSError:
            pass
        time.sleep(POLL_S)
    fh.close()
    out.put(None)


class Follower:
    """Feeds a live byte stream through the engine, streams new findings, and ends with the
    same report a batch run of the whole stream gives (the stages after the engine are
    pipeline.run.assemble)."""

    def __init__(self, rules: list[Rule], emit: Callable[[Finding], None], options: Options | None = None,
                 path: str = "-") -> None:
        self.rules = rules
        self.matcher = Matcher(rules)
        self.analysis = _Analysis(self.matcher)
        self.emit = emit
        self.options = options or Options()
        self.path = path
        self.scanner = ScannerCache(rules, self.options.fast)
        self.carry = b""
        self.number = 0
        self.bytes = 0
        self.emitted: dict[str, Finding] = {}
        self.root: Finding | None = None
        self.waiting: set[str] = set()  # matched, conditions not holding at the last check
        self.checked_at = 0.0

    def feed_bytes(self, data: bytes) -> None:
        self.bytes += len(data)
        buf = self.carry + data
        end = buf.rfind(b"\n") + 1
        block, self.carry = buf[:end], buf[end:]
        if len(self.carry) > MAX_LINE_CHARS:
            self.carry = self.carry[:MAX_LINE_CHARS]
        scanner = self.scanner() if len(block) >= SCAN_BYTES else None
        if scanner is not None:
            self.analysis.scanner = scanner
            self.analysis.feed_block(self.number + 1, block, *scanner.hits(block))
            self.number += newlines(block)
        else:
            for raw in block.split(b"\n")[:-1]:
                self.number += 1
                self.analysis.feed(Line(self.number, decode_line(raw)))
        self._report_new()

    def idle(self) -> None:
        """Nothing arrived for a while: a pending traceback is as complete as it gets."""
        self.analysis.flush()
        self._report_new(settled=True)
        self._crash_net()

    def _crash_net(self) -> None:
        """The stream paused with signs of a failure that no rule has explained yet: the last-resort
        checks (the crash net reads facts, not records) say so now rather than at the end."""
        if self.root is not None:
            return
        from sglang_doctor.engine.analyze import Hit, RuleHits
        from sglang_doctor.engine.checks import CHECKS

        ctx = self.analysis.ctx
        for rule in self.matcher.checks:
            if not rule.last_resort or rule.id in self.emitted:
                continue
            ctx.finish()
            found = CHECKS[rule.match.check](ctx)  # type: ignore[index]
            if not found:
                continue
            f = build_finding(RuleHits(rule, [Hit(h.line, h.text, h.captures, "") for h in found[:1]], 1), ctx, 0)
            if f is not None:
                self.emitted[rule.id] = f
                self.emit(f)

    def _report_new(self, settled: bool = False) -> None:
        """`settled`: the stream paused, no notice can still follow a traceback."""
        fresh = [rh for rid, rh in self.analysis.hits.items() if rid not in self.emitted
                 # a generic or last-resort rule is decided by what else the whole log explains: the
                 # final report has it; a traceback of a rule that skips handled ones waits for the
                 # lines that may say so
                 and not rh.rule.fallback and not rh.rule.last_resort
                 and (settled or not rh.rule.skip_handled or rh.hits[-1].end + HANDLED_AFTER < self.number)]
        if not fresh:
            return
        now = time.monotonic()
        if not settled and {rh.rule.id for rh in fresh} <= self.waiting and now - self.checked_at < RECHECK_S:
            return  # nothing new matched: the rules still waiting are checked again soon
        self.checked_at = now
        ctx = self.analysis.ctx
        if self.options.command and not ctx.command:
            ctx.command = self.options.command
        ctx.finish()
        self.waiting = set()
        version = ctx.get("sglang.version")
        sup, name = self.options.suppressor, display_name(self.path)
        for rh in sorted(fresh, key=lambda r: (r.hits[0].line, -r.rule.priority)):
            rule = rh.rule
            f = build_finding(rh, ctx, 0)
            if f is None:
                self.waiting.add(rule.id)
                continue  # conditions may hold later, when more facts have arrived
            [f] = apply_severity(self.options.severity, spell_fixes([f], version))
            if rule.consequence and self.root is not None:
                mark_consequence(f, self.root)
            elif f.severity == "error" and self.root is None:
                self.root = f
            self.emitted[rule.id] = f
            if sup is None or not sup.hides(f, name, self.path):
                self.emit(redact_report(Report(findings=[f]), hosts=self.options.redact_hosts).findings[0])

    def finish(self, name: str) -> Run:
        if self.carry:
            self.number += 1
            self.analysis.feed(Line(self.number, decode_line(self.carry)))
            self.carry = b""
        self.idle()  # the last traceback, and whatever it completes, is streamed too
        self.analysis.finish(self.options.command)
        result = self.analysis.result(0, self.number, self.bytes)
        info = InputInfo(name=name, lines=self.number, bytes=self.bytes)
        return assemble([info], [result], self.rules, self.options, [self.path])


def follow(source: str, rules: list[Rule], emit: Callable[[Finding], None], options: Options | None = None,
           stop: threading.Event | None = None) -> Run:
    """Follow `source` ('-' for stdin) until the pipe closes or `stop` is set / Ctrl-C."""
    stop = stop or threading.Event()
    q: queue.Queue[Any] = queue.Queue(maxsize=256)  # bounded: a fast writer cannot grow memory
    if source == "-":
        t = threading.Thread(target=_pipe_reader, args=(sys.stdin.fileno(), q), daemon=True)
    else:
        t = threading.Thread(target=_file_reader, args=(source, q, stop), daemon=True)
    t.start()
    fol = Follower(rules, emit, options, source)
    ended: list[Any] = []  # the reader's last word (None, or an InputError), taken while draining
    try:
        while not stop.is_set():
            try:
                item = ended.pop() if ended else q.get(timeout=IDLE_S)
            except queue.Empty:
                fol.idle()
                continue
            if item is None:
                break
            if isinstance(item, InputError):
                raise item
            parts = [item]
            size = len(item)
            while size < BLOCK_BYTES:  # what piled up behind it, as one block
                try:
                    more = q.get_nowait()
                except queue.Empty:
                    break
                if more is None or isinstance(more, InputError):
                    ended.append(more)
                    break
                parts.append(more)
                size += len(more)
            fol.feed_bytes(b"".join(parts))
    except KeyboardInterrupt:
        stop.set()
    return fol.finish(display_name(source))
