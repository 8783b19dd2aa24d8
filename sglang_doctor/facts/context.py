"""Facts the log states about the launch.

The context reads line records as they stream by and keeps what the launch said about
itself: server_args, SGLang version, GPU, model, memory pools, CUDA graphs, readiness.
Rules test these facts in their conditions and compute fix values from them. Each fact
keeps the input line it came from. Parsing lives here; judging lives in the rules.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import re

from sglang_doctor.facts.crash import CrashWatch, scan_patterns as _crash_patterns
from sglang_doctor.facts.decode import DecodeStats
from sglang_doctor.facts.packages import HINT as _PACKAGE_HINT, PackageWatch
from sglang_doctor.read.records import Record, ts_seconds as _ts

if TYPE_CHECKING:
    from sglang_doctor.launch.launch_env import LaunchEnv

GIB = 1024**3 / 1e9  # GiB -> GB factor
MAX_FRAMES = 200  # SGLang frames kept to bound the release (a log of many tracebacks repeats them)
_WORD = re.compile(r"\w")
_BARE_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception)|Exception)(?::|\()")


class Fact(NamedTuple):
    """A value read off the log, with the line it came from."""

    value: Any
    line: int | None = None
    note: str | None = None  # how the fact was obtained when not read directly


# Compute capability of GPUs commonly seen in SGLang issues, by a name fragment.
# Order matters: the first fragment found in the name wins.
GPU_COMPUTE_CAPABILITY: list[tuple[str, str]] = [
    ("GB200", "10.0"), ("B200", "10.0"), ("B100", "10.0"), ("GB300", "10.3"), ("B300", "10.3"),
    ("RTX PRO 6000", "12.0"), ("RTX 50", "12.0"), ("5090", "12.0"), ("5080", "12.0"), ("5070", "12.0"),
    ("H100", "9.0"), ("H200", "9.0"), ("H800", "9.0"), ("H20", "9.0"), ("GH200", "9.0"),
    ("L40", "8.9"), ("L4", "8.9"), ("RTX 6000 Ada", "8.9"), ("4090", "8.9"), ("4080", "8.9"),
    ("4070", "8.9"), ("4060", "8.9"), ("RTX 5000 Ada", "8.9"), ("RTX 4000 Ada", "8.9"),
    ("A100", "8.0"), ("A800", "8.0"), ("A30", "8.0"),
    ("A10", "8.6"), ("A40", "8.6"), ("A16", "8.6"), ("A2", "8.6"), ("A6000", "8.6"), ("A5000", "8.6"),
    ("A4000", "8.6"), ("3090", "8.6"), ("3080", "8.6"), ("3070", "8.6"), ("3060", "8.6"),
    ("T4", "7.5"), ("2080", "7.5"), ("2070", "7.5"), ("2060", "7.5"), ("TITAN RTX", "7.5"),
    ("Quadro RTX", "7.5"), ("V100", "7.0"), ("TITAN V", "7.0"), ("P100", "6.0"), ("P40", "6.1"),
    ("1080", "6.1"), ("1070", "6.1"),
]

# Model classes that carry a mamba / linear-attention state cache.
HYBRID_MODEL_MARKERS = ("Qwen3Next", "Qwen3_5", "Qwen3_6", "Mamba", "Jamba", "NemotronH", "FalconH1",
                        "Lfm2", "GraniteMoeHybrid", "KimiLinear", "MiniMaxText01", "Plamo2", "Zamba")


def compute_capability_for(name: str) -> str | None:
    for frag, cc in GPU_COMPUTE_CAPABILITY:
        if frag.lower() in name.lower():
            return cc
    return None


def _num(s: str | None) -> float | None:
    if s is None:
        return None
    try:
        return float(s)
    except ValueError:
        return None


class Context:
    """Accumulates facts from a stream of records (one input)."""

    def __init__(self) -> None:
        self.facts: dict[str, Fact] = {}
        self.server_args: dict[str, Any] = {}
        self.server_args_line: int | None = None
        self.command: str | None = None
        self.command_line: int | None = None  # the `# cmd:` line it came from
        self.launch_args: dict[str, Any] = {}  # flags of the launch command, as server_args fields
        self._parsed: tuple[str | None, Any] | None = None
        self.first_ts: str | None = None
        self.last_ts: str | None = None  # the latest header time (a launch's window: pipeline.units)
        # `Decode batch` lines: fed line by line (engine.analyze) or a block at a time (the fast path)
        self.decode = DecodeStats()
        self.decode_summary: dict[str, Any] | None = None  # set by finish()
        self.timeline: list[tuple[str, str, int]] = []  # (phase, ts, line)
        # Lines saying that an exception printed next to them was caught and the process went
        # on (a failed request, a retried call, an exception Python ignored): see handled_near.
        self.handled_lines: list[int] = []
        self._names: dict[str, Any] | None = None  # names(), kept once finish() has run
        self._finished = False
        self.crash = CrashWatch()  # signs of a failed launch, whatever rule knows it (crash.py)
        self.packages = PackageWatch()  # package versions the log shows (packages.py)
        self.sglang_frames: list[tuple[int, str]] = []  # (record's line, frame) of SGLang's files, for the version
        self.text_lines = 0  # lines with any text (0: an empty input)
        self.input_lines = 0  # the input's line count, when the reader knows it (0: count the lines seen)
        self.sglang_mentioned = False  # any line names SGLang (see input_notes.py)
        self.last_ts: str | None = None


    # -- setting facts ------------------------------------------------------------
    def set(self, name: str, value: Any, line: int | None, note: str | None = None,
            overwrite: bool = True) -> None:
        if value is None or (not overwrite and name in self.facts):
            return
        self.facts[name] = Fact(value, line, note)
        self._names = None

    def get(self, name: str, default: Any = None) -> Any:
        f = self.facts.get(name)
        if f is not None:
            return f.value
        if name.startswith("server_args."):
            return self.server_args.get(name[len("server_args."):], default)
        return default

    def names(self) -> dict[str, Any]:
        """Flat mapping used by templates and expressions."""
        # server_args as the server printed them; where the log has none, the launch command's flags.
        if self._names is not None:
            return dict(self._names)
        merged = {**self.launch_args, **self.server_args}
        out: dict[str, Any] = {f"server_args.{k}": v for k, v in merged.items()
                               if isinstance(v, (int, float, str, bool))}
        out.update({k: f.value for k, f in self.facts.items()})
        if self._finished:  # every finding of the input asks for the same names
            self._names = out
            return dict(out)
        return out

    def handled_near(self, start: int, end: int) -> bool:
        """A handled-exception notice right before or after the record on lines start..end."""
        lines = self.handled_lines  # (sorted by finish())
        i = bisect_left(lines, start - HANDLED_BEFORE)
        return i < len(lines) and lines[i] <= end + HANDLED_AFTER

    # -- reading records ----------------------------------------------------------
    def observe(self, rec: Record) -> None:
        if rec.ts:
            self.note_time(rec.ts)
        self._note_text(rec)
        self.crash.observe(rec, "server.ready" in self.facts)
        self.packages.observe(rec)
        if rec.kind != "line":
            self._observe_traceback(rec)
            return
        msg = rec.message
        if "Error" in msg or "Exception" in msg:
            m = _BARE_EXCEPTION.match(msg)
            if m:
                self.set("exception.first", msg[:300], rec.start, overwrite=False)
        for literal, pattern, handler in _EXTRACTORS:
            if literal in msg:
                m = pattern.search(msg)
                if m:
                    handler(self, m, rec)

    def _observe_traceback(self, rec: Record) -> None:
        room = MAX_FRAMES - len(self.sglang_frames)
        if room > 0:
            self.sglang_frames += [(rec.start, f) for f in rec.frames if "sglang/" in f][:room]
        if rec.exceptions:
            self.set("exception.first", rec.exceptions[0].split("\n")[0][:300], rec.start, overwrite=False)
        for literal, pattern, handler in _TRACEBACK_EXTRACTORS:
            text = rec.text
            if literal in text:
                m = pattern.search(text)
                if m:
                    handler(self, m, rec)
        if rec.exceptions:
            # A notice printed right after the exception, without a blank line, was read as a
            # continuation line of its message.
            for ln in rec.lines[1:]:
                if ln.text[:1].isspace() or ln.text.startswith("Traceback"):
                    continue
                if any(lit in ln.text and rx.search(ln.text) for lit, rx in _HANDLED_NOTICES):
                    self.handled_lines.append(ln.number)

    def note_time(self, ts: str) -> None:
        """A record's header time: the launch's first and latest."""
        if self.first_ts is None:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts

    def _note_text(self, rec: Record) -> None:
        text = rec.text
        if not self.text_lines and _WORD.search(text):  # (NULs and undecodable bytes alone are no text)
            self.text_lines = 1
        if not self.sglang_mentioned and ("sglang" in text or "SGLang" in text or "SGLANG" in text):
            self.sglang_mentioned = True

    def mark(self, phase: str, rec: Record) -> None:
        if rec.ts and not any(p == phase for p, _, _ in self.timeline):
            self.timeline.append((phase, rec.ts, rec.start))

    # -- derived facts at the end --------------------------------------------------
    @property
    def parsed_command(self) -> Any:
        """The launch command parsed once (None when there is none or it is not a launch)."""
        from sglang_doctor.launch.command import parse_command

        if self._parsed is None or self._parsed[0] != self.command:
            self._parsed = (self.command, parse_command(self.command) if self.command else None)
        return self._parsed[1]

    def _read_command(self) -> None:
        """Flags of the launch command as typed values; whether it runs in docker."""
        cmd = self.parsed_command
        if cmd is None:
            return
        self.set("launch.docker", cmd.docker is not None, self.command_line)
        for o in cmd.docker.options if cmd.docker is not None else []:  # docker.shm_size: a docker fix's `from`
            if o.value is not None and o.flag.startswith("--"):
                self.set("docker." + o.flag[2:].replace("-", "_"), o.value, self.command_line)
        if cmd.docker is not None:  # the image's tag beats inferring the release from server_args fields
            from sglang_doctor.launch.version_infer import version_from_image

            self.set("sglang.version", version_from_image(cmd.docker.image), self.command_line,
                     "from the docker image's tag", overwrite=False)
        self.set("launch.kind", cmd.kind, self.command_line)  # server, router or router-server
        from sglang_doctor.launch.launch_env import launch_env

        self._set_env_facts(launch_env(cmd), self.command_line)
        for a in cmd.args:
            if not a.flag.startswith("--"):
                continue
            field = a.flag[2:].replace("-", "_")
            self.launch_args[field] = _typed(a.value)

    def _set_env_facts(self, env: LaunchEnv, line: int | None) -> None:
        """`env.NAME` (value, when known) and `env_set.NAME` for each variable; `launch.env_file`.

        Facts the log already gave (it shows what the process really saw) are not overwritten.
        """
        for name, var in env.vars.items():
            note = f"from the launch command ({var.source})"
            known = var.is_set and var.value is not None
            self.set(f"env_set.{name}", var.is_set, line, None if known else note, overwrite=False)
            if known:
                self.set(f"env.{name}", var.value, line, note, overwrite=False)
        if env.env_files:
            self.set("launch.env_file", ", ".join(env.env_files), line, overwrite=False)

    def finish(self) -> None:
        self.handled_lines.sort()  # (a traceback's own notices come in after earlier lines)
        if self.command:
            self._read_command()
        sa = self.server_args
        cc = self.get("gpu.compute_capability")
        if cc is None and self.get("gpu.name"):
            cc = compute_capability_for(str(self.get("gpu.name")))
            if cc:
                self.set("gpu.compute_capability", cc, self.facts["gpu.name"].line, "from the GPU name")
        if cc is not None:
            try:
                major, minor = str(cc).split(".")
                self.set("gpu.sm", int(major) * 10 + int(minor), self.facts["gpu.compute_capability"].line)
            except ValueError:
                pass
        arch = str(self.get("model.arch") or "")
        if "model.hybrid" not in self.facts and arch and any(m.lower() in arch.lower() for m in HYBRID_MODEL_MARKERS):
            self.set("model.hybrid", True, self.facts["model.arch"].line, "from the model class")
        self._decode_facts()
        ready = self.facts.get("server.ready_ts")
        if ready and self.first_ts:
            try:
                delta = _ts(ready.value) - _ts(self.first_ts)
                self.set("server.time_to_ready_s", round(float(delta), 1), ready.line)
            except ValueError:
                pass
        self.crash.finish(self)
        for name, value, line, note in self.packages.facts():
            self.set(name, value, line, note, overwrite=False)
        if "package.sglang" in self.facts:  # (check_env / pip list, when no other line said it)
            f = self.facts["package.sglang"]
            self.set("sglang.version", f.value, f.line, f.note, overwrite=False)
        # A version stated nowhere can be bounded by the fields the server_args line has.
        if "sglang.version" not in self.facts and sa:
            from sglang_doctor.launch.version_infer import infer_version

            guess = infer_version(set(sa))
            if guess:
                self.set("sglang.version", guess[0], self.server_args_line, guess[1])
        if "sglang.version" not in self.facts and self.sglang_frames:  # (else by the tracebacks' frames)
            from sglang_doctor.launch.version_infer import version_from_frames

            guess = version_from_frames([f for _, f in self.sglang_frames])
            if guess:
                self.set("sglang.version", guess[0], self.sglang_frames[0][0], guess[1])
        self._finished = True

    def _decode_facts(self) -> None:
        d = self.decode_summary = self.decode.summary()
        graph = self.decode.graph_line
        if True in graph:
            self.set("decode.cuda_graph_true_seen", True, graph[True])
        if False in graph:
            self.set("decode.cuda_graph_false_seen", True, graph[False])
        if d is None:
            return
        self.set("decode.lines", d["lines"], None)
        self.set("decode.throughput_median", d["median"], None)
        self.set("decode.throughput_p10", d["p10"], None)
        self.set("decode.throughput_p90", d["p90"], None)
        self.set("decode.token_usage_peak", d["usage_peak"], None)
        self.set("decode.queue_peak", d["queue_peak"], None)

    def to_json(self) -> dict[str, Any]:
        """Facts nested by their dotted names ({"gpu": {"name": …}}), with the line of each."""
        out: dict[str, Any] = {}
        for name, f in sorted(self.facts.items()):
            head, _, rest = name.partition(".")
            if rest:
                node = out.setdefault(head, {})
                if isinstance(node, dict):
                    node[rest] = f.value
            else:
                out[name] = f.value
        out["lines"] = {name: f.line for name, f in sorted(self.facts.items()) if f.line is not None}
        notes = {name: f.note for name, f in sorted(self.facts.items()) if f.note}
        if notes:
            out["notes"] = notes
        if self.server_args:
            out["server_args"] = self.server_args
        if self.command:
            out["command"] = self.command
        return out

    def sources(self) -> dict[str, dict[str, Any]]:
        return {k: {"line": f.line, **({"note": f.note} if f.note else {})} for k, f in self.facts.items()}


def _typed(value: str | None) -> Any:
    """A command-line value as server_args would hold it: flag alone → True, numbers as numbers."""
    if value is None:
        return True
    for conv in (int, float):
        try:
            return conv(value)
        except ValueError:
            pass
    return value





# --- extractors: (literal that must be in the message, regex, handler) -------------------
Handler = Callable[[Context, "re.Match[str]", Record], None]
_EXTRACTORS: list[tuple[str, "re.Pattern[str]", Handler]] = []
_TRACEBACK_EXTRACTORS: list[tuple[str, "re.Pattern[str]", Handler]] = []


def extractor(literal: str, pattern: str, traceback: bool = False) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        (_TRACEBACK_EXTRACTORS if traceback else _EXTRACTORS).append((literal, re.compile(pattern), fn))
        return fn

    return deco


@extractor("server_args=", r"server_args=")
def _server_args(ctx: Context, m: re.Match[str], rec: Record) -> None:
    from sglang_doctor.launch.server_args import parse_server_args

    parsed = parse_server_args(rec.message)
    if parsed.fields:
        ctx.server_args = parsed.fields
        ctx.server_args_line = rec.start
        ctx.set("server_args.truncated", parsed.truncated or None, rec.start)
        ctx.mark("launch", rec)


@extractor("# cmd:", r"^\s*#\s*cmd:\s*(?P<cmd>.+)$")
def _cmd(ctx: Context, m: re.Match[str], rec: Record) -> None:
    cmd = m["cmd"].strip()
    # Threads often show `docker run …` and the launch on two `# cmd:` lines: join them.
    if ctx.command is None:
        ctx.command = cmd
        ctx.command_line = rec.start
    elif not _launches(ctx.command):
        ctx.command = ctx.command + " " + cmd


def _launches(cmd: str) -> bool:
    return "launch_server" in cmd or "sglang serve" in cmd or "launch_router" in cmd


@extractor("router", r"(?i)\bsglang[-_]router(?:==|-|:\s*|\s+version[:\s]+|\s+)v?(?P<v>\d+\.\d+\.\d+)\b")
def _router_version(ctx: Context, m: re.Match[str], rec: Record) -> None:
    # pip's `sglang-router==0.1.4` / `Successfully installed sglang-router-0.1.4`, `pip show`'s
    # `sglang_router 0.3.2`: the router release its flags are checked against
    ctx.set("router.version", m["v"], rec.start, overwrite=False)


@extractor("sglang", r"(?i)(?:\bsglang(?:==|:\s*|\s+version[:\s]+|-)v?|lmsysorg/sglang:v)(?P<v>\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)")
def _version(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("sglang.version", m["v"], rec.start, overwrite=False)


@extractor("Load weight begin", r"Load weight begin\. avail mem=(?P<avail>[0-9.]+) GB")
def _load_begin(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("gpu.free_gb_before_load", _num(m["avail"]), rec.start, overwrite=False)
    ctx.mark("weights", rec)


@extractor("Load weight end", r"Load weight end\.(?: elapsed=(?P<elapsed>[0-9.]+) s,)? type=(?P<type>[\w.]+)(?:, dtype=(?P<dtype>[\w.]+))?(?:, quant=(?P<quant>[\w-]+))?.*?avail mem=(?P<avail>[0-9.]+) GB(?:, mem usage=(?P<usage>[0-9.]+) GB)?")
def _load_end(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("model.arch", m["type"], rec.start, overwrite=False)
    if m["dtype"]:
        ctx.set("model.dtype", m["dtype"].replace("torch.", ""), rec.start, overwrite=False)
    ctx.set("model.quantization", m["quant"], rec.start, overwrite=False)
    ctx.set("gpu.free_gb_after_load", _num(m["avail"]), rec.start, overwrite=False)
    ctx.set("model.weights_gb", _num(m["usage"]), rec.start, overwrite=False)
    ctx.set("model.load_seconds", _num(m["elapsed"]), rec.start, overwrite=False)
    ctx.mark("pools", rec)


@extractor("Mamba Cache is allocated", r"Mamba Cache is allocated\. max_mamba_cache_size: (?P<n>\d+)(?:, conv_state size: (?P<conv>[0-9.]+) ?GB, ssm_state size: (?P<ssm>[0-9.]+) ?GB)?")
def _mamba(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("mamba.max_cache_size", int(m["n"]), rec.start, overwrite=False)
    ctx.set("model.hybrid", True, rec.start, "a mamba state cache was allocated", overwrite=False)
    if m["conv"] and m["ssm"]:
        ctx.set("mamba.cache_gb", round(float(m["conv"]) + float(m["ssm"]), 2), rec.start, overwrite=False)


@extractor("KV Cache is allocated", r"KV Cache is allocated\.(?: dtype: (?P<dtype>[\w.]+),)? #tokens: (?P<n>\d+), (?:K size: (?P<k>[0-9.]+) GB, V size: (?P<v>[0-9.]+) GB|KV size: (?P<kv>[0-9.]+) GB)")
def _kv(ctx: Context, m: re.Match[str], rec: Record) -> None:
    if m["dtype"]:
        ctx.set("kv.dtype", m["dtype"].replace("torch.", ""), rec.start, overwrite=False)
    ctx.set("kv.tokens", int(m["n"]), rec.start, overwrite=False)
    size = (float(m["k"]) + float(m["v"])) if m["k"] else _num(m["kv"])
    ctx.set("kv.size_gb", round(size, 2) if size is not None else None, rec.start, overwrite=False)


# The pool SGLang sized before --max-total-tokens caps it, printed when the cap is larger (0.4.x
# model_runner.py, 0.5.14 model_runner_kv_cache_mixin.py:963): the pool's size in a log that fails
# before the KV line, e.g. on a negative profile or in the hybrid request-slot check.
@extractor("profiled value", r"max_total_tokens=\d+ is larger than the profiled value (?P<n>-?\d+)\.")
def _kv_profiled(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("kv.profiled_tokens", int(m["n"]), rec.start, overwrite=False)


# Speculative decoding at work, for logs without server_args: the draft model's CUDA graph capture
# (eagle_worker.py 0.4.x-0.5.5 "Capture draft cuda graph begin", 0.5.14 "Capture draft decode CUDA graph begin").
@extractor("Capture draft", r"Capture draft (?:\w+ )?(?:cuda|CUDA) graph begin")
def _spec_graph(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("speculative.seen", True, rec.start, "the draft model captured its CUDA graphs", overwrite=False)


# The continuation lines of "Prefill/Decode out of memory" (schedule_batch.py 0.4.x, mem_cache/common.py
# 0.5.x) when a log shows them as lines of their own rather than inside the traceback's exception.
@extractor("Try to allocate", r"^Try to allocate (?P<n>\d+) tokens\.\s*$")
def _alloc_tokens(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("kv_alloc.tokens", int(m["n"]), rec.start, overwrite=False)


@extractor("tokens: ", r"^Ava(?:il|li)able (?:full )?tokens: (?P<n>\d+)\b")
def _alloc_available(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("kv_alloc.available", int(m["n"]), rec.start, overwrite=False)


@extractor("Memory pool end", r"Memory pool end\. avail mem=(?P<avail>[0-9.]+) GB")
def _pool_end(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("gpu.free_gb_after_pools", _num(m["avail"]), rec.start, overwrite=False)


@extractor("raph begin", r"Capture (?:[\w ]*?)(?:cuda|CUDA|cpu|CPU|NPU|npu) graph begin")
def _graph_begin(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("cuda_graph.capture_started", True, rec.start, overwrite=False)
    ctx.mark("cuda graphs", rec)


@extractor("raph end", r"Capture (?:[\w ]*?)(?:cuda|CUDA|cpu|CPU|NPU|npu) graph end\.(?:.*?(?:Time elapsed: |elapsed=)(?P<t>[0-9.]+) s)?(?:.*?mem usage=(?P<mem>[0-9.]+) GB)?")
def _graph_end(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("cuda_graph.captured", True, rec.start, overwrite=False)
    ctx.set("cuda_graph.capture_seconds", _num(m["t"]), rec.start, overwrite=False)
    ctx.set("cuda_graph.mem_gb", _num(m["mem"]), rec.start, overwrite=False)


@extractor("bs", r"Capture (?:cuda graph bs |[\w ]*?(?:cuda|CUDA) graph (?:begin|end)\.[^\n]*?\bbs=)\[(?P<bs>[\d, ]+)\]")
def _graph_bs(ctx: Context, m: re.Match[str], rec: Record) -> None:
    sizes = [int(x) for x in m["bs"].replace(" ", "").split(",") if x]
    if sizes:
        ctx.set("cuda_graph.max_bs", max(sizes), rec.start, overwrite=False)


@extractor("max_total_num_tokens=", r"max_total_num_tokens=(?P<tok>\d+).*?(?:max_running_requests=(?P<mrr>\d+))?.*?context_len=(?P<ctx>\d+)(?:.*?available_gpu_mem=(?P<avail>[0-9.]+) GB)?")
def _capacity(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("kv.max_total_num_tokens", int(m["tok"]), rec.start, overwrite=False)
    ctx.set("model.context_len", int(m["ctx"]), rec.start, overwrite=False)
    if m["mrr"]:
        ctx.set("sched.max_running_requests", int(m["mrr"]), rec.start, overwrite=False)
    ctx.set("gpu.free_gb_after_init", _num(m["avail"]), rec.start, overwrite=False)


@extractor("fired up and ready to roll", r"The server is fired up and ready to roll!")
def _ready(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("server.ready", True, rec.start, overwrite=False)
    ctx.set("server.ready_ts", rec.ts, rec.start, overwrite=False)
    ctx.mark("ready", rec)


def scan_patterns() -> list[str]:
    """Regexes of the extractors: stage one lets their lines through (decode lines are read apart,
    facts/decode.py)."""
    return [p.pattern for lit, p, h in _EXTRACTORS] + [_PACKAGE_HINT] + _crash_patterns()


# --- handled exceptions ------------------------------------------------------------------
# A traceback is not always a crash: SGLang logs the traceback of a request it failed (and
# answers that request with an HTTP error) and of a call it retries, and Python prints the
# traceback of an exception it ignored (in __del__, an atexit or a weakref callback). Each
# says so in a line of its own, just before the traceback (the logger's message, Python's
# "Exception ignored in") or just after it (the retry or the caller's warning). Rules with
# `skip_handled` leave such tracebacks alone.
HANDLED_BEFORE = 2  # lines between a notice and the traceback it introduces (blank lines of a paste)
HANDLED_AFTER = 3  # lines between a traceback and the notice that follows it (an exception's last lines)


def _handled(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.handled_lines.append(rec.start)


# (literal, regex) of each notice; the regexes see a line's message, after its header.
_HANDLED_NOTICES: list[tuple[str, "re.Pattern[str]"]] = [
    # sglang entrypoints/openai/serving_base.py: logger.exception(f"Error in request: {e}"), then
    # an HTTP 4xx/5xx answer to that request.
    ("Error in request: ", re.compile(r"^Error in request: ")),
    # sglang srt/multimodal/processors/base_processor.py: one request's image/video/audio failed to load.
    ("data at index", re.compile(r"error loading \w+ data at index")),
    # sglang srt/utils/common.py retry(): traceback.print_exc() of one attempt, then this line.
    ("retry() failed once", re.compile(r"retry\(\) failed once \(\d+\w* try, maximum \d+ retries\)")),
    # ... and a caller that catches the exhausted retries warns and goes on (model_config.py:
    # "Failed to load hf_quant_config.json for model X: retry() exceed maximum number of retries.").
    ("exceed maximum number of retries", re.compile(r"^Failed to [^\n]*: retry\(\) exceed maximum number of retries")),
    # CPython: an exception raised where it cannot propagate (__del__, callbacks, atexit) is
    # printed after this line and then ignored.
    ("Exception ignored ", re.compile(r"^Exception ignored (?:in|while calling)")),
]
for _lit, _rx in _HANDLED_NOTICES:
    extractor(_lit, _rx.pattern)(_handled)


@extractor("Init torch distributed begin", r"Init torch distributed begin")
def _dist(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.mark("distributed init", rec)


@extractor("Init parallel begin", r"Init parallel begin")
def _dist2(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.mark("distributed init", rec)


# GPU identity: check_env / nvidia-smi / sgl-kernel messages.
@extractor("NVIDIA", r"(?P<name>NVIDIA (?:GeForce |RTX |Tesla |Quadro )?[A-Z]*\s?\w*\d+\w*(?: (?:Ti|SUPER|PCIe|SXM\d?|NVL|Ada|Generation))*)")
def _gpu_name(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("gpu.name", m["name"].strip(), rec.start, overwrite=False)


@extractor("Tesla ", r"(?P<name>Tesla [A-Z]\d+\w*(?:-SXM\d?|-PCIE)?)")
def _gpu_name_tesla(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("gpu.name", m["name"].strip(), rec.start, overwrite=False)


@extractor("apability", r"(?i)compute capability:?\s*(?P<major>\d)\.?(?P<minor>\d+)")
def _gpu_cc(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("gpu.compute_capability", f"{m['major']}.{m['minor']}", rec.start, overwrite=False)


# python -m sglang.check_env: "CUDA_HOME: /usr/local/cuda" (or "None" when no toolkit was found)
@extractor("CUDA_HOME:", r"^\s*CUDA_HOME: (?P<home>\S+)\s*$")
def _check_env_cuda_home(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("cuda.home", m["home"], rec.start, overwrite=False)


@extractor("total capacity of", r"GPU (?P<idx>\d+) has a total capacity of (?P<total>[0-9.]+) GiB")
def _oom_capacity(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("gpu.total_memory_gb", round(float(m["total"]) * GIB, 2), rec.start, overwrite=False)


@extractor("MiB", r"(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB")
def _nvsmi_mem(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set("gpu.total_memory_gb", round(int(m["total"]) * 1024**2 / 1e9, 2), rec.start, overwrite=False)


@extractor("total capacity of", r"GPU (?P<idx>\d+) has a total capacity of (?P<total>[0-9.]+) GiB", traceback=True)
def _oom_capacity_tb(ctx: Context, m: re.Match[str], rec: Record) -> None:
    _oom_capacity(ctx, m, rec)


# The environment as the process saw it: a deprecation warning names a variable that is set
# (SGLang's three wordings also forward its value to the new name, which PyTorch's "…; use NEW
# instead" does not), SGLang names a value it rejected; NCCL echoes what it read.
@extractor("Environment variable", r"Environment variable '?(?P<old>[A-Za-z_][A-Za-z0-9_]*)'? is deprecated(?:, please use (?P<new>[A-Za-z_][A-Za-z0-9_]*)|\. Please use (?P<new2>[A-Za-z_][A-Za-z0-9_]*) instead|; use '(?P<new3>[A-Za-z_][A-Za-z0-9_]*)')?")
def _env_deprecated(ctx: Context, m: re.Match[str], rec: Record) -> None:
    for name in (m["old"], m["new"] or m["new2"] or m["new3"]):
        if name:
            ctx.set(f"env_set.{name}", True, rec.start, "a deprecation warning in the log names it", overwrite=False)


@extractor("Invalid value for", r'Invalid value for (?P<name>[A-Za-z_][A-Za-z0-9_]*): "(?P<value>[^"\n]*)" is not a valid (?:boolean|integer|float) value')
def _env_invalid(ctx: Context, m: re.Match[str], rec: Record) -> None:
    ctx.set(f"env_set.{m['name']}", True, rec.start, "SGLang rejected its value", overwrite=False)
    ctx.set(f"env.{m['name']}", m["value"], rec.start, "SGLang rejected it and used the default",
            overwrite=False)


@extractor("set by environment to", r"\b(?P<name>NCCL_[A-Z0-9_]+) set by environment to (?P<value>[^\s]*)")
def _env_nccl(ctx: Context, m: re.Match[str], rec: Record) -> None:
    value = m["value"][:-1] if m["value"].endswith(".") else m["value"]  # some NCCL releases end the line with '.'
    ctx.set(f"env_set.{m['name']}", True, rec.start, "NCCL echoed it", overwrite=False)
    ctx.set(f"env.{m['name']}", value, rec.start, "NCCL echoed it", overwrite=False)
