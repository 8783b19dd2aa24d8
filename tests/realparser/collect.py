"""Corrected commands from the product, through its CLI only (`--format json`).

Sources: every rule fixture `sglang_doctor/rules/<family>/<rule>/fires-*.log`, every log in
tests/data/real/ and tests/data/healthy/, and the bundled demos. A fixture without a launch
command whose report carries a flag fix is run again with a stand-in command (`STANDIN`, plus the
flags the fixes name with their logged value), so that its fix is checked too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "sglang_doctor" / "rules"
DATA = REPO / "tests" / "data"
DEMOS = ["", "mfs-0.80", "mfs-0.88"]  # `sglang-doctor demo [NAME]`
STANDIN = "python3 -m sglang.launch_server --model-path m"


@dataclass
class Case:
    id: str  # stable test id: fixture:<family>/<rule>/<file>, real:<file>, healthy:<file>, demo:<name>
    argv: list[str]  # the CLI arguments after `sglang-doctor`
    standin: bool = False  # run with the stand-in --cmd
    report: dict = field(default_factory=dict)
    error: str = ""

    @property
    def corrected(self) -> str | None:
        return self.report.get("corrected_command")

    @property
    def detected_release(self) -> str | None:
        ctx = self.report.get("context") or {}
        return ctx.get("sglang_version") or (ctx.get("sglang") or {}).get("version")

    @property
    def target_releases(self) -> str | None:
        """The releases the command must parse on: those it says it is written for (a newer part of
        the log's range, when a fix's flag is newer), else the detected release or range."""
        return (self.report.get("context") or {}).get("corrected_command_releases") or self.detected_release

    @property
    def flag_fixes(self) -> list[dict]:
        return [fx for f in self.report.get("findings", []) for fx in f.get("fixes", [])
                if fx.get("kind") == "flag"]


def _inputs() -> Iterator[Case]:
    for log in sorted(RULES.glob("*/*/fires-*.log")):
        yield Case(f"fixture:{log.relative_to(RULES).as_posix()}", ["check", str(log)])
    for sub in ("real", "healthy"):
        for log in sorted((DATA / sub).iterdir()):
            if log.name.endswith((".log", ".log.gz")):
                yield Case(f"{sub}:{log.name}", ["check", str(log)])
    for name in DEMOS:
        yield Case(f"demo:{name or 'default'}", ["demo"] + ([name] if name else []))


class Doctor:
    """One forkserver worker (see forkserver.py): runs the installed `sglang-doctor` per case."""

    def __init__(self) -> None:
        env = {**os.environ, "NO_COLOR": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("forkserver.py"))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)

    def run(self, case: Case, cwd: Path) -> Case:
        args = case.argv + ["--format", "json", "--no-baseline", "--fail-on", "never"]
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"argv": args, "cwd": str(cwd)}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the doctor's forkserver died running {case.id}")
        r = json.loads(line)
        try:
            case.report = json.loads(r["stdout"])
        except json.JSONDecodeError:
            case.error = f"exit {r['rc']}: {r['stderr'].strip()[-500:]}"
        return case

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def run_all(cases: list[Case], cwd: Path, jobs: int) -> list[Case]:
    """Each of `jobs` workers takes the next case from a shared queue."""
    import queue
    import threading

    todo: queue.Queue[Case] = queue.Queue()
    for c in cases:
        todo.put(c)
    failures: list[BaseException] = []

    def work() -> None:
        doc = Doctor()
        try:
            while True:
                try:
                    c = todo.get_nowait()
                except queue.Empty:
                    return
                doc.run(c, cwd)
        except BaseException as e:  # re-raised below, in the caller's thread
            failures.append(e)
        finally:
            doc.close()

    threads = [threading.Thread(target=work) for _ in range(max(1, min(jobs, len(cases))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return cases


def standin_cmd(case: Case) -> str:
    """STANDIN plus each flag a fix changes at the value the first run read for it (`from`), so the
    fix has something to edit (a 'lower --mem-fraction-static from 0.9' needs the flag there).
    A flag without a known value is left out: a bare value flag would be this harness's own error."""
    parts = shlex.split(STANDIN)
    for fx in case.flag_fixes:
        flag, old = fx.get("flag"), fx.get("from")
        if not flag or not flag.startswith("--") or flag in parts or old in (None, False, "", "False"):
            continue
        parts += [flag] if old in (True, "True") else [flag, str(old)]
    return shlex.join(parts)


