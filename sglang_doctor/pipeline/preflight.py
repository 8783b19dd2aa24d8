"""`preflight`: predict what SGLang will do with a launch before it runs.

Inputs are what the user has before pressing Enter — the command (or a dict of server
args), the model directory (config.json + safetensors headers), the GPU (nvidia-smi or
options) and the release — and, optionally, SGLang's own free-memory readings from a log
(``pre_gib``/``post_gib``: "Load weight begin/end ... avail mem"), which make the prediction
exact. The memory arithmetic is ``fix.memory_model``; this module gathers the inputs, runs
the static checks (tp divisibility, context length, quantization vs GPU, flags of the
release) and turns predictions into findings and fixes in the report contract's shape.

Public API::

    run_preflight(command=None, model_dir=None, gpu_mem_gib=None, gpu_free_gib=None, gpus=None,
                  sglang_version=None, *, gpu_name=None, pre_gib=None, post_gib=None,
                  env=None, query_gpu=True) -> PreflightResult
    launch_from_flags(flags: Mapping[str, Any]) -> Launch
    PreflightResult.to_json() -> dict    # the report's top-level "preflight" object
    preflight_report(result, input_name, command_text, redact_hosts=False) -> Report
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.fix.memory_launch import MEMORY_ENV, launch_from_flags
from sglang_doctor.fix.memory_plan import outcome
from sglang_doctor.launch.command import LaunchCommand, parse_command, render
from sglang_doctor.fix import memory_model as mm
from sglang_doctor.fix.memory_defaults import at_least
from sglang_doctor.launch.gpu import GpuReading, resolve_gpu
from sglang_doctor.fix.tp_values import tp_ok
from sglang_doctor.launch.model_dir import ModelInfo, read_model_dir, resolve_model_dir
from sglang_doctor.model import Evidence, Finding, FixOut, Report
from sglang_doctor.policy.redact import redact_command

__all__ = ["PreflightResult", "launch_from_flags", "preflight_report", "run_preflight", "version_from_image"]


def _flags_of(cmd: LaunchCommand) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in cmd.args:
        if a.flag.startswith("--"):
            out[a.flag] = " ".join(a.values) if a.values else None
    return out


def version_from_image(cmd: LaunchCommand | None) -> str | None:
    """The release in a ``docker run lmsysorg/sglang:v0.5.14-cu129`` image tag, if any."""
    if cmd is None or cmd.docker is None:
        return None
    m = re.search(r"sglang[^:]*:v?(\d+\.\d+\.\d+(?:\.post\d+)?)", cmd.docker.image)
    return m[1] if m else None


_DIST_INFO = re.compile(r"sglang-(\d[\w.+]*?)(?:-py[\d.]+)?\.(?:dist|egg)-info")


def _installed_sglang(path: Sequence[str] | None = None) -> str | None:
    """The installed sglang's release, from its ``sglang-X.dist-info`` directory on the import path
    (what importlib.metadata reads, without its ~30 ms import)."""
    for entry in sys.path if path is None else path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip, a missing directory
            continue
        for name in names:
            m = _DIST_INFO.fullmatch(name)
            if m:
                return m[1]
    return None


# --------------------------------------------------------------------------- result


@dataclass
class PreflightResult:
    """What the memory model predicts for a launch before it runs."""

    sglang_version: str | None
    family: str
    mem_fraction_static: float | None = None
    weights_gb: float | None = None
    kv_tokens: int | None = None
    mamba_slots: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    outcome: str = "ok"  # "ok" | "fail"
    failure: str | None = None
    findings: list[Finding] = field(default_factory=list)
    fixes: list[FixOut] = field(default_factory=list)
    corrected_command: str | None = None
    pool: mm.PoolPlan | None = None
    fix_plan: mm.FixPlan | None = None
    model: ModelInfo | None = None
    gpu: GpuReading | None = None
    notes: list[str] = field(default_factory=list)
    version_source: str = ""  # where the release came from
    model_dir: str | None = None
    unpredicted: str | None = None  # why the memory plan could not be predicted (the GPU or weights unknown)

    def to_json(self) -> dict[str, Any]:
        """The report's ``preflight`` object (design.md, "The JSON report")."""
        return {
            "sglang_version": self.sglang_version,
            "mem_fraction_static": None if self.mem_fraction_static is None else round(self.mem_fraction_static, 4),
            "weights_gb": None if self.weights_gb is None else round(self.weights_gb, 2),
            "kv_tokens": self.kv_tokens,
            "mamba_slots": self.mamba_slots,
            "max_running_requests": self.max_running_requests,
            "context_len": self.context_len,
            "outcome": self.outcome,
            "failure": self.failure,
        }


