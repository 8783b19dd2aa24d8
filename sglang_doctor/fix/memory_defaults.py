"""SGLang's default ``--mem-fraction-static`` per release family (used only when the flag is absent).

Every rule is read from the named release's ``sglang/srt/server_args.py`` (0.5.23:
``arg_groups/memory_hook.py``); file:line in the comments. GPU memory is what SGLang's
``get_device_memory_capacity`` returns: nvidia-smi ``memory.total`` in MiB, the minimum
over the visible GPUs.

Public API::

    default_mem_fraction(family, gpu_mib, knobs) -> Defaults
    gpu_class_defaults(family, gpu_mib, tp) -> tuple[int, int]   # chunked_prefill_size, decode max_bs
    prefill_graph_sizes(max_tokens) -> list[int]
    vlm_factor(vision_layers, vision_hidden) -> float
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "FAMILIES",
    "Defaults",
    "Knobs",
    "at_least",
    "default_mem_fraction",
    "gpu_class_defaults",
    "prefill_graph_sizes",
    "vlm_factor",
]

GIB_MIB = 1024

# The releases read, oldest first; a family is named by the release its rules were read from.
FAMILIES: tuple[str, ...] = ("0.4.4", "0.4.5", "0.4.6", "0.4.10", "0.5.5", "0.5.10", "0.5.14", "0.5.23")


_ORDER = {f: i for i, f in enumerate(FAMILIES)}  # (at_least runs thousands of times a plan)


def at_least(family: str, release: str) -> bool:
    """Whether ``family`` is ``release``'s family or a later one (string compare is wrong: 0.5.10 < 0.5.5)."""
    if family in _ORDER and release in _ORDER:
        return _ORDER[family] >= _ORDER[release]
    return FAMILIES.index(family) >= FAMILIES.index(release)  # (an unknown name: its ValueError)


@dataclass(frozen=True)
class Knobs:
    """The launch settings the default rules read (already resolved from flags)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    enable_dp_attention: bool = False
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int = 16384
    cuda_graph_max_bs: int | None = None
    cuda_graph_bs: tuple[int, ...] | None = None
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    context_length: int | None = None
    speculative_algorithm: str | None = None
    prefill_graph: bool = True  # piecewise/breakable prefill CUDA graph left enabled by the rules
    decode_graph: bool = True
    use_mla: bool = False
    multimodal: bool = False
    vision_layers: int | None = None
    vision_hidden: int | None = None
    model_path: str = ""
    deepep: bool = False


@dataclass(frozen=True)
class Defaults:
    """The memory settings SGLang picks for a GPU and launch when the command leaves them out."""

    mem_fraction_static: float
    chunked_prefill_size: int
    cuda_graph_max_bs: int | None
    reserved_mib: float | None  # None for the 0.4.6 table rule
    rule: str  # one line saying which rule produced the value


def vlm_factor(vision_layers: int | None, vision_hidden: int | None) -> float:
    """adjust_mem_fraction_for_vlm (0.4.10 server_args.py:2040-2080, 0.5.14 :6997-7040).

    0.95 x clamp(1 - 0.1 x (layers x hidden^2 / (24 x 1024^2) - 1), 0.8, 1.05); SGLang reads
    vision_config.num_hidden_layers (default 24) and .hidden_size (default 1024).
    """
    layers = vision_layers or 24
    hidden = vision_hidden or 1024
    ratio = layers * hidden**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def prefill_graph_sizes(max_tokens: int) -> list[int]:
    """Prefill (piecewise) CUDA-graph capture sizes up to max_tokens (0.5.14 server_args.py:3384-3401)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256))
             + list(range(4608, max_tokens + 1, 512)))
    return [s for s in sizes if s <= max_tokens]


