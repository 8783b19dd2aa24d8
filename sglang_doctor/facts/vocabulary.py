"""Every fact a rule may test, declared once: its name, type, meaning and where it comes from.

The context (facts/context.py) sets only these names (a test checks it), `rules lint` accepts
only these (besides captures and `let`s), and the facts table of docs/writing-rules.md is
generated from this list (`sglang-doctor rules docs`; a test checks the page is current).
A family (`env.<NAME>`) stands for one fact per variable or field.
"""

from __future__ import annotations

from typing import NamedTuple


class FactSpec(NamedTuple):
    name: str  # dotted name; a family ends in `.<FIELD>` / `.<NAME>`
    type: str  # str, int, float, bool, GB (GiB as SGLang prints it), seconds, time
    meaning: str
    source: str  # the log line, command or stage that sets it


FACTS: tuple[FactSpec, ...] = (
    FactSpec("sglang.version", "str", "the SGLang release (or range, `0.5.10-0.5.14`)",
             "stated in the log (image tag, check_env, pip) or inferred from the server_args fields"),
    FactSpec("server_args.<FIELD>", "any", "a ServerArgs field, typed",
             "the `server_args=` line; without one, the flags of the launch command (`# cmd:` line or `--cmd`)"),
    FactSpec("server_args.truncated", "bool", "the `server_args=` line was cut before its end", "the `server_args=` line"),
    FactSpec("launch.docker", "bool", "the launch command is a `docker run`", "the launch command"),
    FactSpec("docker.<OPTION>", "str", "the value of a `docker run` option in the launch command (`docker.shm_size` = "
             "`64g`, `docker.ipc`), its long name with `_`", "the launch command"),
    FactSpec("launch.kind", "str",
             "what the launch command starts: `server` (`sglang.launch_server`, `sglang serve`), `router` "
             "(`sglang_router.launch_router`, `smg launch`, a router image's entrypoint) or `router-server` "
             "(`sglang_router.launch_server`, `smg server`: SGLang's flags and the router's `--router-…` ones)",
             "the launch command"),
    FactSpec("launch.env_file", "str",
             "env files the launch reads, whose contents are not seen, comma-separated",
             "docker `--env-file`, compose `env_file`, Kubernetes `envFrom`, `source FILE` in a script"),
    FactSpec("env.<NAME>", "str",
             "the value of environment variable NAME the server starts with, when the launch or the log shows it",
             "the launch command (prefixes, `export`, `env`, docker `-e`, compose/Kubernetes `environment:`), "
             "NCCL's `NAME set by environment to`, SGLang's `Invalid value for NAME`"),
    FactSpec("env_set.<NAME>", "bool",
             "`true` when the launch sets NAME (also when its value is not shown), `false` when it unsets it; "
             "missing when nothing says", "as `env.<NAME>`; a deprecation warning naming the variable"),
    FactSpec("package.<DIST>", "str",
             "the installed version of distribution DIST (PEP 503 name with `_` for `-`: `package.torch`, "
             "`package.flashinfer_python`)",
             "check_env, `pip freeze` / `pip list` pastes, `…-4.57.1.dist-info` paths, `torch 2.8.0` in a message"),
    FactSpec("package_installed.<DIST>", "bool",
             "DIST is installed (`true`: a site-packages path or a version shows it; `false`: check_env's "
             "`Module Not Found`)", "as `package.<DIST>`; `…/dist-packages/vllm/…` in a traceback"),
    FactSpec("router.version", "str", "the sglang-router release",
             "`sglang-router==0.1.4`, pip's `sglang-router-0.1.4`"),
    FactSpec("gpu.name", "str", "the GPU model", "nvidia-smi, check_env, CUDA messages naming an NVIDIA/Tesla GPU"),
    FactSpec("gpu.compute_capability", "str", "compute capability (`8.6`)", "check_env, or the GPU name"),
    FactSpec("gpu.sm", "int", "compute capability as one number (86)", "gpu.compute_capability"),
    FactSpec("gpu.total_memory_gb", "GB", "the GPU's memory", "a CUDA OOM message (`total capacity of`), nvidia-smi"),
    FactSpec("cuda.home", "str", "check_env's CUDA toolkit (`None` when it found none)", "check_env's `CUDA_HOME:` line"),
    FactSpec("gpu.free_gb_before_load", "GB", "free memory before the weights", "`Load weight begin. avail mem=`"),
    FactSpec("gpu.free_gb_after_load", "GB", "free memory after the weights", "`Load weight end. … avail mem=`"),
    FactSpec("gpu.free_gb_after_pools", "GB", "free memory after the KV / mamba pools", "`Memory pool end. avail mem=`"),
    FactSpec("gpu.free_gb_after_init", "GB", "free memory the scheduler reports once ready",
             "`max_total_num_tokens=… available_gpu_mem=`"),
    FactSpec("model.arch", "str", "the model class", "`Load weight end. … type=`"),
    FactSpec("model.dtype", "str", "the model's dtype", "`Load weight end. … dtype=`"),
    FactSpec("model.quantization", "str", "the quantization method", "`Load weight end. … quant=`"),
    FactSpec("model.weights_gb", "GB", "weight memory per GPU", "`Load weight end. … mem usage=`"),
    FactSpec("model.load_seconds", "seconds", "time to load the weights", "`Load weight end. elapsed=`"),
    FactSpec("model.hybrid", "bool", "the model has a mamba / linear-attention state cache",
             "the mamba cache line, or the model class"),
    FactSpec("model.context_len", "int", "the context length the server accepts", "`max_total_num_tokens=… context_len=`"),
    FactSpec("kv.dtype", "str", "the KV cache dtype", "`KV Cache is allocated. dtype:`"),
    FactSpec("kv.tokens", "int", "tokens the KV pool holds", "`KV Cache is allocated. … #tokens:`"),
    FactSpec("kv.size_gb", "GB", "the KV pool's memory", "`KV Cache is allocated. … K size: … V size:`"),
    FactSpec("kv.max_total_num_tokens", "int", "the scheduler's token capacity", "`max_total_num_tokens=`"),
    FactSpec("kv.profiled_tokens", "int", "the KV capacity SGLang profiled (negative: the weights overflow the fraction)",
             "`max_total_tokens=… is larger than the profiled value …`"),
    FactSpec("sched.max_running_requests", "int", "the scheduler's request slots", "`max_total_num_tokens=… max_running_requests=`"),
    FactSpec("mamba.max_cache_size", "int", "mamba state slots", "`Mamba Cache is allocated. max_mamba_cache_size:`"),
    FactSpec("mamba.cache_gb", "GB", "the mamba cache's memory (conv + ssm)", "`Mamba Cache is allocated`"),
    FactSpec("kv_alloc.tokens", "int", "tokens a failed allocation asked for",
             "`Try to allocate N tokens.` (a line of its own, in a Prefill/Decode out of memory message)"),
    FactSpec("kv_alloc.available", "int", "tokens that were free then", "`Available tokens: N`"),
    FactSpec("cuda_graph.capture_started", "bool", "CUDA graph capture began", "`Capture cuda graph begin`"),
    FactSpec("cuda_graph.captured", "bool", "CUDA graph capture ended", "`Capture cuda graph end`"),
    FactSpec("cuda_graph.capture_seconds", "seconds", "time the capture took", "`Capture cuda graph end. Time elapsed:`"),
    FactSpec("cuda_graph.mem_gb", "GB", "memory the graphs took", "`Capture cuda graph end. … mem usage=`"),
    FactSpec("cuda_graph.max_bs", "int", "the largest captured batch size", "the captured `bs=[…]` list"),
    FactSpec("speculative.seen", "bool", "speculative decoding is on (logs without server_args)",
             "`Capture draft … cuda graph begin`"),
    FactSpec("decode.lines", "int", "how many decode lines the launch logged", "`Decode batch … gen throughput` lines"),
    FactSpec("decode.throughput_median", "float",
             "median decode throughput (token/s), over every decode line (linear between order statistics)",
             "`Decode batch` lines"),
    FactSpec("decode.throughput_p10", "float", "10th percentile of decode throughput (the same definition)",
             "`Decode batch` lines"),
    FactSpec("decode.throughput_p90", "float", "90th percentile of decode throughput (the same definition)",
             "`Decode batch` lines"),
    FactSpec("decode.token_usage_peak", "float", "the highest KV token usage (the first pool's `token usage`)",
             "`Decode batch` lines"),
    FactSpec("decode.queue_peak", "int", "the longest request queue", "`Decode batch` lines"),
    FactSpec("decode.cuda_graph_true_seen", "bool", "a decode batch ran in a CUDA graph", "`Decode batch … cuda graph: True`"),
    FactSpec("decode.cuda_graph_false_seen", "bool", "a decode batch ran without one", "`Decode batch … cuda graph: False`"),
    FactSpec("server.ready", "bool", "the server reported ready", "`The server is fired up and ready to roll!`"),
    FactSpec("server.ready_ts", "time", "when it did", "the ready line's header"),
    FactSpec("server.time_to_ready_s", "seconds", "from the first logged line to ready", "the first header and the ready line"),
    FactSpec("exception.first", "str", "the first exception line in the log", "any exception line or traceback"),
    FactSpec("crash.evidence", "str", "the signs that the launch failed, in words",
             "facts/crash.py: a traceback, `Scheduler hit an exception`, SIGQUIT, a process tree killed with its "
             "parent, a non-zero exit, a watchdog dump, a failed warm-up, an exception line, a native crash, a stall "
             "in CUDA graph capture or weight loading"),
    FactSpec("crash.kind", "str", "the most telling sign's kind (traceback, exit, hang, warmup, …)", "facts/crash.py"),
    FactSpec("crash.stops", "str", "where the log stops (`The traceback is cut after frame f in sglang/srt/x.py:12: "
             "paste the rest of it`)", "facts/crash.py"),
    FactSpec("crash.known", "str", "what the log says about the launch (release, GPU, model, TP, attention backend)",
             "facts/crash.py"),
    FactSpec("crash.exception_first", "str", "the failing traceback's first exception", "the failing traceback"),
    FactSpec("crash.exception_last", "str", "the last exception of its chain, when different", "the failing traceback"),
    FactSpec("crash.sglang_frame", "str", "its deepest SGLang frame", "the failing traceback"),
    FactSpec("crash.subsystem_id", "str", "the subsystem the traceback points at (id in `data/subsystems.yaml`)",
             "registry/subsystems.py on the traceback's frames and exceptions"),
    FactSpec("crash.subsystem", "str", "that subsystem's name", "registry/subsystems.py"),
    FactSpec("crash.subsystem_why", "str", "why its switches isolate it", "data/subsystems.yaml"),
    FactSpec("crash.subsystem_where", "str", "the frame (or exception) that shows it", "the failing traceback"),
    FactSpec("crash.subsystems", "str", "every subsystem the traceback passes through, comma-separated", "registry/subsystems.py"),
    FactSpec("crash.isolated", "str", "the subsystems the isolating switches take out", "data/subsystems.yaml"),
)

# Names that are not facts but mean the same in every rule.
BUILTIN_NAMES: dict[str, str] = {"match_count": "how many records this rule matched in the input"}

FAMILIES: tuple[str, ...] = tuple(f.name.split("<")[0] for f in FACTS if "<" in f.name)
NAMES: frozenset[str] = frozenset(f.name for f in FACTS if "<" not in f.name)


def declared(name: str) -> bool:
    """A fact name the vocabulary declares (itself, or one of a family)."""
    return name in NAMES or any(name.startswith(p) for p in FAMILIES)


def markdown_table() -> str:
    """The facts table of docs/writing-rules.md."""
    rows = ["| fact | type | meaning | from |", "|---|---|---|---|"]
    rows += [f"| `{f.name}` | {f.type} | {f.meaning} | {f.source} |" for f in FACTS]
    rows += [f"| `{name}` | int | {meaning} | the engine |" for name, meaning in BUILTIN_NAMES.items()]
    return "\n".join(rows)
