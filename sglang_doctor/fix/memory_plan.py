"""The memory model fed with a launch log's numbers: what SGLang does with them, and the fix.

Diagnosis has no model directory, but SGLang's log states what the arithmetic needs: the free
memory before and after the weights ("Load weight begin/end ... avail mem"), the server args,
the KV pool it sized (``max_total_num_tokens``, "KV Cache is allocated") and the mamba state
pool ("Mamba Cache is allocated", or the numbers of its error message). A ``ModelInfo`` known
only from its log carries the two sizes the shapes would give — KV bytes per token and state
bytes per slot — calibrated so that ``memory_model`` reproduces the log's own pool sizes at
the log's settings, taking the largest size consistent with them (the fix then errs towards
enough memory). Then the same functions preflight uses predict the launch at other settings.

A size the log does not state (a launch that failed before sizing the pool) stays unknown:
the plan then checks what it can — the weights fit under the fraction, the state slots serve
one request — asks for at least ``MIN_KV_GIB_UNSIZED`` of KV budget, and says the pool's
size in tokens is not in the log.

Public API::

    plan_from_log(names, **given) -> dict | None     # mem_plan() in rule expressions
    outcome(fix_plan, mfs_now, ctx, …) -> str        # the predicted launch at a fix, with its arithmetic
    PLAN_FIELDS                                      # the keys of that record
    GIVEN                                            # what a rule may pass from a message
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sglang_doctor.fix import memory_model as mm
from sglang_doctor.fix.memory_defaults import at_least
from sglang_doctor.fix.memory_launch import launch_from_flags
from sglang_doctor.launch.model_dir import LinearState, ModelInfo

__all__ = ["GIVEN", "MIN_KV_GIB_UNSIZED", "PLAN_FIELDS", "outcome", "plan_from_log"]

# KV budget the plan asks for when the log does not say how many bytes a token takes: about
# 4k tokens of a dense 8B model (128 KiB/token), 30k of a small GQA one.
MIN_KV_GIB_UNSIZED = 0.5

_NOMINAL_CONTEXT = 4096

# What a rule may pass from the message it matched (keyword arguments of mem_plan()).
GIVEN = ("mem_fraction_static", "mamba_per_req_mb", "mamba_slots", "mamba_ratio", "kv_tokens")

# The record's fields (a rule reads them as `<let>.<field>`).
PLAN_FIELDS = (
    # the launch as the log has it
    "family", "mem_fraction_static_now", "rest_gb", "min_fraction", "failure", "failure_kind", "starts", "kv_tokens",
    "mamba_slots", "mamba_per_req_mb", "max_running_requests", "context_len", "kv_sized",
    # the fix: the smallest change the model says starts and serves (None: no change of that flag)
    "feasible", "mem_fraction_static", "context_length", "max_mamba_cache_size", "max_fraction",
    "fix_kv_tokens", "fix_kv_gb", "fix_mamba_slots", "fix_requests", "outcome",
)


# Slots per request -> the launch settings that give it (memory_model.mamba_ratio).
_RATIO_SETTINGS: dict[int, dict[str, Any]] = {
    1: {"disable_radix_cache": True},
    3: {"mamba_strategy": "no_buffer"},
    4: {"mamba_strategy": "extra_buffer_lazy", "disable_overlap_schedule": False},
    5: {"mamba_strategy": "extra_buffer", "disable_overlap_schedule": False},
}


@dataclass(frozen=True)
class _Inputs:
    """Everything one log gives the memory model: family, launch, model, GPU, and the measured memory."""

    family: str
    launch: mm.Launch
    model: ModelInfo
    gpu: mm.Gpu
    pre: float
    post: float
    mfs: float
    kv_sized: bool  # the KV bytes per token come from the log (not a stand-in)
    state_stated: bool  # the bytes per mamba slot are the message's (not the most the slot count allows)
    ran: bool  # the log shows the launch running at its fraction (graphs captured, or ready)


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _sized(model: ModelInfo, **sizes: int | None) -> ModelInfo:
    """`replace(model, **sizes)` for the searches below, which make hundreds of them a plan (~20 ms of
    a cold run through `replace`): ModelInfo has only init fields and no __post_init__, so its
    fields copied with these changed are the instance `replace` builds."""
    new = object.__new__(ModelInfo)
    new.__dict__.update(model.__dict__, **sizes)
    return new


def _largest(fits: Any, lo: int, hi: int, likely: int | None = None) -> int | None:
    """The largest integer in [lo, hi] for which ``fits`` holds (``fits`` true up to a point).

    ``likely``: a bound the answer is expected under (a size no larger than the whole GPU allows):
    searched first, the rest of the range only when the answer reaches it, so the result is the same
    and a plan makes ~15 fewer model evaluations per search (hundreds in a run)."""
    if likely is not None and lo < likely < hi:
        first = _largest(fits, lo, likely)
        return first if first is None or first < likely else _largest(fits, likely, hi)
    if not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _pools(i: _Inputs, model: ModelInfo | None = None, launch: mm.Launch | None = None,
           mfs: float | None = None) -> mm.PoolPlan:
    return mm.size_pools(i.family, model or i.model, launch or i.launch, i.mfs if mfs is None else mfs,
                         i.pre, i.post, i.gpu)


def _state_bytes(i: _Inputs, names: Mapping[str, Any], given: Mapping[str, Any]) -> tuple[int, int] | None:
    """Bytes per mamba slot, as (largest, smallest) consistent with the log: the message's figure, else
    the sizes giving the logged slot count (and the pool's printed size)."""
    mb = _num(given.get("mamba_per_req_mb"))
    if mb is not None and mb > 0:
        exact = int((mb + 0.005) * mm.MIB)  # printed to 0.01 MB: the upper end
        return exact, exact
    slots = _num(given.get("mamba_slots"))
    if slots is None:
        slots = _num(names.get("mamba.max_cache_size"))
    if slots is None or slots < 1 or i.launch.max_mamba_cache_size is not None:
        return None
    n = int(slots)

    def fits(b: int) -> bool:
        p = _pools(i, _sized(i.model, mamba_state_bytes=b))
        return p.mamba_slots is not None and p.mamba_slots >= n

    upper = _largest(fits, 1 << 10, 1 << 40, _per_unit_bound(i, n))
    if upper is None:
        return None
    more = _largest(lambda b: fits(b) and bool(_pools(i, _sized(i.model, mamba_state_bytes=b)).mamba_slots > n),
                    1 << 10, upper)
    lower = upper if more is None else more + 1  # the smallest size that gives no more than n slots
    gb = _num(names.get("mamba.cache_gb"))  # conv + ssm of the n + 1 slots the pool allocates
    if gb is not None:
        by_size = int((gb + 0.01) * mm.GIB / (n + 1))  # printed to 0.01 GB each: the upper end
        if lower <= by_size <= upper:
            upper = by_size  # the pool's size agrees with its slot count: the tighter of the two
            lower = max(lower, min(upper, int((gb - 0.01) * mm.GIB / (n + 1))))
    return upper, lower


def _cell_bytes(i: _Inputs, names: Mapping[str, Any], given: Mapping[str, Any]) -> int | None:
    """KV bytes per token: the largest size giving the logged pool at the log's settings."""
    tokens = _num(given.get("kv_tokens"))
    if tokens is None:
        tokens = _num(names.get("kv.max_total_num_tokens"))
    if tokens is None:
        tokens = _num(names.get("kv.tokens"))
    if tokens is None:  # the profile --max-total-tokens capped, in a log that failed before the KV line
        tokens = _num(names.get("kv.profiled_tokens"))
    if tokens is None or tokens == 0:
        return None
    if tokens < 0:  # a negative profiled pool ("larger than the profiled value -561981"): rest / cell
        rest = i.post - i.pre * (1 - i.mfs)
        return int(rest * mm.GIB / tokens) if rest < 0 else None
    cap = i.launch.max_total_tokens
    if cap is not None and tokens >= cap // max(1, i.launch.page_size or 1) * max(1, i.launch.page_size or 1):
        return None  # the pool was capped, not sized by memory
    t = int(tokens)

    def fits(c: int) -> bool:
        p = _pools(i, _sized(i.model, kv_cell_bytes=c))
        return (p.kv_tokens or 0) >= t

    return _largest(fits, 1, 1 << 34, _per_unit_bound(i, t))


def _per_unit_bound(i: _Inputs, units: int) -> int:
    """Twice the bytes of one of ``units`` tokens (or slots) if they shared all the memory free before
    the weights loaded: no pool of that many can have larger ones."""
    return max(2, int(2 * i.pre * mm.GIB / max(1, units)))


def _inputs(names: Mapping[str, Any], given: Mapping[str, Any]) -> tuple[_Inputs, bool] | None:
    post = _num(names.get("gpu.free_gb_after_load"))
    pre = _num(names.get("gpu.free_gb_before_load"))
    if pre is None and post is not None and _num(names.get("model.weights_gb")) is not None:
        pre = post + float(names["model.weights_gb"])  # "mem usage" is before - after (model_runner.load_model)
    if pre is None or post is None or pre <= 0:
        return None
    args = {k[len("server_args."):]: v for k, v in names.items() if k.startswith("server_args.")}
    launch = launch_from_flags(args)
    mfs = _num(given.get("mem_fraction_static"))
    if mfs is None:
        mfs = launch.mem_fraction_static
    if mfs is None or not 0 < mfs < 1:
        return None  # the default depends on the model and GPU; server_args states the value used
    launch = replace(launch, mem_fraction_static=mfs)
    ratio = _num(given.get("mamba_ratio"))
    if ratio is not None:  # the strategy that gives the ratio the message states (_calculate_mamba_ratio)
        launch = replace(launch, **_RATIO_SETTINGS.get(int(ratio), {}))
    ctx = int(_num(names.get("model.context_len")) or 0) or launch.context_length
    arch = str(names.get("model.arch") or "")
    hybrid = bool(names.get("model.hybrid")) or any(
        _num(given.get(k)) is not None for k in ("mamba_per_req_mb", "mamba_slots", "mamba_ratio"))
    linear = LinearState("measured", 0, 0, 0, 0, 0, 0, 0) if hybrid else None
    model = ModelInfo(name="", architectures=(arch,) if arch else (), model_type="", num_layers=0, num_heads=0,
                      num_kv_heads=0, head_dim=0, v_head_dim=0, hidden_size=0, context_len=ctx or 0,
                      linear=linear, kv_cell_bytes=1 << 34, mamba_state_bytes=None if hybrid else 0)
    total = _num(names.get("gpu.total_memory_gb"))
    gpu = mm.Gpu(total_mib=(total if total is not None else pre + 0.8) * 1024)
    ran = bool(names.get("cuda_graph.captured") or names.get("server.ready"))
    # an inferred range ("0.4.0-0.5.23"): its newest release, as for an unknown one
    version = str(names.get("sglang.version") or "").rpartition("-")[2] or None
    base = _Inputs(mm.family_of(version), launch, model, gpu, pre, post,
                   mfs, False, _num(given.get("mamba_per_req_mb")) is not None, ran)
    return base, hybrid


def _min_fraction(i: _Inputs) -> float:
    """The fraction below which the weights leave the pools nothing: 1 - post/pre (SGLang's "minimum viable")."""
    return round(1 - i.post / i.pre, 4)


def _kv_gb(p: mm.PoolPlan) -> float:
    """GiB the KV pool gets (exact for the stand-in cell too: it only scales tokens)."""
    return (p.kv_tokens or 0) * p.cell_size / mm.GIB


def _fraction(m: float) -> str:
    """0.89, 0.90, 0.833: two decimals, three when the release's default has them."""
    s = f"{m:.3f}"
    return s[:-1] if s.endswith("0") else s


def _phrase_requests(n: int | None) -> str:
    return f"{n} request" + ("" if n == 1 else "s")


def outcome(fp: mm.FixPlan, mfs_now: float, ctx: int | None, kv_sized: bool = True,
            state_stated: bool = True) -> str:
    """The predicted launch at a fix, with its arithmetic: the sentence findings quote.

    ``kv_sized`` false: the KV bytes per token are a stand-in (a log that stopped before the
    pool), so the pool is given in GB; ``state_stated`` false: the bytes per mamba slot are the
    most a logged slot count allows.
    """
    q = fp.predicted
    if not fp.feasible or q is None:
        return fp.reason
    m = _fraction(fp.mem_fraction_static if fp.mem_fraction_static is not None else mfs_now)
    at = f"at {m}" + (f" with --max-mamba-cache-size {fp.max_mamba_cache_size}" if fp.max_mamba_cache_size else "")
    head = f"{at} the pools get {q.post_gib:.2f} − {q.pre_gib:.2f} × (1 − {m}) = {q.rest_gib:.2f} GB"
    bits = []
    if q.mamba_slots is not None:
        size = ("" if state_stated else "≤") + f"{(q.mamba_per_req or 0) / mm.MIB:.1f} MB"
        bits.append(f"{q.mamba_slots} mamba slots of {size} = {_phrase_requests(q.max_running_requests)}")
    if not kv_sized:
        kv = f"{_kv_gb(q):.2f} GB" if q.mamba_slots is not None else "all of it"
        bits.append(f"{kv} for the KV cache (how many tokens that holds is not in this log, "
                    "which stopped before sizing the pool: `sglang-doctor preflight` with the model directory "
                    "predicts it)")
    elif fp.context_length is not None and ctx:
        also = "also " if fp.mem_fraction_static not in (None, mfs_now) or fp.max_mamba_cache_size else ""
        bits.append(f"KV pool {q.kv_tokens:,} tokens < context {ctx:,}: {also}cap --context-length to "
                    f"{fp.context_length}")
    elif ctx:
        bits.append(f"KV pool {q.kv_tokens:,} tokens ≥ context {ctx:,}")
    else:
        bits.append(f"KV pool {q.kv_tokens:,} tokens (this log does not state the context length: "
                    "check the model's against it)")
    text = f"{head}: " + ", ".join(bits)
    if fp.context_length is not None and ctx:
        text = f"no fraction gives a KV pool that holds the {ctx:,}-token context; {text}"
    return text


def plan_from_log(names: Mapping[str, Any], **given: Any) -> dict[str, Any] | None:
    """What SGLang does with the log's numbers, and the smallest change that starts and serves.

    ``names``: a log's facts (``gpu.free_gb_before_load``, ``server_args.*`` …, see the module
    docstring); ``given``: numbers the matched message states (``GIVEN``). None when the log
    lacks the free-memory readings or the fraction.
    """
    unknown = set(given) - set(GIVEN)
    if unknown:
        raise TypeError(f"mem_plan() takes no argument {sorted(unknown)[0]!r}")
    got = _inputs(names, given)
    if got is None:
        return None
    i, hybrid = got
    bounds = _state_bytes(i, names, given) if hybrid else (0, 0)
    if bounds is None:
        return _unsized_state(i)
    state, smallest = bounds
    i = replace(i, model=replace(i.model, mamba_state_bytes=state))
    cell = _cell_bytes(i, names, given)
    ctx = i.model.context_len or None
    if cell is not None:
        # a log that failed before the scheduler's line states no context unless --context-length
        # did: plan for a nominal one then, and cap nothing (a cap could exceed the model's own)
        i = replace(i, model=replace(i.model, kv_cell_bytes=cell, context_len=ctx or _NOMINAL_CONTEXT), kv_sized=True)
    else:
        # "holds the context" becomes "leaves MIN_KV_GIB_UNSIZED for the KV cache": a stand-in cell
        # (over a nominal context when the log does not state one, so a request count comes out)
        nominal = ctx or _NOMINAL_CONTEXT
        i = replace(i, model=replace(i.model, kv_cell_bytes=max(1, int(MIN_KV_GIB_UNSIZED * mm.GIB / nominal)),
                                     context_len=nominal))
    now = _pools(i)
    top = None
    if i.ran and now.starts:
        computed = min(0.99, 1 - mm.headroom_gib(i.family, i.model, i.launch, i.gpu) / i.pre)
        top = max(computed, i.mfs)
    fp = mm.smallest_mem_fraction(i.family, i.model, i.launch, i.gpu, i.pre, i.post, max_fraction=top,
                                  alternatives=_alternatives(i, names, given, smallest), on_grid=True)
    if fp.predicted is not None and hybrid:  # the slot size said is the primary's, the least favourable pool kept
        fp = replace(fp, predicted=replace(fp.predicted, mamba_per_req=state))
    if (not i.kv_sized or ctx is None) and fp.context_length is not None:
        # the cap came from the stand-in cell or context: keep the fraction, drop the meaningless cap
        fp = replace(fp, context_length=None)
    q = fp.predicted if fp.feasible else None
    new_mfs = fp.mem_fraction_static
    if new_mfs is not None and abs(new_mfs - i.mfs) < 1e-9:
        new_mfs = None
    return {
        "family": i.family,
        "mem_fraction_static_now": i.mfs,
        "rest_gb": round(now.rest_gib, 4),
        "min_fraction": _min_fraction(i),
        "failure": now.failure,
        "failure_kind": now.failure_kind,
        "starts": now.starts,
        "kv_tokens": now.kv_tokens if i.kv_sized else None,
        "mamba_slots": now.mamba_slots,
        "mamba_per_req_mb": round(state / mm.MIB, 2) if hybrid and state else None,
        "max_running_requests": now.max_running_requests if i.kv_sized or hybrid else None,
        "context_len": ctx,
        "kv_sized": i.kv_sized,
        "feasible": fp.feasible,
        "mem_fraction_static": new_mfs,
        "context_length": fp.context_length,
        "max_mamba_cache_size": fp.max_mamba_cache_size,
        "max_fraction": fp.max_fraction,
        "fix_kv_tokens": q.kv_tokens if q is not None and i.kv_sized else None,
        "fix_kv_gb": round(_kv_gb(q), 2) if q is not None else None,
        "fix_mamba_slots": q.mamba_slots if q is not None else None,
        "fix_requests": q.max_running_requests if q is not None else None,
        "outcome": outcome(fp, i.mfs, ctx, i.kv_sized, i.state_stated),
    }


# Slot sizes tried between the smallest and the largest a logged slot count allows.
_STATE_SAMPLES = 8


def _alternatives(i: _Inputs, names: Mapping[str, Any], given: Mapping[str, Any], smallest: int) -> list[ModelInfo]:
    """The other models the log allows: each slot size from ``smallest`` up to the primary's, with the
    KV size that then reproduces the logged pool. The larger slot alone would overstate the memory a
    smaller slot count frees, and the KV bytes it implies understate every other pool."""
    largest = i.model.mamba_state_bytes or 0
    if smallest >= largest:
        return []
    out = []
    for k in range(_STATE_SAMPLES):
        b = smallest + (largest - smallest) * k // _STATE_SAMPLES
        j = replace(i, model=replace(i.model, mamba_state_bytes=b))
        cell = _cell_bytes(j, names, given) if i.kv_sized else i.model.kv_cell_bytes
        if cell is not None:
            out.append(replace(j.model, kv_cell_bytes=cell))
    return out


def _unsized_state(i: _Inputs) -> dict[str, Any]:
    """A hybrid model whose state size the log does not give (a log cut after the weights).

    Only the sign of the pools' budget is known: at or below zero the 0.5.14+ state sizing gets a
    negative slot count whatever a slot's size (the older releases fail the KV pool instead).
    """
    rest = i.post - i.pre * (1 - i.mfs)
    failure = kind = None
    if rest <= 0:
        if at_least(i.family, "0.5.14"):
            failure = ("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
                       f"Computed max_mamba_cache_size=<negative> (total_rest_memory={rest:.2f} GB, …)")
            kind = "mamba-negative"
        else:
            _, failure = mm.kv_budget(i.family, i.mfs, i.pre, i.post)
            kind = "kv-negative"
    out: dict[str, Any] = dict.fromkeys(PLAN_FIELDS)
    out.update(family=i.family, mem_fraction_static_now=i.mfs, rest_gb=round(rest, 4), min_fraction=_min_fraction(i),
               failure=failure,
               failure_kind=kind, starts=None if failure is None else False, kv_sized=False,
               context_len=i.model.context_len or None)
    return out