def gpu_class_defaults(family: str, gpu_mib: float | None, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode cuda_graph_max_bs) by GPU class, 0.5.x.

    0.5.5 server_args.py:689-772, 0.5.10 :1165-1215, 0.5.14 :3144-3190 (the same table);
    0.5.23 memory_hook.py:85-160 raises the 20-35 GiB class to 4096 / 48 (tp<4) / 160.
    """
    if gpu_mib is None:
        return 4096, 160
    small = tp < 4
    if gpu_mib < 20 * GIB_MIB:
        return 2048, 8
    if gpu_mib < 35 * GIB_MIB:
        if at_least(family, "0.5.23"):
            return 4096, 48 if small else 160
        return 2048, 24 if small else 80
    if gpu_mib < 60 * GIB_MIB:
        return 4096, 32 if small else 160
    if gpu_mib < 160 * GIB_MIB:  # the <90 and <160 classes share the numbers
        return 8192, 256 if small else 512
    return 16384, 512


def _fraction_046(family: str, gpu_mib: float | None, k: Knobs) -> Defaults:
    if not at_least(family, "0.4.6"):
        # 0.4.4.post3 server_args.py:219-229, 0.4.5 :233-243: a table by tp size alone, any GPU
        par = k.tp
        m = 0.79 if par >= 16 else 0.81 if par >= 8 else 0.85 if par >= 4 else 0.87 if par >= 2 else 0.88
    else:
        # 0.4.6 server_args.py:247-269: by tp*pp for cards up to 80 GiB, more on cards over 96 GiB
        par = k.tp * k.pp
        if gpu_mib is not None and gpu_mib <= 81920:
            m = 0.79 if par >= 16 else 0.81 if par >= 8 else 0.85 if par >= 4 else 0.87 if par >= 2 else 0.88
        else:
            m = 0.88
        if gpu_mib is not None and gpu_mib > 96 * 1024:
            m = min(m + 48 * 1024 * (1 - m) / gpu_mib, (gpu_mib - 1024 * 18) / gpu_mib)
    chunk = k.chunked_prefill_size or (2048 if gpu_mib is not None and gpu_mib < 25_000 else 8192)
    return Defaults(m, chunk, k.cuda_graph_max_bs, None, f"{family} table for tp size {par}")


def _fraction_0410(gpu_mib: float | None, k: Knobs) -> Defaults:
    # 0.4.10 server_args.py:310-358: reserved MiB by GPU class.
    chunk = k.chunked_prefill_size or (
        4096 if gpu_mib is None else 2048 if gpu_mib < 35 * 1024 else 8192 if gpu_mib < 160 * 1024 else 16384)
    if gpu_mib is None:
        return Defaults(0.88, chunk, k.cuda_graph_max_bs, None, "0.4.10 fallback without GPU memory")
    par = k.tp * k.pp
    if gpu_mib < 35 * 1024:
        reserved = (2.8 + par / 10) * 1024
    elif gpu_mib < 90 * 1024:
        reserved = (9.5 + par / 2) * 1024
    elif gpu_mib < 160 * 1024:
        reserved = (12 + par / 2) * 1024
    else:
        reserved = 32 * 1024
    if k.speculative_algorithm:
        reserved += 2 * 1024
    if k.enable_dp_attention:
        reserved += 4 * 1024
    m = round((gpu_mib - reserved) / gpu_mib, 3)
    if k.multimodal:
        m = m * vlm_factor(k.vision_layers, k.vision_hidden)
    return Defaults(m, chunk, k.cuda_graph_max_bs, reserved, f"0.4.10 reserve {reserved:.0f} MiB")


def _decode_max_bs(family: str, gpu_mib: float | None, k: Knobs) -> tuple[int, int]:
    chunk, max_bs = gpu_class_defaults(family, gpu_mib, k.tp)
    if k.chunked_prefill_size is not None:
        chunk = k.chunked_prefill_size
    if k.cuda_graph_bs:
        max_bs = max(k.cuda_graph_bs)
    elif k.cuda_graph_max_bs is not None:
        max_bs = k.cuda_graph_max_bs
    elif at_least(family, "0.5.23") and k.max_running_requests is not None:
        # 0.5.23 memory_hook.py:162-168: a default decode max_bs is capped at --max-running-requests
        max_bs = min(max_bs, k.max_running_requests)
    return chunk, max_bs


def _prefill_graph_mib(family: str, chunk: int, k: Knobs) -> float:
    """Prefill-graph reserve: 8 MiB per capture size, 1.5 GiB for MLA models.

    0.5.10 server_args.py:1305-1311 (piecewise), 0.5.14 :3300-3306, 0.5.23 memory_hook.py:357-399.
    """
    if not at_least(family, "0.5.10") or not k.prefill_graph:
        return 0.0
    if k.use_mla:
        return 1.5 * 1024
    max_tokens = chunk
    if k.max_total_tokens is not None:
        max_tokens = min(max_tokens, k.max_total_tokens)
    if "llama-2" in k.model_path.lower():
        max_tokens = min(max_tokens, 4096)
    if family == "0.5.14" and k.context_length is not None:  # 0.5.14 :3271-3274 only
        max_tokens = min(max_tokens, k.context_length)
    return 8.0 * len(prefill_graph_sizes(max_tokens))


def _fraction_05(family: str, gpu_mib: float | None, k: Knobs) -> Defaults:
    chunk, max_bs = _decode_max_bs(family, gpu_mib, k)
    activation = max(chunk if chunk > 0 else k.max_prefill_tokens, 2048)
    reserved = 512 + activation * 1.5 + k.tp * k.pp / 8 * 1024
    graph = 0.0
    if not at_least(family, "0.5.23") or k.decode_graph:  # 0.5.23 skips it with the decode graph off
        graph += max_bs * 2
    if k.enable_dp_attention:
        graph += max_bs * k.dp * 3 + (max_bs * k.dp * 1.5 if max_bs > 300 else 0)
    graph += _prefill_graph_mib(family, chunk, k)
    reserved += graph
    if gpu_mib is not None and gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    spec = (k.speculative_algorithm or "").upper()
    if family in ("0.5.5", "0.5.10") and spec and spec != "NGRAM":
        # 0.5.5 :811-817 (2 GiB), 0.5.10 :1313-1318 (4 GiB); STANDALONE 6 GiB in both
        reserved += 6 * 1024 if spec == "STANDALONE" else (2 if family == "0.5.5" else 4) * 1024
    if at_least(family, "0.5.23") and k.deepep and k.decode_graph:
        reserved += 2 * 1024  # reserve_for_deepep_a2a_mb
    if gpu_mib is None:
        m = 0.95 if at_least(family, "0.5.23") else 0.88
    else:
        m = round((gpu_mib - reserved) / gpu_mib, 3)
    if k.multimodal:
        m = m * vlm_factor(k.vision_layers, k.vision_hidden)
    return Defaults(m, chunk, max_bs, reserved,
                    f"{family} reserve {reserved:.0f} MiB (chunk {chunk}, decode graph bs {max_bs})")


def default_mem_fraction(family: str, gpu_mib: float | None, knobs: Knobs) -> Defaults:
    """The fraction SGLang picks when ``--mem-fraction-static`` is absent."""
    if not at_least(family, "0.4.10"):
        return _fraction_046(family, gpu_mib, knobs)
    if not at_least(family, "0.5.5"):
        return _fraction_0410(gpu_mib, knobs)
    return _fraction_05(family, gpu_mib, knobs)