# --------------------------------------------------------------------------- static checks


def _finding(rule: str, severity: str, title: str, explanation: str,
             fixes: Sequence[FixOut] = (), captures: Mapping[str, str] | None = None) -> Finding:
    # the code is the rule's (set by run_preflight from the rule set: one vocabulary)
    return Finding(rule=rule, code="SGD000", severity=severity, title=title,  # type: ignore[arg-type]
                   explanation=explanation, evidence=[Evidence(input=0, line=0, text="preflight")],
                   captures=dict(captures or {}), fixes=list(fixes))


def _check_tp(model: ModelInfo, launch: mm.Launch, gpus: int | None) -> list[Finding]:
    tp = launch.attn_tp
    if tp <= 1 or tp_ok(model, tp):
        return []
    parts = []
    if model.num_heads % tp:
        parts.append(f"num_attention_heads ({model.num_heads})")
    kv = model.num_kv_heads
    if not model.use_mla and ((kv >= tp and kv % tp) or (kv < tp and tp % kv)):
        parts.append(f"num_key_value_heads ({kv}; with fewer KV heads than tp, tp must be a multiple of them)")
    if model.intermediate_size and model.intermediate_size % tp:
        parts.append(f"intermediate_size ({model.intermediate_size})")
    if model.linear is not None and model.linear.num_heads % tp:
        parts.append(f"linear-attention value heads ({model.linear.num_heads})")
    limit = gpus or launch.tp
    options = [t for t in range(launch.tp, 0, -1) if t <= limit and tp_ok(model, t)]
    fixes = [FixOut(kind="flag", flag="--tp-size", action="set", from_=str(launch.tp), value=str(options[0]))] if options else []
    return [_finding("tp-not-divisible", "error",
        "A model dimension (heads, KV heads, intermediate size) is not divisible by --tp-size",
        f"--tp-size {launch.tp} does not split {', '.join(parts)} evenly; SGLang asserts this while building "
        "the layers (models/llama.py:148-158, distributed/utils.py:59-63)"
        + (f". --tp-size {options[0]} does." if options else "."), fixes,
        {"tp_size": str(launch.tp)})]


