"""Server arguments -> the memory model's ``Launch``: one reading for preflight and for diagnosis.

A launch command's flags (``{"--tp-size": "2"}``), ServerArgs fields as a log prints them
(``{"tp_size": 2}``) or the ``server_args.*`` facts of a log all name the same settings; this
module maps them onto ``memory_model.Launch`` (SGLang's defaults for what is absent).

Public API::

    launch_from_flags(flags, env=None) -> Launch
    MEMORY_ENV                      # environment variables the memory arithmetic reads
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sglang_doctor.fix import memory_model as mm

__all__ = ["MEMORY_ENV", "launch_from_flags"]

# Launch field <- the server-arg names that set it (flag spelling without "--", "-" as "_").
_INT = {
    "tp": ("tp_size", "tp", "tensor_parallel_size"), "pp": ("pp_size", "pp", "pipeline_parallel_size"),
    "dp": ("dp_size", "dp", "data_parallel_size"), "ep": ("ep_size", "ep", "expert_parallel_size"),
    "max_total_tokens": ("max_total_tokens",),
    "context_length": ("context_length",), "page_size": ("page_size",),
    "max_running_requests": ("max_running_requests",), "chunked_prefill_size": ("chunked_prefill_size",),
    "max_prefill_tokens": ("max_prefill_tokens",),
    "cuda_graph_max_bs": ("cuda_graph_max_bs_decode", "cuda_graph_max_bs"),
    "max_mamba_cache_size": ("max_mamba_cache_size",),
    "speculative_num_draft_tokens": ("speculative_num_draft_tokens",),
    "speculative_num_steps": ("speculative_num_steps",), "speculative_eagle_topk": ("speculative_eagle_topk",),
}
_FLOAT = {"mem_fraction_static": ("mem_fraction_static", "mem_frac"),
          "mamba_full_memory_ratio": ("mamba_full_memory_ratio",),
          "swa_full_tokens_ratio": ("swa_full_tokens_ratio",)}
_STR = {"kv_cache_dtype": ("kv_cache_dtype",), "dtype": ("dtype",), "quantization": ("quantization",),
        "mamba_ssm_dtype": ("mamba_ssm_dtype",),
        "mamba_strategy": ("mamba_radix_cache_strategy", "mamba_scheduler_strategy"),
        "speculative_algorithm": ("speculative_algorithm",), "disaggregation_mode": ("disaggregation_mode",),
        "attention_backend": ("attention_backend",), "moe_a2a_backend": ("moe_a2a_backend",),
        "model_path": ("model_path", "model")}
_BOOL = {"enable_dp_attention": ("enable_dp_attention",), "disable_cuda_graph": ("disable_cuda_graph",),
         "disable_prefill_graph": ("disable_piecewise_cuda_graph",),
         "enable_torch_compile": ("enable_torch_compile",), "disable_radix_cache": ("disable_radix_cache",),
         "disable_overlap_schedule": ("disable_overlap_schedule",), "enable_lora": ("enable_lora",),
         "language_only": ("language_only",), "enable_hierarchical_cache": ("enable_hierarchical_cache",),
         "disable_hybrid_swa_memory": ("disable_hybrid_swa_memory",)}
MEMORY_ENV = ("SGLANG_MAMBA_SSM_DTYPE", "SGLANG_MAMBA_CONV_DTYPE", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")


def _key(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def _truthy(v: Any) -> bool:
    return v is None or v is True or str(v).lower() in ("1", "true", "yes", "on")


def _number(v: Any) -> float | None:
    """A number from a flag or a logged field; None for a value that is not one ("auto", a list)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def launch_from_flags(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> mm.Launch:
    """A Launch from server args: ``{"--tp-size": "2"}``, ``{"tp_size": 2}`` or a ServerArgs dict.

    A boolean flag maps to None (present, no value) or a truthy value.
    """
    args = {_key(k): v for k, v in flags.items()}
    out: dict[str, Any] = {}

    def pick(names: tuple[str, ...]) -> Any:
        for n in names:
            if n in args and args[n] is not None and args[n] != "None":
                return args[n]
        return None

    for fld, names in _INT.items():
        n = _number(pick(names))
        if n is not None:
            out[fld] = int(n)
    for fld, names in _FLOAT.items():
        n = _number(pick(names))
        if n is not None:
            out[fld] = n
    for fld, names in _STR.items():
        v = pick(names)
        if v is not None:
            out[fld] = str(v)
    for fld, names in _BOOL.items():
        present = [n for n in names if n in args]
        if present:
            out[fld] = _truthy(args[present[0]]) if args[present[0]] is not None else True
    bs = pick(("cuda_graph_bs_decode", "cuda_graph_bs"))
    if bs is not None:
        vals = bs if isinstance(bs, (list, tuple)) else str(bs).strip("[]()").replace(",", " ").split()
        sizes = [_number(x) for x in vals]
        if sizes and all(x is not None for x in sizes):
            out["cuda_graph_bs"] = tuple(int(x) for x in sizes)  # type: ignore[arg-type]
    prefill = pick(("cuda_graph_backend_prefill",))
    if prefill is not None and str(prefill).lower() == "disabled":
        out["disable_prefill_graph"] = True
    if pick(("lora_paths",)) is not None:
        out["enable_lora"] = True
    if "enable_multimodal" in args:
        out["enable_multimodal"] = _truthy(args["enable_multimodal"])
    if "enable_deepep_moe" in args and _truthy(args["enable_deepep_moe"]):
        out["moe_a2a_backend"] = "deepep"  # the 0.4.x spelling
    out["env"] = dict(env or {})
    return mm.Launch(**out)
