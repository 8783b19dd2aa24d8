"""SGLang's memory arithmetic, one model for every release family. Pure: no I/O.

Given the launch settings, the model's shape and the free GPU memory SGLang measures before
(``pre``) and after (``post``) loading the weights, it reproduces what the release does in
``init_memory_pool``: the fraction it uses, the KV pool (``max_total_num_tokens``), the
hybrid mamba state slots, ``max_running_requests`` and the exception it raises when memory
does not fit — with that release's message. ``plan`` inverts it: the smallest
``--mem-fraction-static`` (plus a ``--context-length`` cap or ``--max-mamba-cache-size`` when
needed) at which the model says the launch starts and serves one full-length request.

Families are named by the release whose source was read (``sglang==0.4.6.post5, 0.4.10.post2,
0.5.5, 0.5.10, 0.5.14, 0.5.23`` wheels); file:line below are ``sglang/srt/`` of that release.
Memory is in GiB, which SGLang prints as "GB".

Public API::

    family_of(version) -> str
    Launch, Gpu, PoolPlan, FixPlan                       (dataclasses)
    resolve_mem_fraction(family, model, launch, gpu) -> tuple[float, str]
    cell_size(family, model, launch, gpu=None) -> int
    mamba_cache_per_req(family, model, launch) -> int
    mamba_ratio(family, model, launch) -> int
    weights_per_gpu_gib(model, launch) -> float | None
    estimate_pre_gib(gpu, launch) -> float | None
    size_pools(family, model, launch, mfs, pre_gib, post_gib, gpu=None) -> PoolPlan
    kv_budget(family, mfs, pre_gib, post_gib, multimodal=False) -> tuple[float, str | None]
    simulate(family, model, launch, gpu, pre_gib=None, post_gib=None) -> PoolPlan
    headroom_gib(family, model, launch, gpu) -> float
    smallest_mem_fraction(family, model, launch, gpu, pre_gib, post_gib) -> FixPlan
    plan(...)  (alias of smallest_mem_fraction)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sglang_doctor.launch.model_dir import ModelInfo
from sglang_doctor.fix import sglang_archs
from sglang_doctor.fix.memory_defaults import FAMILIES, Knobs, at_least, default_mem_fraction, gpu_class_defaults

__all__ = [
    "FAMILIES",
    "FixPlan",
    "Gpu",
    "Launch",
    "PoolPlan",
    "cell_size",
    "estimate_pre_gib",
    "family_of",
    "headroom_gib",
    "is_multimodal",
    "kv_budget",
    "mamba_cache_per_req",
    "mamba_ratio",
    "plan",
    "resolve_mem_fraction",
    "simulate",
    "size_pools",
    "smallest_mem_fraction",
    "weights_per_gpu_gib",
]

GIB = 1 << 30
MIB = 1 << 20

# Free memory SGLang sees before loading = nvidia-smi total minus the CUDA context, torch and,
# with TP, NCCL / custom all-reduce buffers. Calibrated on real logs ("Load weight begin avail
# mem" vs the card's total): 0.76-0.78 GiB on 16-24 GiB cards, 1.17 on an H100 80GB at tp1,
# 0.91 on 4 x RTX 4090 (PCIe: no custom all-reduce), 3.1 on 8 x H200 (PR sgl-project/sglang#11716,
# whose "Init torch distributed ends. mem usage" alone is 2.01 GB). See bench/preflight_accuracy.py.
CONTEXT_BASE_GIB = 0.7
CONTEXT_PER_GIB = 0.006  # the context grows a little with the card (allocator, cuBLAS workspaces)
# Resident bytes "Load weight end ... mem usage" shows beyond the checkpoint split (rope caches,
# workspaces): +0.09 .. +0.2 GiB on the bench's dense launches.
WEIGHT_EXTRA_GIB = 0.15

# --------------------------------------------------------------------------- inputs


def family_of(version: str | None) -> str:
    """The family whose rules a release follows: the newest release read at or below it.

    Boundaries: 0.4.4.post3 and 0.4.5 were read too (tp-only table, multimodal x0.95 / x0.90);
    the 0.4.6 mem-fraction table lasted to 0.4.8 (the reference's reading of 0.4.9); 0.5.0
    starts the 0.5 reserve formula. Releases older than 0.4.4 use 0.4.4's rules. Unparseable
    or absent -> newest family.
    """
    if not version:
        return FAMILIES[-1]
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", version.strip())
    if not m:
        return FAMILIES[-1]
    v = (int(m[1]), int(m[2]), int(m[3] or 0))
    if v < (0, 4, 5):
        return "0.4.4"
    if v < (0, 4, 6):
        return "0.4.5"
    if v < (0, 4, 9):
        return "0.4.6"
    if v < (0, 5, 0):
        return "0.4.10"
    if v < (0, 5, 10):
        return "0.5.5"
    if v < (0, 5, 14):
        return "0.5.10"
    if v < (0, 5, 23):
        return "0.5.14"
    return "0.5.23"


@dataclass
class Launch:
    """Server arguments the memory arithmetic reads (SGLang's defaults when absent)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    enable_dp_attention: bool = False
    mem_fraction_static: float | None = None
    max_total_tokens: int | None = None
    context_length: int | None = None
    page_size: int | None = None
    max_running_requests: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int = 16384
    cuda_graph_max_bs: int | None = None
    cuda_graph_bs: tuple[int, ...] | None = None
    disable_cuda_graph: bool = False
    disable_prefill_graph: bool = False  # --disable-piecewise-cuda-graph / --cuda-graph-backend-prefill disabled
    enable_torch_compile: bool = False
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    quantization: str | None = None
    disable_radix_cache: bool = False
    max_mamba_cache_size: int | None = None
    mamba_full_memory_ratio: float = 0.9
    mamba_ssm_dtype: str | None = None
    mamba_strategy: str = "auto"  # --mamba-radix-cache-strategy (0.5.14+) / --mamba-scheduler-strategy (0.5.10)
    disable_overlap_schedule: bool = False
    speculative_algorithm: str | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_draft_layers: int | None = None
    enable_lora: bool = False
    enable_multimodal: bool | None = None
    language_only: bool = False
    enable_hierarchical_cache: bool = False
    disaggregation_mode: str = "null"
    attention_backend: str | None = None
    moe_a2a_backend: str = "none"
    swa_full_tokens_ratio: float = 0.8
    disable_hybrid_swa_memory: bool = False
    model_path: str = ""
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def attn_dp(self) -> int:
        return self.dp if self.enable_dp_attention else 1

    @property
    def attn_tp(self) -> int:
        """get_attention_tp_size (0.5.14 layers/dp_attention.py:245-249)."""
        return max(1, self.tp // self.attn_dp)

    @property
    def spec(self) -> str:
        return (self.speculative_algorithm or "").upper()


@dataclass(frozen=True)
class Gpu:
    """The card the pools are sized for: capacity and free memory (MiB), architecture."""

    total_mib: float | None = None  # nvidia-smi memory.total (min over GPUs)
    free_mib: float | None = None  # nvidia-smi memory.free (min over GPUs)
    compute_cap: tuple[int, int] | None = None
    name: str = ""
    rocm: bool = False


@dataclass(frozen=True)
class PoolPlan:
    """What the release does with this memory: pools, limits, and the failure if any."""

    family: str
    mem_fraction_static: float
    mfs_source: str
    pre_gib: float
    post_gib: float
    weights_gib: float
    rest_gib: float  # the KV(+mamba) budget: post - pre * (1 - mfs)
    cell_size: int
    kv_dtype: str
    context_len: int
    kv_tokens: int | None = None
    swa_tokens: int | None = None
    mamba_per_req: int | None = None
    mamba_slots: int | None = None
    mamba_ratio: int | None = None
    max_running_requests: int | None = None
    failure: str | None = None
    failure_kind: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def starts(self) -> bool:
        return self.failure is None

    @property
    def serves_full_context(self) -> bool:
        return self.starts and (self.kv_tokens or 0) >= self.context_len and (self.max_running_requests or 0) >= 1


@dataclass(frozen=True)
class FixPlan:
    """The smallest change the model says starts and serves (or why none exists)."""

    feasible: bool
    mem_fraction_static: float | None = None  # new value, None when unchanged
    context_length: int | None = None  # cap, None when unchanged
    max_mamba_cache_size: int | None = None
    predicted: PoolPlan | None = None
    max_fraction: float | None = None  # the most this GPU allows while leaving SGLang's headroom
    reason: str = ""


# --------------------------------------------------------------------------- model facts per release


def is_multimodal(family: str, model: ModelInfo, launch: Launch) -> bool:
    """ModelConfig.is_multimodal: the arch is on the release's list (configs/model_config.py)."""
    archs = set(model.architectures)
    if not archs & sglang_archs.MULTIMODAL[family]:
        return False
    if family == "0.4.6" and archs & sglang_archs.MULTIMODAL_OPT_IN_046:
        return bool(launch.enable_multimodal)  # 0.4.6 model_config.py:82-93
    return launch.enable_multimodal is not False


def _is_hybrid_swa(family: str, model: ModelInfo, launch: Launch) -> bool:
    if launch.disable_hybrid_swa_memory or not at_least(family, "0.5.10") or model.swa_layers == 0:
        return False
    return bool(set(model.architectures) & sglang_archs.HYBRID_SWA.get(family, frozenset()))


def _kv_elem(family: str, model: ModelInfo, launch: Launch, gpu: Gpu | None) -> tuple[float, str]:
    """Bytes per KV element and its dtype name (0.5.14 model_runner.py:2337-2381)."""
    kv = (launch.kv_cache_dtype or "auto").lower()
    if kv == "auto":
        if model.index_head_dim and at_least(family, "0.5.10"):
            # DSA on auto: fp8 on sm100+, bf16 below (0.5.10 server_args.py:1430-1434)
            if gpu and gpu.compute_cap and gpu.compute_cap[0] >= 10:
                return 1, "fp8_e4m3"
        algo = str(model.kv_cache_quant_algo or "").upper()
        if algo == "FP8" and at_least(family, "0.5.5"):
            return 1, "fp8_e4m3"
        if launch.dtype in ("float32", "float"):
            return 4, "float32"
        return 2, "float16" if launch.dtype in ("float16", "half") else "bfloat16"
    if kv.startswith("fp8"):
        return 1, kv
    if kv == "fp4_e2m1":
        return 0.5, kv
    return 2, kv


def _kv_layers(model: ModelInfo, launch: Launch) -> int:
    """Layers with a KV cache on the busiest pipeline stage (tokens are min-reduced over stages)."""
    return math.ceil(model.kv_layers / max(1, launch.pp))


def cell_size(family: str, model: ModelInfo, launch: Launch, gpu: Gpu | None = None) -> int:
    """Bytes of KV cache per token on one GPU (per token of max_total_num_tokens)."""
    if model.kv_cell_bytes is not None:
        return model.kv_cell_bytes
    elem, _ = _kv_elem(family, model, launch, gpu)
    layers = _kv_layers(model, launch)
    if model.use_mla:
        # 0.4.6 model_runner.py:800-807, 0.5.14 pool_configurator.py:176-199
        dim = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
        if elem == 0.5:  # fp4: halved, plus one scale per 16 elements (kv_size of the x2 dtype is 1)
            cell = (dim * layers) // 2 + (dim // 16) * layers
        else:
            cell = int(dim * layers * elem)
        if model.index_head_dim and at_least(family, "0.5.5"):
            ihd = model.index_head_dim  # DSA indexer: ihd + ihd//128*4 bytes per layer (uint8 buffer)
            cell += (ihd + ihd // 128 * 4) * layers
        return cell
    kvh = max(1, model.num_kv_heads // launch.attn_tp)  # replicated, not split, when kv < tp
    if _is_hybrid_swa(family, model, launch):
        n_full = model.num_layers - model.swa_layers
        per = kvh * (model.head_dim + model.v_head_dim) * elem
        if at_least(family, "0.5.14"):  # pool_configurator.py:280-289: full + ratio * swa
            return int(per * n_full + launch.swa_full_tokens_ratio * per * model.swa_layers)
        return int(per * model.num_layers)  # 0.5.10 profiles all layers, then splits (mixin :110-125)
    if at_least(family, "0.5.10"):  # v_head_dim enters with 0.5.10 (mixin:127-131)
        if elem == 0.5:
            full = kvh * (model.head_dim + model.v_head_dim) * layers
            cell = full // 2 + (kvh * model.head_dim * layers * 2) // 16
        else:
            cell = int(kvh * (model.head_dim + model.v_head_dim) * layers * elem)
    else:
        cell = int(kvh * model.head_dim * layers * 2 * elem)
    if at_least(family, "0.5.14") and launch.spec in ("EAGLE", "EAGLE3", "STANDALONE") and layers:
        # draft KV shares the pool: cell scaled by 1 + draft/target layers (pool_configurator.py:130-145)
        draft = launch.speculative_draft_layers or 1
        cell = int(cell * (1 + draft / layers))
    return cell


def _ssm_bytes(family: str, model: ModelInfo, launch: Launch) -> int:
    name = launch.env.get("SGLANG_MAMBA_SSM_DTYPE") or launch.mamba_ssm_dtype
    if name is None and at_least(family, "0.5.10") and model.linear is not None:
        name = model.linear.ssm_dtype  # config's mamba_ssm_dtype (0.5.14 configs/mamba_utils.py:46-103)
    return {"bfloat16": 2, "float16": 2}.get(str(name), 4)


def mamba_cache_per_req(family: str, model: ModelInfo, launch: Launch) -> int:
    """mamba_cache_per_req (0.5.14 configs/mamba_utils.py:116-176): conv + ssm state of every linear layer."""
    st = model.linear
    if st is None:
        return 0
    if model.mamba_state_bytes is not None:
        return model.mamba_state_bytes
    tp = launch.attn_tp
    groups = st.n_groups
    if groups % tp != 0:
        groups += tp - groups  # extra_groups_for_head_shards: groups replicated up to tp
    conv_dim = st.intermediate_size + 2 * groups * st.state_size
    conv = (conv_dim // tp) * (st.conv_kernel - 1)
    ssm = (st.num_heads // tp) * st.head_dim * st.state_size
    conv_bytes = 4 if launch.env.get("SGLANG_MAMBA_CONV_DTYPE") == "float32" else 2
    layers = st.layers if launch.pp <= 1 else math.ceil(st.layers / launch.pp)
    return (conv * conv_bytes + ssm * _ssm_bytes(family, model, launch)) * layers


_EXTRA_BUFFER_ARCHS = frozenset({  # 0.5.14 server_args.py:4338-4353 (with the triton linear-attn backend)
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3NextForCausalLM",
    "InternS2PreviewForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration",
    "BailingMoeV2_5ForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM",
    "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
})


def _mamba_strategy(family: str, model: ModelInfo, launch: Launch) -> str:
    s = launch.mamba_strategy or "auto"
    if s != "auto":
        return s
    if not at_least(family, "0.5.14"):
        return "no_buffer"  # 0.5.10 server_args.py:964-967: auto -> no_buffer
    wants = not launch.disable_overlap_schedule or (launch.page_size or 1) > 1
    if wants and set(model.architectures) & _EXTRA_BUFFER_ARCHS:
        return "extra_buffer"  # 0.5.14 server_args.py:4380-4393
    return "no_buffer"


def mamba_ratio(family: str, model: ModelInfo, launch: Launch) -> int:
    """Mamba slots one running request needs (_calculate_mamba_ratio, 0.5.14 mixin:274-293)."""
    if launch.disable_radix_cache:
        return 1
    if not at_least(family, "0.5.10"):
        return 3  # 0.5.5 model_runner.py:213, 1565-1573
    strategy = _mamba_strategy(family, model, launch)
    overlap = not launch.disable_overlap_schedule and strategy != "no_buffer"
    if strategy.startswith("extra_buffer"):
        if not overlap:
            return 3 + 1
        return 3 + (1 if strategy == "extra_buffer_lazy" else 2)
    return 3


# --------------------------------------------------------------------------- mem_fraction_static


def _prefill_graph_on(family: str, model: ModelInfo, launch: Launch, gpu: Gpu | None, mm: bool) -> bool:
    """Whether the prefill (piecewise / breakable) CUDA graph survives the release's disable rules.

    0.5.10 server_args.py:1078-1139, 0.5.14 :2996-3052 (tc_piecewise), 0.5.23
    arg_groups/cuda_graph_hook.py:131-238 (breakable, CUDA only).
    """
    if not at_least(family, "0.5.10") or launch.disable_prefill_graph or launch.disable_cuda_graph:
        return False
    if gpu is not None and gpu.rocm:
        return False
    archs = set(model.architectures)
    mm_ok = mm and bool(archs & sglang_archs.MULTIMODAL_PREFILL_GRAPH_OK.get(family, frozenset()))
    if at_least(family, "0.5.23"):
        return not (launch.pp > 1 or (mm and not mm_ok)
                    or launch.moe_a2a_backend not in ("none", "deepep", "megamoe", "flashinfer"))
    if archs & sglang_archs.PIECEWISE_DISABLED.get(family, frozenset()):
        return False
    if family == "0.5.10" and model.index_head_dim:
        return False  # is_deepseek_nsa joins the blacklist in 0.5.10 (model_config.py:212-215)
    return not (launch.speculative_algorithm and family == "0.5.10" or launch.enable_dp_attention
                or launch.enable_torch_compile or launch.pp > 1 or launch.moe_a2a_backend != "none"
                or launch.enable_lora or (mm and not mm_ok) or launch.enable_hierarchical_cache
                or launch.disaggregation_mode != "null")


def resolve_mem_fraction(family: str, model: ModelInfo, launch: Launch, gpu: Gpu) -> tuple[float, str]:
    """The mem_fraction_static ModelRunner uses, and where it came from."""
    mm = is_multimodal(family, model, launch) and not launch.language_only
    if launch.mem_fraction_static is not None:
        m, src = float(launch.mem_fraction_static), "--mem-fraction-static"
    else:
        knobs = Knobs(
            tp=launch.tp, pp=launch.pp, dp=launch.dp, enable_dp_attention=launch.enable_dp_attention,
            chunked_prefill_size=launch.chunked_prefill_size, max_prefill_tokens=launch.max_prefill_tokens,
            cuda_graph_max_bs=launch.cuda_graph_max_bs, cuda_graph_bs=launch.cuda_graph_bs,
            max_running_requests=launch.max_running_requests, max_total_tokens=launch.max_total_tokens,
            context_length=launch.context_length, speculative_algorithm=launch.speculative_algorithm,
            prefill_graph=_prefill_graph_on(family, model, launch, gpu, mm),
            decode_graph=not launch.disable_cuda_graph, use_mla=model.use_mla,
            # adjust_mem_fraction_for_vlm returns early without a vision_config (0.4.10 :2041-2043)
            multimodal=mm and at_least(family, "0.4.10") and model.vision_config,
            vision_layers=model.vision_layers, vision_hidden=model.vision_hidden,
            model_path=launch.model_path, deepep=launch.moe_a2a_backend == "deepep",
        )
        d = default_mem_fraction(family, gpu.total_mib, knobs)
        m, src = d.mem_fraction_static, "default: " + d.rule
    if mm and not at_least(family, "0.4.10"):
        # ModelRunner scales even an explicit value: x0.95 in 0.4.4.post3 (model_runner.py:253-254),
        # x0.90 in 0.4.5 (:273-274) and 0.4.6 (:393-397)
        factor = 0.95 if family == "0.4.4" else 0.90
        m *= factor
        src += f", x{factor:.2f} multimodal"
    attn = launch.attention_backend or ("aiter" if gpu.rocm and at_least(family, "0.4.10") else None)
    ctx = launch.context_length or model.context_len
    if attn == "aiter" and ctx > 8192 and at_least(family, "0.4.10"):
        m *= 0.85  # 0.4.10 model_runner.py:499-501, 0.5.14 server_args.py:4662-4664
        src += ", x0.85 aiter with context > 8192"
    return m, src


# --------------------------------------------------------------------------- weights and free memory


def weights_per_gpu_gib(model: ModelInfo, launch: Launch) -> float | None:
    """Resident weight bytes per GPU: the checkpoint split over tp*pp ranks.

    MTP/nextn layers load only for speculative decoding; float32 tensors load in the
    16-bit model dtype. "mem usage" in real logs sits within -0.45..+0.3 GiB of this
    (reference section 6).
    """
    w = model.weights
    if w is None:
        return None
    total = w.total_bytes
    if not launch.speculative_algorithm:
        total -= w.mtp_bytes
    if launch.dtype not in ("float32", "float"):
        total -= w.wide_float_bytes // 2
    return total / (max(1, launch.tp) * max(1, launch.pp)) / GIB + WEIGHT_EXTRA_GIB


def _context_gib(gpu: Gpu, launch: Launch) -> float:
    """CUDA context + torch + distributed groups on one GPU before the weights load."""
    total = (gpu.total_mib or 0) / 1024
    base = min(1.3, CONTEXT_BASE_GIB + CONTEXT_PER_GIB * total)
    world = launch.tp * launch.pp
    if world <= 1:
        return base
    # custom all-reduce needs P2P (datacenter parts); consumer PCIe cards only get NCCL's buffers
    return base + (0.25 if total >= 60 else 0.05) * world


def estimate_pre_gib(gpu: Gpu, launch: Launch) -> float | None:
    """Free memory after distributed init, from nvidia-smi's free (or total) memory."""
    base = gpu.free_mib if gpu.free_mib is not None else gpu.total_mib
    if base is None:
        return None
    return base / 1024 - _context_gib(gpu, launch)


# --------------------------------------------------------------------------- the pool sizing


def _not_enough_memory(family: str, mfs: float) -> str:
    msg = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    if family == "0.5.5":  # f"{self.server_args.mem_fraction_static=}" (0.5.5 model_runner.py:1624-1628)
        return msg + f" Current value: self.server_args.mem_fraction_static={mfs}"
    if at_least(family, "0.5.10"):  # MemoryPoolConfig.__post_init__ (0.5.14 pool_configurator.py:56-61)
        return msg + f" Current value: mem_fraction_static={mfs}"
    return msg


def _weights_exceed(mfs: float, pre: float, post: float) -> str:
    """0.5.14 model_runner_kv_cache_mixin.py:103-118, 0.5.23 kv_cache_configurator.py:3040-3056."""
    minimum = 1 - post / pre
    suggested = math.ceil(minimum * 1000) / 1000
    return ("ValueError: Loaded weights leave no GPU memory for the KV cache under "
            f"--mem-fraction-static={mfs}. Raise --mem-fraction-static above {suggested:.3f} "
            f"(minimum viable = 1 - available/pre = {minimum:.4f}). If using speculative "
            "decoding, draft weights are now counted.")


def _mamba_negative(slots: int, rest: float, per_req: int) -> str:
    """0.5.14 mixin:207-218, 0.5.23 kv_cache_configurator.py:3392-3403."""
    return ("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
            f"Computed max_mamba_cache_size={slots} (total_rest_memory={rest:.2f} GB, "
            f"mamba_cache_per_req={per_req / MIB:.2f} MB). Try: (1) reduce --max-running-requests, "
            "(2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, or "
            "(4) use GPUs with more memory.")


def _mamba_too_small(slots: int, ratio: int, reqs: int) -> str:
    """0.5.14 mixin:1001-1010, 0.5.23 kv_cache_configurator.py:3152-3160."""
    return ("RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
            f"max_mamba_cache_size={slots}, mamba_ratio={ratio}, resulting max_num_reqs={reqs}. "
            "Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, or "
            "(3) use GPUs with more memory.")


_WEIGHTS_OOM = "torch.OutOfMemoryError: CUDA out of memory."  # raised by torch while load_model allocates the weights
_ZERO_REQS = "AssertionError: max_running_request is zero"  # tp_worker.py (0.4.6 :128, 0.5.10 :296)
_NEGATIVE_POOL = "RuntimeError: Trying to create tensor with negative dimension"  # torch, from a negative pool size


def _mamba_slots(family: str, launch: Launch, rest: float, per_req: int, ratio: int) -> tuple[int, float, float]:
    """(slots, rest after the spec scratch, GiB the slots take) — handle_max_mamba_cache per release."""
    D = launch.speculative_num_draft_tokens or 0
    spec = bool(launch.speculative_algorithm)
    dp = launch.attn_dp
    mrr = launch.max_running_requests
    r = launch.mamba_full_memory_ratio
    budget_bytes = rest * r / (1 + r) * GIB
    if family == "0.5.5":  # model_runner.py:1325-1360
        if launch.disable_radix_cache:
            slots = launch.max_mamba_cache_size or mrr or 512
        else:
            slots = int(budget_bytes // per_req // (1 + D))
        slots //= dp
        return slots, rest, slots * per_req * (1 + D) / GIB
    if family == "0.5.10":  # mixin:183-245
        if spec and mrr is not None:
            rest -= per_req * (mrr // dp) * D / GIB
            budget_bytes = rest * r / (1 + r) * GIB
        if launch.max_mamba_cache_size is not None:
            slots = launch.max_mamba_cache_size // dp
        elif launch.disable_radix_cache and mrr is not None:
            slots = mrr // dp
        else:
            slots = int(budget_bytes // per_req)
        return slots, rest, slots * per_req / GIB
    if family == "0.5.14":  # mixin:122-223
        if launch.max_mamba_cache_size is not None:
            slots = launch.max_mamba_cache_size // dp
            if spec and mrr is not None:
                rest -= per_req * min(mrr // dp, slots // ratio) * D / GIB
        elif launch.disable_radix_cache and mrr is not None:
            slots = mrr // dp
            if spec:
                rest -= per_req * slots * D / GIB
        elif spec and mrr is not None:
            slots = int(budget_bytes // (per_req * (1 + D / ratio)))
            rest -= per_req * min(mrr // dp, slots // ratio) * D / GIB
        else:
            slots = int(budget_bytes // per_req)
        return slots, rest, slots * per_req / GIB
    # 0.5.23 kv_cache_configurator.py:3300-3410: the pool's padding slot is reserved too
    if launch.max_mamba_cache_size is not None:
        slots = launch.max_mamba_cache_size // dp
        if spec and mrr is not None:
            rest -= per_req * (min(max(1, mrr // dp), slots // ratio) + 1) * D / GIB
    elif launch.disable_radix_cache and mrr is not None:
        slots = max(1, mrr // dp)
        if spec:
            rest -= per_req * (slots + 1) * D / GIB
    elif spec and mrr is not None:
        slots = int((budget_bytes - per_req * (1 + D)) // (per_req * (1 + D / ratio)))
        rest -= per_req * (min(max(1, mrr // dp), slots // ratio) + 1) * D / GIB
    else:
        slots = int((budget_bytes - per_req) // per_req)
    return slots, rest, (slots + 1) * per_req / GIB


def _tokens_from_rest(family: str, rest: float, cell: int) -> int:
    if at_least(family, "0.5.10"):
        return int(rest * GIB) // cell  # 0.5.10 mixin:177, 0.5.14 pool_configurator.py:222-227
    return int(rest * GIB // cell)  # 0.4.6 model_runner.py:819, 0.5.5 :1321


def _est_reqs(tokens: int, ctx: int) -> int:
    return max(min(int(tokens / ctx * 512), 4096), 2048)


def size_pools(family: str, model: ModelInfo, launch: Launch, mfs: float, pre_gib: float, post_gib: float,
               gpu: Gpu | None = None, mfs_source: str = "") -> PoolPlan:
    """init_memory_pool of the family, fed SGLang's own free-memory readings."""
    ctx = launch.context_length or model.context_len
    page = launch.page_size or 1
    cell = cell_size(family, model, launch, gpu)
    _, kv_name = _kv_elem(family, model, launch, gpu)
    base = dict(family=family, mem_fraction_static=mfs, mfs_source=mfs_source, pre_gib=pre_gib,
                post_gib=post_gib, weights_gib=pre_gib - post_gib, cell_size=cell, kv_dtype=kv_name,
                context_len=ctx)
    notes: list[str] = []
    if post_gib <= 0:
        # the weights alone do not fit: load_model dies before any pool is sized
        return PoolPlan(**base, rest_gib=post_gib - pre_gib * (1 - mfs), failure=_WEIGHTS_OOM,
                        failure_kind="weights-oom", notes=("weights per GPU exceed the free memory",))
    rest = post_gib - pre_gib * (1 - mfs)
    if at_least(family, "0.5.23") and is_multimodal(family, model, launch):
        rest -= 100 / 1024  # SGLANG_VLM_CACHE_SIZE_MB reserved from the KV budget (kv_cache_configurator.py:202-224)
        notes.append("0.5.23 keeps 100 MB of the KV budget for the multimodal embedding cache")
    budget = rest
    hybrid = model.linear is not None and at_least(family, "0.5.5")
    per_req = slots = ratio = None
    if hybrid:
        per_req = mamba_cache_per_req(family, model, launch)
        ratio = mamba_ratio(family, model, launch)
        slots, rest, used = _mamba_slots(family, launch, rest, per_req, ratio)
        if slots <= 0 and at_least(family, "0.5.14"):
            return PoolPlan(**base, rest_gib=budget, mamba_per_req=per_req, mamba_slots=slots, mamba_ratio=ratio,
                            failure=_mamba_negative(slots, rest, per_req), failure_kind="mamba-negative",
                            notes=tuple(notes))
        rest -= used
    hyb = dict(mamba_per_req=per_req, mamba_slots=slots, mamba_ratio=ratio)
    if at_least(family, "0.5.14") and rest <= 0:
        return PoolPlan(**base, rest_gib=budget, **hyb, failure=_weights_exceed(mfs, pre_gib, post_gib),
                        failure_kind="weights-exceed", notes=tuple(notes))
    tokens = _tokens_from_rest(family, rest, cell)
    swa = None
    user = launch.max_total_tokens
    spec_pad = 0
    if not at_least(family, "0.5.10") and launch.speculative_algorithm and (
            family != "0.5.5" or launch.spec in ("EAGLE", "EAGLE3", "STANDALONE")):
        # the draft shares the pool: headroom added to the token count (0.4.6 model_runner.py:859-879)
        reqs = launch.max_running_requests or _est_reqs(tokens, ctx)
        spec_pad = reqs * ((launch.speculative_num_steps or 0) * (launch.speculative_eagle_topk or 1)
                           + (launch.speculative_num_draft_tokens or 0)) + 100
        tokens += spec_pad
    if at_least(family, "0.5.14"):
        tokens = tokens // page * page
        if user is not None and user < tokens:
            tokens = user // page * page
    else:
        if user is not None:
            tokens = min(tokens, user)
        tokens = tokens // page * page
    if _is_hybrid_swa(family, model, launch) and tokens > 0:
        r = launch.swa_full_tokens_ratio
        if family == "0.5.10":  # mixin:300-371: split the profiled capacity by memory
            kvh = max(1, model.num_kv_heads // launch.attn_tp)
            per = kvh * (model.head_dim + model.v_head_dim)
            n_full = model.num_layers - model.swa_layers
            total_mem = tokens * per * model.num_layers
            tokens = int(total_mem / (per * n_full + r * per * model.swa_layers)) // page * page
        swa = int(tokens * r) // page * page
    if tokens <= 0:
        return PoolPlan(**base, rest_gib=budget, **hyb, kv_tokens=tokens,
                        failure=_not_enough_memory(family, launch.mem_fraction_static if launch.mem_fraction_static
                                                   is not None else mfs),
                        failure_kind="kv-negative", notes=tuple(notes))
    reqs, failure, kind = _max_running(family, launch, tokens, ctx, slots, ratio)
    return PoolPlan(**base, rest_gib=budget, **hyb, kv_tokens=tokens, swa_tokens=swa, max_running_requests=reqs,
                    failure=failure, failure_kind=kind, notes=tuple(notes))


def _max_running(family: str, launch: Launch, tokens: int, ctx: int, slots: int | None,
                 ratio: int | None) -> tuple[int, str | None, str | None]:
    """max_running_requests and the failure its derivation raises."""
    user = launch.max_running_requests
    dp = launch.attn_dp
    hybrid = slots is not None and ratio is not None
    if not at_least(family, "0.5.5"):  # tp_worker.py:119-128; pool = est or user, +1
        pool = (user if user is not None else _est_reqs(tokens, ctx)) + 1
        reqs = min(tokens // 2 if user is None else user // dp, pool)
        return (reqs, None, None) if reqs > 0 else (reqs, _ZERO_REQS, "no-requests")
    if family == "0.5.5":  # model_runner.py:1554-1573 then tp_worker.py:281-290 (pool = max_num_reqs)
        pool = user if user is not None else _est_reqs(tokens, ctx)
        if hybrid:
            pool = min(pool, slots // ratio)
        if pool < 0 or (hybrid and slots < 0):
            return pool, _NEGATIVE_POOL, "mamba-negative"
        reqs = min(tokens // 2 if user is None else user // dp, pool)
        return (reqs, None, None) if reqs > 0 else (reqs, _ZERO_REQS, "no-requests")
    est = _est_reqs(tokens, ctx)
    if user is not None:
        req_per_worker = max(1, user // dp) if at_least(family, "0.5.23") else user // dp
        reqs = min(req_per_worker, est if family == "0.5.10" else tokens // 2)
    else:
        reqs = min(est, tokens // 2)
    if hybrid:
        reqs = min(reqs, slots // ratio)
        if at_least(family, "0.5.14") and reqs <= 0:
            return reqs, _mamba_too_small(slots, ratio, reqs), "mamba-too-small"
        if slots < 0:
            return reqs, _NEGATIVE_POOL, "mamba-negative"
    if reqs <= 0:
        return reqs, _ZERO_REQS, "no-requests"
    return reqs, None, None


def simulate(family: str, model: ModelInfo, launch: Launch, gpu: Gpu, pre_gib: float | None = None,
             post_gib: float | None = None) -> PoolPlan:
    """Full prediction: fraction (flag or the release's default), free memory, pools, failure.

    ``pre_gib``/``post_gib`` are SGLang's own readings ("Load weight begin/end ... avail mem")
    when known; otherwise they are estimated from the GPU's free (or total) memory and the
    checkpoint's size per GPU.
    """
    mfs, src = resolve_mem_fraction(family, model, launch, gpu)
    notes = []
    if pre_gib is None:
        pre_gib = estimate_pre_gib(gpu, launch)
        if pre_gib is None:
            raise ValueError("need the GPU memory (total or free) or SGLang's measured free memory")
        notes.append("free memory before loading estimated from nvidia-smi "
                     + ("free" if gpu.free_mib is not None else "total") + " memory")
    if post_gib is None:
        w = weights_per_gpu_gib(model, launch)
        if w is None:
            raise ValueError("need the checkpoint's size (safetensors headers) or SGLang's measured free memory")
        post_gib = pre_gib - w
        notes.append(f"weights per GPU from the checkpoint ({model.weights.source if model.weights else '?'})")
    p = size_pools(family, model, launch, mfs, pre_gib, post_gib, gpu, src)
    return replace(p, notes=tuple(notes) + p.notes)


def kv_budget(family: str, mfs: float, pre_gib: float, post_gib: float, multimodal: bool = False) -> tuple[float, str | None]:
    """The pools' budget from a log's two readings alone, and the failure when it is not positive.

    For a log that stops after "Load weight end ... avail mem" (a paste cut short, a hang): no
    model needed to say that post - pre * (1 - mfs) <= 0 fails — with the 0.5.14+ pre-check
    message, or 0.5.10's and older "Not enough memory" (a hybrid model may fail earlier, in its
    mamba state sizing, with the mamba message).
    """
    rest = post_gib - pre_gib * (1 - mfs)
    if at_least(family, "0.5.23") and multimodal:
        rest -= 100 / 1024
    if rest > 0:
        return rest, None
    if at_least(family, "0.5.14"):
        return rest, _weights_exceed(mfs, pre_gib, post_gib)
    return rest, _not_enough_memory(family, mfs)


# --------------------------------------------------------------------------- the inverse


def headroom_gib(family: str, model: ModelInfo, launch: Launch, gpu: Gpu) -> float:
    """GiB the fraction must leave outside the static pools for SGLang's own runtime use.

    The terms of the release's reserve heuristic (0.5.14 server_args.py:3276-3320): 512 MiB
    of constant metadata, 2 MiB per decode CUDA-graph batch size, the prefill-graph reserve,
    plus activations for one chunked prefill counted at 0.5 MiB per token — a third of the
    default's 1.5 MiB/token safety factor, which the seed launch shows to be generous (it
    serves at 0.92 with 1.86 GiB outside the pools where the heuristic asks 3.6 GiB).
    """
    fam = family if at_least(family, "0.5.5") else "0.5.5"
    chunk, max_bs = gpu_class_defaults(fam, gpu.total_mib, launch.tp)
    chunk = launch.chunked_prefill_size or chunk
    if launch.cuda_graph_bs:
        max_bs = max(launch.cuda_graph_bs)
    elif launch.cuda_graph_max_bs:
        max_bs = launch.cuda_graph_max_bs
    mib = 512 + 0.5 * max(chunk, 2048)
    if not launch.disable_cuda_graph:
        mib += 2 * max_bs
    mm = is_multimodal(family, model, launch)
    if _prefill_graph_on(family, model, launch, gpu, mm):
        mib += 1536 if model.use_mla else 8 * 42
    return mib / 1024


def _round_up(x: float, step: float = 0.01) -> float:
    return round(math.ceil(round(x / step, 6)) * step, 3)


def smallest_mem_fraction(family: str, model: ModelInfo, launch: Launch, gpu: Gpu, pre_gib: float,
                          post_gib: float, step: float = 0.01, max_fraction: float | None = None,
                          alternatives: Sequence[ModelInfo] = (), on_grid: bool = False) -> FixPlan:
    """The smallest --mem-fraction-static (on a 0.01 grid) that starts and serves a full-length request.

    ``alternatives``: other sizes (KV bytes per token, state bytes per slot) equally consistent with
    what a log shows; a change must then work with each, and the pool it predicts is the smallest.
    ``on_grid``: the fraction will be printed to the step (two decimals), so the release default used
    as a floor is rounded up to it (0.842 printed as 0.84 would shrink the pool below the cap).

    Order of preference: (1) a fraction whose KV pool holds the whole context; (2) for hybrid
    models whose ratio split starves the pool, ``--max-mamba-cache-size`` set to one
    request's slots with such a fraction; (3) the smallest fraction that starts and serves one
    request — not below the release's default fraction — with ``--context-length`` capped to the
    pool. Never above what leaves
    ``headroom_gib`` outside the pools, or above ``max_fraction`` when given (a log showing the
    launch running at its fraction proves that much headroom enough).
    """
    top = min(0.99, 1 - headroom_gib(family, model, launch, gpu) / pre_gib) if max_fraction is None else max_fraction
    top = math.floor(round(top / step, 6)) * step
    current = launch.mem_fraction_static
    # never below the fraction the launch uses (its flag, or the release's default)
    base = current if current is not None else resolve_mem_fraction(family, model, launch, gpu)[0]
    def worst(lz: Launch, m: float, src: str = "") -> PoolPlan:
        """The plan of the least favourable size: a failure first, then the smallest pool."""
        plans = [size_pools(family, x, lz, m, pre_gib, post_gib, gpu, src) for x in (model, *alternatives)]
        return min(plans, key=lambda p: (p.starts, (p.max_running_requests or 0) >= 1, p.kv_tokens or 0))

    now = worst(launch, base)
    if now.serves_full_context:
        return FixPlan(True, predicted=now, max_fraction=top, reason="the launch starts and serves a full-length request")
    start = _round_up(base + 1e-9)
    grid = [base] + ([round(start + i * step, 3) for i in range(int(round((top - start) / step)) + 1)]
                     if top >= start else [])

    def at(m: float, lz: Launch = launch) -> PoolPlan:
        return worst(replace(lz, mem_fraction_static=m), m, "--mem-fraction-static")

    for m in grid:
        p = at(m)
        if p.serves_full_context:
            return FixPlan(True, mem_fraction_static=_changed(m, base), predicted=p, max_fraction=top,
                           reason=f"at {m}: the launch starts and its KV pool holds the {p.context_len}-token context")
    if model.linear is not None and launch.max_mamba_cache_size is None:
        n = mamba_ratio(family, model, launch)  # one request's worth of state slots
        fixed = replace(launch, max_mamba_cache_size=n)
        for m in grid:
            p = at(m, fixed)
            if p.serves_full_context:
                return FixPlan(True, mem_fraction_static=_changed(m, base), max_mamba_cache_size=n, predicted=p,
                               max_fraction=top,
                               reason=f"at {m} with --max-mamba-cache-size {n}: one request's state slots, the rest "
                                      f"to a KV pool holding the {p.context_len}-token context")
    # No fraction holds the whole context: cap it to the pool of the smallest fraction that starts and
    # serves a request, but not below the release's default (a low fraction of the user's would cap
    # the context to a sliver of what SGLang's own choice gives).
    default = resolve_mem_fraction(family, model, replace(launch, mem_fraction_static=None), gpu)[0]
    floor = max(base, min(_round_up(default, step) if on_grid else default, top))
    for m in [floor] + [x for x in grid if x > floor + 1e-9]:
        p = at(m)
        if p.starts and (p.max_running_requests or 0) >= 1 and (p.kv_tokens or 0) > 0:
            cap = _context_cap(p.kv_tokens or 0)
            capped = replace(launch, mem_fraction_static=m, context_length=cap)
            q = worst(capped, m, "--mem-fraction-static")
            if q.serves_full_context:
                return FixPlan(True, mem_fraction_static=_changed(m, base), context_length=cap, predicted=q,
                               max_fraction=top,
                               reason=f"at {m}: KV pool {p.kv_tokens} tokens < context {p.context_len}: "
                                      f"also cap --context-length to {cap}")
    return FixPlan(False, predicted=now, max_fraction=top,
                   reason=f"no --mem-fraction-static up to {top:.2f} (leaving {pre_gib * (1 - top):.2f}"
                          " GB for activations and CUDA graphs) starts and serves a request on this GPU: "
                          "more GPU memory, a higher --tp-size, or a smaller (quantized) checkpoint is needed")


def _changed(m: float, base: float) -> float | None:
    """The new fraction, or None when it is the one the launch already uses."""
    return None if abs(m - base) < 1e-9 else m


def _context_cap(tokens: int) -> int:
    """The largest multiple of 1024 the pool holds (the pool itself below 1024 tokens)."""
    return tokens // 1024 * 1024 if tokens >= 1024 else tokens


plan = smallest_mem_fraction