def _check_fp8_blocks(model: ModelInfo, launch: mm.Launch) -> list[Finding]:
    """Block-quantized weight shards must be whole blocks (0.5.14 layers/quantization/fp8.py:388-406).

    Experts are split over tp / ep ranks (expert parallelism keeps each expert whole).
    """
    if not model.weight_block_size or launch.tp <= 1:
        return []
    block_n = model.weight_block_size[0]
    moe_tp = max(1, launch.tp // max(1, launch.ep))
    for size, split, what in ((model.intermediate_size, launch.tp, "intermediate_size"),
                              (model.moe_intermediate_size, moe_tp, "moe_intermediate_size")):
        if not size or split <= 1 or size % split or (size // split) % block_n == 0:
            continue
        part = size // split
        msg = (f"ValueError: Weight output_partition_size = {part} is not divisible by weight "
               f"quantization block_n = {block_n}.")
        if what == "moe_intermediate_size" and model.num_experts:
            fixes = [FixOut(kind="flag", flag="--ep-size", action="set", from_=str(launch.ep), value=str(launch.tp),
                            text="expert parallelism keeps each expert whole on one GPU")]
        else:
            good = [t for t in range(launch.tp - 1, 0, -1) if (size // t) % block_n == 0 and tp_ok(model, t)]
            fixes = [FixOut(kind="flag", flag="--tp-size", action="lower", from_=str(launch.tp), value=str(good[0]))] if good else []
        return [_finding("fp8-block-quant-not-divisible", "error",
                         "A block-quantized (FP8/INT8) weight shard is not a multiple of the quantization block at this --tp-size",
                         f"{what} {size} split over {split} ranks = {part}, not a multiple of the checkpoint's block "
                         f"{block_n}: SGLang raises '{msg}'", fixes, {"failure": msg})]
    return []


def _check_context(family: str, model: ModelInfo, launch: mm.Launch) -> list[Finding]:
    ctx = launch.context_length
    if ctx is None or ctx <= model.context_len:
        return []
    allowed = str(launch.env.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "")).lower() in ("1", "true")
    msg = (f"User-specified context_length ({ctx}) is greater than the derived context_length "
           f"({model.context_len}). This may lead to incorrect model outputs or CUDA errors.")
    fix = FixOut(kind="flag", flag="--context-length", action="lower", from_=str(ctx), value=str(model.context_len))
    if not at_least(family, "0.5.5") or allowed:
        # 0.4.x defaults SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN to true (0.4.6 model_config.py:128-137)
        return [_finding("context-length-override-allowed", "warning",
                         "--context-length is larger than the model's own context length (allowed, with a warning)",
                         f"SGLang warns '{msg}' and serves the longer context anyway.", [fix])]
    failure = (f"ValueError: Warning: {msg} Note that the derived context_length may differ from "
               "max_position_embeddings in the model's config. To allow overriding this maximum, set the env var "
               "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
    return [_finding("context-length-exceeds-model", "error",
                     "--context-length is larger than the model's own context length; launch refused",
                     f"The model's derived context length is {model.context_len}; 0.5.x refuses more "
                     "(configs/model_config.py _derive_context_length).", [fix], {"failure": failure})]


# Minimum compute capability per method: get_min_capability of each quantization config
# (layers/quantization/*.py; the same in 0.4.6 .. 0.5.23 unless noted).
_MIN_CAP = {"fp8": 80, "awq": 75, "awq_marlin": 80, "gptq": 60, "gptq_marlin": 80, "w8a8_fp8": 89,
            "modelopt": 89, "modelopt_fp8": 89, "modelopt_fp4": 100, "mxfp4": 80, "bitsandbytes": 70,
            "w8a8_int8": 75, "compressed-tensors": 70, "compressed_tensors": 70, "gguf": 60}


def _check_quant(family: str, model: ModelInfo, launch: mm.Launch, gpu: GpuReading | None) -> list[Finding]:
    if gpu is None or gpu.compute_cap is None:
        return []
    cap = gpu.compute_cap[0] * 10 + gpu.compute_cap[1]
    out: list[Finding] = []
    if cap < 75:  # 0.4.6 model_runner.py:509-515
        out.append(_finding("quantization-unsupported-gpu", "error", "SGLang does not support this GPU",
                            f"compute capability {cap / 10:.1f}: SGLang raises 'RuntimeError: SGLang only supports sm75 and above.'",
                            [FixOut(kind="system", name="gpu", value="sm75+")],
                            {"failure": "RuntimeError: SGLang only supports sm75 and above."}))
        return out
    method = (launch.quantization or model.quant_method or "").lower()
    need = _MIN_CAP.get(method)
    if method in ("compressed-tensors", "compressed_tensors") and model.quant_bits and model.quant_bits < 8:
        need = 80  # wNa16 scheme (0.5.14 compressed_tensors_wNa16.py:96)
    if need is not None and cap < need:
        failure = (f"ValueError: The quantization method {method} is not supported for the current GPU. "
                   f"Minimum capability: {need}. Current capability: {cap}.")
        out.append(_finding("quantization-unsupported-gpu", "error",
                            "The checkpoint's quantization method needs a newer GPU than this one",
                            f"{method} needs sm{need}+ (its get_min_capability; FP8 runs on sm80-88 through the "
                            f"Marlin fallback), this GPU is sm{cap} (model_loader/loader.py:269-281).",
                            [FixOut(kind="system", name="gpu", value=f"sm{need}+")], {"failure": failure}))
    if cap < 80 and launch.dtype in ("bfloat16", "bf16"):
        out.append(_finding("quantization-dtype-unsupported", "info",
                            "bfloat16 needs sm80+: SGLang runs this GPU in float16",
                            "Below sm80 ModelRunner switches --dtype to float16 ('Compute capability below sm80. "
                            "Use float16 due to lack of bfloat16 support.', model_runner.py).",
                            [FixOut(kind="flag", flag="--dtype", action="set", from_=launch.dtype, value="float16")]))
    return out


def _check_flags(cmd: LaunchCommand | None, version: str | None) -> list[Finding]:
    """Flags the release does not accept, and values outside a flag's choices (data/flags.json)."""
    if cmd is None or version is None or not cmd.takes_server_flags or cmd.router_launcher is not None:
        return []
    try:
        from sglang_doctor.registry import flags
        if not flags.known_release(version):
            return []
    except Exception:  # registry unavailable: skip, the memory prediction does not need it
        return []
    out = []
    for a in cmd.args:
        if not a.flag.startswith("--"):
            continue
        spec = flags.resolve(a.flag, version)
        if spec is None:
            near = flags.nearest(a.flag, version)
            fixes = [FixOut(kind="flag", flag=a.flag, action="remove")]
            out.append(_finding("launch-flag-unknown", "warning",
                                "The launch command has a flag this SGLang release does not accept",
                                f"{a.spelled} is not a launch flag of SGLang {version}"
                                + (f" (did you mean {near}?)" if near else "") + ": argparse exits with "
                                "'unrecognized arguments'.", fixes, {"flag": a.flag}))
        elif spec.choices and a.value is not None and a.value not in spec.choices:
            out.append(_finding("argparse-invalid-choice", "error",
                                "A flag was given a value this release does not accept",
                                f"{spec.name} {a.value}: SGLang {version} accepts {', '.join(map(str, spec.choices))}.",
                                [], {"flag": spec.name, "value": a.value,
                                     # argparse's own words (Python 3.10-3.12), what the launch would print
                                     "failure": f"error: argument {spec.name}: invalid choice: {a.value!r} (choose "
                                                f"from {', '.join(repr(str(c)) for c in spec.choices)})"}))
    return out


# --------------------------------------------------------------------------- memory findings

_KIND_RULE = {
    "mamba-negative": ("hybrid-mamba-not-enough-gpu-memory",
                       "GPU memory left for the hybrid (mamba) state cache is negative or too small"),
    "mamba-too-small": ("hybrid-mamba-cache-too-small",
                        "Hybrid (mamba) state cache holds fewer slots than one request needs"),
    "weights-exceed": ("kv-pool-not-enough-memory", "No GPU memory left for the KV cache under --mem-fraction-static"),
    "kv-negative": ("kv-pool-not-enough-memory", "No GPU memory left for the KV cache under --mem-fraction-static"),
    "no-requests": ("max-running-request-zero", "Maximum number of running requests resolved to zero"),
    "weights-oom": ("cuda-oom-weight-loading",
                    "CUDA out of memory while loading the weights; the model does not fit these GPUs"),
}


def _describe(p: mm.PoolPlan) -> str:
    bits = [f"--mem-fraction-static {p.mem_fraction_static:.3g}",
            f"{p.pre_gib:.2f} GB free before the weights, {p.weights_gib:.2f} GB of weights per GPU",
            f"{p.rest_gib:.2f} GB for the pools"]
    if p.mamba_slots is not None:
        bits.append(f"{p.mamba_slots} mamba slots of {p.mamba_per_req / mm.MIB:.2f} MB (ratio {p.mamba_ratio})")
    if p.kv_tokens is not None:
        bits.append(f"KV pool {p.kv_tokens:,} tokens")
    if p.max_running_requests is not None:
        bits.append(f"{p.max_running_requests} running requests")
    return ", ".join(bits)


def _fix_flags(fp: mm.FixPlan, launch: mm.Launch) -> list[FixOut]:
    out = []
    cur = launch.mem_fraction_static
    if fp.mem_fraction_static is not None and (cur is None or abs(fp.mem_fraction_static - cur) > 1e-9):
        action = "raise" if cur is None or fp.mem_fraction_static > cur else "lower"
        out.append(FixOut(kind="flag", flag="--mem-fraction-static", action=action,
                          from_=None if cur is None else f"{cur:g}", value=f"{fp.mem_fraction_static:g}"))
    if fp.max_mamba_cache_size is not None:
        out.append(FixOut(kind="flag", flag="--max-mamba-cache-size", action="set", value=str(fp.max_mamba_cache_size)))
    if fp.context_length is not None:
        cur = launch.context_length
        out.append(FixOut(kind="flag", flag="--context-length", action="lower" if cur else "set",
                          from_=None if cur is None else str(cur), value=str(fp.context_length)))
    return out


def _tp_alternative(family: str, model: ModelInfo, launch: mm.Launch, gpu: mm.Gpu, gpus: int | None,
                    simulate: Any) -> tuple[FixOut, mm.PoolPlan] | None:
    """A larger --tp-size (within the visible GPUs) at which the launch starts and serves, and its pools."""
    limit = gpus or 1
    t = launch.tp * 2
    while t <= limit:
        if tp_ok(model, t):
            p = simulate(replace(launch, tp=t))
            if p is not None and p.serves_full_context:
                return FixOut(kind="flag", flag="--tp-size", action="raise", from_=str(launch.tp), value=str(t)), p
        t *= 2
    return None


def _memory_findings(family: str, model: ModelInfo, launch: mm.Launch, gpu: mm.Gpu, pool: mm.PoolPlan,
                     gpus: int | None, measured: bool) -> tuple[list[Finding], mm.FixPlan | None]:
    if pool.serves_full_context:
        return [], None
    fp = mm.smallest_mem_fraction(family, model, launch, gpu, pool.pre_gib, pool.post_gib)
    fixes = _fix_flags(fp, launch) if fp.feasible else []
    alt = None
    if not fp.feasible:
        def sim(lz: mm.Launch) -> mm.PoolPlan | None:
            try:
                return mm.simulate(family, model, replace(lz, mem_fraction_static=None), gpu)
            except ValueError:
                return None
        alt = None if measured else _tp_alternative(family, model, launch, gpu, gpus, sim)
        fixes = [alt[0]] if alt else [FixOut(kind="system", name="gpu", value="more memory per GPU, or more GPUs with --tp-size")]
    said = outcome(fp, pool.mem_fraction_static, launch.context_length or model.context_len)
    if fp.feasible:
        after = (f" The smallest change that starts and serves a full-length request (up to {fp.max_fraction:.2f}, "
                 f"which leaves SGLang's headroom for activations and CUDA graphs): {said}.")
    else:
        after = f" {said[:1].upper()}{said[1:]}."
        if alt:
            t = alt[1]
            after += (f" At --tp-size {alt[0].value}: {t.weights_gib:.2f} GB of weights per GPU, the pools get "
                      f"{t.rest_gib:.2f} GB at {t.mem_fraction_static:.3g}, KV pool {t.kv_tokens:,} tokens ≥ context "
                      f"{t.context_len:,}" + (f", {t.mamba_slots} mamba slots" if t.mamba_slots is not None else "") + ".")
    if pool.failure is not None:
        rule, title = _KIND_RULE.get(pool.failure_kind or "", _KIND_RULE["kv-negative"])
        where = "while loading the weights" if pool.failure_kind == "weights-oom" else "in init_memory_pool"
        expl = f"With {_describe(pool)}, SGLang {family} stops {where} with '{pool.failure}'.{after}"
        return [_finding(rule, "error", title, expl, fixes, {"failure": pool.failure})], fp
    expl = (f"The launch starts ({_describe(pool)}) but the KV pool is smaller than the {pool.context_len:,}-token "
            f"context: a request longer than the pool is rejected, and long requests evict each other.{after}")
    return [_finding("kv-pool-smaller-than-context", "warning",
                     "The KV cache holds fewer tokens than the context length", expl, fixes,
                     {"kv_tokens": str(pool.kv_tokens), "context_len": str(pool.context_len)})], fp


@lru_cache(maxsize=1)
def _rule_names() -> dict[str, tuple[str, str]]:
    """rule id -> (code, docs page) of the built-in rules."""
    from sglang_doctor.engine.rules import load_rules

    return {r.id: (r.code, r.docs_path) for r in load_rules()}


def _name_by_rule(findings: list[Finding]) -> None:
    """Each finding gets its rule's code and docs page: one vocabulary with the diagnosis rules."""
    for f in findings:
        f.code, f.docs = _rule_names().get(f.rule, (f.code, f.docs))


# --------------------------------------------------------------------------- entry point


def _parse(command: str | Sequence[str] | Mapping[str, Any] | None) -> tuple[LaunchCommand | None, dict[str, Any]]:
    if command is None:
        return None, {}
    if isinstance(command, Mapping):
        return None, dict(command)
    text = command if isinstance(command, str) else shlex.join(command)
    if text.lstrip().startswith("--"):  # bare flags: give them the launcher they belong to
        text = "python3 -m sglang.launch_server " + text
    cmd = parse_command(text)
    return cmd, (_flags_of(cmd) if cmd else {})


def _command_text(command: Any, cmd: LaunchCommand | None) -> str:
    if cmd is not None:
        return render(redact_command(cmd))
    if isinstance(command, Mapping):
        return " ".join(f"--{str(k).lstrip('-').replace('_', '-')} {v}" for k, v in command.items())
    return "(no launch command: SGLang's defaults)"


def run_preflight(command: str | Sequence[str] | Mapping[str, Any] | None = None,
                  model_dir: str | os.PathLike[str] | None = None,
                  gpu_mem_gib: float | None = None, gpu_free_gib: float | None = None,
                  gpus: int | None = None, sglang_version: str | None = None, *,
                  gpu_name: str | None = None, pre_gib: float | None = None, post_gib: float | None = None,
                  env: Mapping[str, str] | None = None, query_gpu: bool = True,
                  model: ModelInfo | None = None) -> PreflightResult:
    """Predict SGLang's memory plan and launch outcome; see the module docstring.

    ``command``: a command line (``docker run …``/``python -m sglang.launch_server …``/``sglang
    serve …``), an argv list, or a dict of server args. ``pre_gib``/``post_gib``: SGLang's
    measured free GiB before/after loading the weights (from a log), which replace the
    estimates from the GPU and the checkpoint.
    """
    cmd, flag_map = _parse(command)
    env_all = dict(env if env is not None else os.environ)
    launch_env = {k: v for k, v in env_all.items() if k in MEMORY_ENV}
    if cmd is not None:
        for name in MEMORY_ENV:
            v = cmd.env(name)
            if v is not None:
                launch_env[name] = v
    launch = launch_from_flags(flag_map, launch_env)
    notes: list[str] = []
    sources = ((lambda: sglang_version, "given"), (lambda: version_from_image(cmd), "the image tag"),
               (_installed_sglang, "installed sglang"))
    version, version_source = next(((v, src) for get, src in sources if (v := get())), (
        None, f"pass --sglang VERSION; planned with the rules of {mm.FAMILIES[-1]}, the newest release read"))
    family = mm.family_of(version)
    path = None
    if model is None:
        path = resolve_model_dir(str(model_dir), env_all) if model_dir else resolve_model_dir(launch.model_path, env_all)
        if path is None and model_dir:
            raise FileNotFoundError(f"{model_dir}: no config.json (not a Hugging Face model directory)")
        if path is None:
            where = f" ({launch.model_path!r} is neither a local directory nor in the Hugging Face cache)" \
                if launch.model_path else ""
            raise ValueError(f"no model directory{where}: pass --model-dir DIR")
        model = read_model_dir(path)
    reading = resolve_gpu(gpu_mem_gib, gpu_free_gib, gpu_name, gpus, query=query_gpu)
    gpu = mm.Gpu(total_mib=reading.total_mib if reading else None, free_mib=reading.free_mib if reading else None,
                 compute_cap=reading.compute_cap if reading else None, name=reading.name if reading else "")
    gpus = gpus or (reading.count if reading else None)
    # in the order SGLang meets them: argparse, ModelConfig, the loader's capability check, layer shapes
    findings = (_check_flags(cmd, version) + _check_context(family, model, launch)
                + _check_quant(family, model, launch, reading) + _check_tp(model, launch, gpus)
                + _check_fp8_blocks(model, launch))
    result = PreflightResult(sglang_version=version, family=family, model=model, gpu=reading, notes=notes,
                             context_len=launch.context_length or model.context_len, version_source=version_source,
                             model_dir=str(path) if path is not None else None)
    blocking = [f for f in findings if f.severity == "error"]
    pool = None
    if not any(f.rule == "tp-not-divisible" for f in blocking):
        try:
            pool = mm.simulate(family, model, launch, gpu, pre_gib, post_gib)
        except ValueError as e:
            result.unpredicted = str(e)
    if pool is not None:
        result.pool = pool
        result.mem_fraction_static = pool.mem_fraction_static
        result.weights_gb = pool.weights_gib
        result.kv_tokens = pool.kv_tokens
        result.mamba_slots = pool.mamba_slots
        result.max_running_requests = pool.max_running_requests
        result.context_len = pool.context_len
        notes.extend(pool.notes)
        mem, fp = _memory_findings(family, model, launch, gpu, pool, gpus, pre_gib is not None)
        findings.extend(mem)
        result.fix_plan = fp
    _name_by_rule(findings)
    shown = _command_text(command, cmd)
    for f in findings:  # what every finding rests on: the launch command (line 1 of the input)
        f.evidence = [Evidence(input=0, line=1, text=shown)]
    result.findings = findings
    # the first error SGLang would meet (findings are in launch order)
    result.failure = next((f.captures.get("failure") or f.title for f in findings if f.severity == "error"), None)
    result.outcome = "fail" if any(f.severity == "error" for f in findings) else "ok"
    result.fixes = [x for f in findings for x in f.fixes]
    if cmd is not None and result.fixes:
        dicts = [{"kind": x.kind, "flag": x.flag, "name": x.name, "action": x.action, "value": x.value}
                 for x in result.fixes]
        new, applied = apply_fixes(cmd, dicts)
        if any(applied):
            result.corrected_command = render(redact_command(new))  # --api-key $SGLANG_API_KEY: no secret
    return result



# --------------------------------------------------------------------------- the report


def _plan_facts(r: PreflightResult) -> dict[str, Any]:
    """What the prediction used and derived, for the report's context (every format shows it)."""
    out: dict[str, Any] = {"sglang_release": r.sglang_version, "release_source": r.version_source,
                           "rules_family": r.family}
    m = r.model
    if m is not None:
        out["model"] = {"dir": r.model_dir, "architecture": ", ".join(m.architectures) or None,
                        "quantization": m.quant_method, "context_len": m.context_len,
                        "weights_source": (f"{m.weights.source}, {m.weights.files} file(s)"
                                           if m.weights and m.weights.files else m.weights.source if m.weights else None)}
    g = r.gpu
    if g is not None:
        out["gpu"] = {"name": g.name or None, "total_gb": round(g.total_mib / 1024, 2) if g.total_mib else None,
                      "free_gb": round(g.free_mib / 1024, 2) if g.free_mib is not None else None, "count": g.count,
                      "compute_capability": "%d.%d" % g.compute_cap if g.compute_cap else None,
                      "source": "given" if g.source == "options" else g.source}
    p = r.pool
    if p is not None:
        out["memory"] = {
            "mem_fraction_source": p.mfs_source, "free_gb_before_load": round(p.pre_gib, 2),
            "free_gb_after_load": round(p.post_gib, 2), "pools_gb": round(p.rest_gib, 2),
            "kv_bytes_per_token": p.cell_size, "kv_dtype": p.kv_dtype,
            "mamba_mb_per_slot": round(p.mamba_per_req / mm.MIB, 2) if p.mamba_per_req else None,
            "mamba_slots_per_request": p.mamba_ratio}
    if r.fix_plan is not None and r.fix_plan.max_fraction is not None:
        out["max_fraction"] = round(r.fix_plan.max_fraction, 2)
    if r.notes:
        out["notes"] = list(r.notes)
    return out


def preflight_report(r: PreflightResult, input_name: str, command_text: str | None,
                     redact_hosts: bool = False) -> Report:
    """The usual report of a preflight: its findings and corrected command, the prediction in
    ``preflight`` (the contract's object) and what it used in ``context.plan``; redacted."""
    from sglang_doctor.model import InputInfo, from_json
    from sglang_doctor.policy.redact import redact

    text = command_text or ""
    report = Report(inputs=[InputInfo(name=input_name, lines=text.count("\n") + 1 if text else 0,
                                      bytes=len(text.encode()))],
                    context={"sglang_version": r.sglang_version, "plan": _plan_facts(r)},
                    findings=list(r.findings), corrected_command=r.corrected_command, preflight=r.to_json())
    report.count()
    return from_json(Report, redact(report.to_json_dict(), hosts=redact_hosts))