def collect(cwd: Path, jobs: int | None = None, only: set[str] | None = None) -> list[Case]:
    """Run the doctor on every input (or those whose id is in `only`), and again with a stand-in
    command where the first run left a flag fix without a command; one worker per core."""
    jobs = jobs or max(2, os.cpu_count() or 2)
    done = run_all([c for c in _inputs() if only is None or c.id in only], cwd, jobs)
    again = [Case(c.id + "+standin", c.argv + ["--cmd", standin_cmd(c)], standin=True)
             for c in done if c.id.startswith("fixture:") and c.flag_fixes and not c.corrected]
    return done + run_all(again, cwd, jobs)


def launch_args(corrected: str) -> tuple[list[str], str]:
    """The SGLang server arguments inside a corrected command, and how it was launched
    ("launch_server", "serve", "router" — not parsed here — or "" when no launch was found).

    Strips what wraps the launch: `docker run … IMAGE`, env assignments (`A=1 python3 …`),
    `bash -c "…"` / `sh -c`, `&&`/`;`/`|` chains (the launch is the part that runs SGLang), and
    the launcher (`python3 -m sglang.launch_server`, `sglang serve [MODEL]`). `sglang serve`'s own
    options (`--model-type`) and its positional model are turned into what serve passes on."""
    tokens = shlex.split(corrected.replace("\\\n", " "), comments=False)
    return _from_tokens(tokens)


_CHAIN = {"&&", "||", ";", "|", "&"}


def _split_chain(tokens: list[str]) -> Iterable[list[str]]:
    cur: list[str] = []
    for t in tokens:
        if t in _CHAIN:
            if cur:
                yield cur
            cur = []
        else:
            cur.append(t)
    if cur:
        yield cur


def _from_tokens(tokens: list[str]) -> tuple[list[str], str]:
    for seg in _split_chain(tokens):
        for i, t in enumerate(seg):
            if t in ("-c",) and i > 0 and Path(seg[i - 1]).name in ("bash", "sh", "zsh") and i + 1 < len(seg):
                inner = _from_tokens(shlex.split(seg[i + 1]))
                if inner[1]:
                    return inner
            if t == "-m" and i + 1 < len(seg) and seg[i + 1].startswith("sglang_router."):
                return [], "router"  # sglang_router's own parser (server + router flags): not covered
            if t == "-m" and i + 1 < len(seg) and seg[i + 1] in ("sglang.launch_server", "sglang.srt.server"):
                return _no_redirects(seg[i + 2:]), "launch_server"
            if Path(t).name == "sglang" and i + 1 < len(seg) and seg[i + 1] == "serve":
                return _serve_args(_no_redirects(seg[i + 2:])), "serve"
    return [], ""


_REDIRECT = re.compile(r"^(\d*|&)(>>?|<)(&\d+)?")


def _no_redirects(args: list[str]) -> list[str]:
    """Cut `> server.log 2>&1` and the like: shell redirections, not arguments."""
    for k, t in enumerate(args):
        if _REDIRECT.match(t):
            return args[:k]
    return args


def _serve_args(rest: list[str]) -> list[str]:
    # `sglang serve` takes --model-type itself and a positional model as --model-path.
    out: list[str] = []
    skip = False
    for j, t in enumerate(rest):
        if skip:
            skip = False
            continue
        if t == "--model-type":
            skip = True
            continue
        if t.startswith("--model-type="):
            continue
        out.append(t)
    if out and not out[0].startswith("-"):
        out = ["--model-path", out[0], *out[1:]]
    return out


if __name__ == "__main__":
    # python -m tests.realparser.collect OUT.jsonl — dump the reports (for measuring)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cases = collect(Path(tmp))
    with open(sys.argv[1], "w") as fh:
        for c in cases:
            fh.write(json.dumps({"id": c.id, "argv": c.argv, "error": c.error, "report": c.report}) + "\n")
    print(len(cases), "runs;", sum(1 for c in cases if c.corrected), "corrected commands")
