"""Read what SGLang's memory arithmetic needs from a Hugging Face model directory.

Only two kinds of files are read: ``config.json`` and the *headers* of ``*.safetensors``
files (an 8-byte little-endian length followed by that many bytes of JSON naming each
tensor's dtype, shape and data offsets). Weight data is never read, so a 60-shard
checkpoint costs 60 small reads.

Public API::

    read_model_dir(path) -> ModelInfo
    parse_config(config: dict, name="") -> ModelInfo          # config.json only, no weights
    read_safetensors_header(path) -> dict[str, TensorInfo]
    checkpoint_weights(path) -> WeightInfo | None
    find_in_hf_cache(model_id, env=None) -> Path | None
    resolve_model_dir(model_path, env=None) -> Path | None

Field names follow SGLang's ``ModelConfig`` (``configs/model_config.py``); file:line
references are to the 0.5.14 wheel unless stated.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sglang_doctor.launch.param_count import estimate_checkpoint_bytes, estimate_vision_bytes

__all__ = [
    "LinearState",
    "ModelInfo",
    "TensorInfo",
    "WeightInfo",
    "checkpoint_weights",
    "find_in_hf_cache",
    "parse_config",
    "read_model_dir",
    "read_safetensors_header",
    "resolve_model_dir",
]

# Bytes per element of the safetensors dtypes (the format's own names).
_DTYPE_BYTES: dict[str, float] = {
    "F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2,
    "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1,
    "F8_E8M0": 1, "F8_E4M3FN": 1, "F4": 0.5, "F4_E2M1": 0.5,
}
_FLOAT_DTYPES = {"F64", "F32", "F16", "BF16"}

# A header larger than this is not a safetensors header (the format caps it at 100 MB).
_MAX_HEADER = 100_000_000

# Architectures SGLang runs with multi-head latent attention
# (configs/model_config.py:725-744 in 0.5.14): their KV cell is kv_lora_rank + rope dim.
MLA_ARCHS = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
    "DeepseekV3ForCausalLMNextN", "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM",
    "LongcatFlashForCausalLM", "DotsVLMForCausalLM", "MistralLarge3ForCausalLM",
    "KimiK25ForConditionalGeneration", "MiniCPM3ForCausalLM", "KimiVLForConditionalGeneration",
    "DeepseekVL2ForCausalLM",
})

# Keys SGLang reads the context length from, in order (utils/hf_transformers/common.py:369-395).
_CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                 "max_position_embeddings")


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors header: dtype, shape, size in bytes."""

    dtype: str
    shape: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class WeightInfo:
    """Checkpoint bytes by part, as stored (dtype conversion is applied by the memory model)."""

    total_bytes: int
    # float tensors stored wider than 16 bits (F32/F64) — SGLang loads them in the model dtype
    wide_float_bytes: int = 0
    mtp_bytes: int = 0  # multi-token-prediction / nextn layers, loaded only for speculative decoding
    vision_bytes: int = 0  # vision / audio towers of multimodal checkpoints
    files: int = 0
    source: str = "safetensors headers"


@dataclass(frozen=True)
class LinearState:
    """Shape of one linear-attention (mamba2 / gated-delta-net) layer's recurrent state.

    Expressed in SGLang's ``Mamba2StateShape.create`` terms (configs/mamba_utils.py:142-176):
    GDN maps ``intermediate = linear_value_head_dim * linear_num_value_heads``,
    ``n_groups = linear_num_key_heads``, ``num_heads = linear_num_value_heads``,
    ``head_dim = linear_value_head_dim``, ``state_size = linear_key_head_dim``
    (configs/qwen3_next.py:287-306).
    """

    kind: str  # "gdn" | "mamba2"
    layers: int  # number of linear-attention layers
    intermediate_size: int
    n_groups: int
    num_heads: int
    head_dim: int
    state_size: int
    conv_kernel: int
    ssm_dtype: str | None = None  # config's mamba_ssm_dtype, when it states one


@dataclass(frozen=True)
class ModelInfo:
    """The facts about one model that SGLang's memory arithmetic reads."""

    name: str
    architectures: tuple[str, ...]
    model_type: str
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    hidden_size: int
    context_len: int  # SGLang's derived context length
    torch_dtype: str = "bfloat16"
    vocab_size: int = 0
    intermediate_size: int = 0
    moe_intermediate_size: int = 0
    num_experts: int = 0
    # MLA (DeepSeek-style)
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    index_head_dim: int | None = None  # DSA indexer (DeepSeek V3.2)
    # hybrid models: number of full-attention layers (the only ones with a KV cache)
    full_attention_layers: int | None = None
    linear: LinearState | None = None
    # sliding-window hybrids: layers using the window (SGLang gives them their own pool)
    swa_layers: int = 0
    sliding_window: int | None = None
    mtp_layers: int = 0  # nextn / MTP layers in the checkpoint
    # quantization
    quant_method: str | None = None
    quant_bits: int | None = None
    quant_fp8_activations: bool = False  # compressed-tensors W8A8-FP8 scheme
    weight_block_size: tuple[int, int] | None = None
    kv_cache_quant_algo: str | None = None
    # multimodal
    vision_config: bool = False
    vision_layers: int | None = None
    vision_hidden: int | None = None
    weights: WeightInfo | None = None
    notes: tuple[str, ...] = field(default=())
    # Sizes a launch log measured (its KV and mamba pool lines): when set, the memory model uses
    # them instead of the arithmetic over the shapes above (a model known only from its log).
    kv_cell_bytes: int | None = None  # KV bytes per token on one GPU
    mamba_state_bytes: int | None = None  # hybrid state bytes per slot on one GPU

    @property
    def use_mla(self) -> bool:
        return self.kv_lora_rank is not None and self.qk_rope_head_dim is not None

    @property
    def is_hybrid_linear(self) -> bool:
        return self.linear is not None

    @property
    def kv_layers(self) -> int:
        """Layers holding a KV cache (full-attention ones for hybrids)."""
        return self.full_attention_layers if self.full_attention_layers is not None else self.num_layers


# --------------------------------------------------------------------------- config.json


# Defaults of transformers' config classes for keys that official config.json files leave out
# (google/gemma-3-4b-it names only five text keys): Gemma3TextConfig's own defaults.
_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208,
                    "max_position_embeddings": 131072, "tie_word_embeddings": True},
}


def _text_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's section of a (possibly multimodal) config, with class defaults filled in."""
    text: Mapping[str, Any] = cfg
    for key in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(key)
        if isinstance(sub, Mapping) and ("num_hidden_layers" in sub or "num_attention_heads" in sub):
            text = sub
            break
    else:
        thinker = cfg.get("thinker_config")  # Qwen-Omni
        if isinstance(thinker, Mapping) and isinstance(thinker.get("text_config"), Mapping):
            text = thinker["text_config"]
    defaults = _TYPE_DEFAULTS.get(str(text.get("model_type")))
    return {**defaults, **{k: v for k, v in text.items() if v is not None}} if defaults else text


def _first(d: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        v = d.get(k)
        if v is not None:
            return v
    return default


def _context_len(text: Mapping[str, Any]) -> int:
    """SGLang's get_context_length: first key present, times a rope factor unless yarn-style."""
    rope = _first(text, "rope_scaling", "rope_parameters") or {}
    factor = 1.0
    if isinstance(rope, Mapping) and rope:
        factor = rope.get("factor", 1) or 1
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    for key in _CONTEXT_KEYS:
        v = text.get(key)
        if v is not None:
            return int(factor * v)
    return 2048


def _layer_kinds(text: Mapping[str, Any], n_layers: int) -> list[str] | None:
    """Per-layer kinds of a hybrid model: 'full', 'linear', 'swa' (None for uniform models)."""
    types = text.get("layer_types")
    pattern = text.get("hybrid_override_pattern")  # NemotronH: M = mamba, * = attention, - = MLP
    interval = text.get("full_attention_interval")
    if isinstance(pattern, str) and pattern:
        return ["linear" if c == "M" else "full" if c == "*" else "mlp" for c in pattern]
    if text.get("linear_num_value_heads") and interval:
        # Qwen3-Next/3.5: SGLang derives the layout from the interval alone
        # (configs/qwen3_next.py:258-268), not from layer_types.
        return ["full" if (i + 1) % int(interval) == 0 else "linear" for i in range(n_layers)]
    if isinstance(types, list) and types:
        kinds = []
        for t in types[:n_layers]:
            t = str(t)
            kinds.append("linear" if ("linear" in t or "mamba" in t) else
                         "swa" if ("sliding" in t or "local" in t) else "full")
        return kinds
    return None


def _linear_state(text: Mapping[str, Any], n_linear: int) -> LinearState | None:
    if text.get("linear_num_value_heads"):  # Qwen3-Next / Qwen3.5 / Qwen3.6 gated delta net
        nv, dv = int(text["linear_num_value_heads"]), int(text["linear_value_head_dim"])
        return LinearState(
            kind="gdn", layers=n_linear, intermediate_size=nv * dv,
            n_groups=int(text["linear_num_key_heads"]), num_heads=nv, head_dim=dv,
            state_size=int(text["linear_key_head_dim"]),
            conv_kernel=int(text.get("linear_conv_kernel_dim", 4)),
            ssm_dtype=text.get("mamba_ssm_dtype"),
        )
    if text.get("mamba_num_heads") or text.get("mamba_n_heads"):  # NemotronH / FalconH1 (mamba2)
        heads = int(_first(text, "mamba_num_heads", "mamba_n_heads"))
        hd = int(_first(text, "mamba_head_dim", "mamba_d_head"))
        return LinearState(
            kind="mamba2", layers=n_linear,
            intermediate_size=heads * hd,
            n_groups=int(_first(text, "n_groups", "mamba_n_groups", default=1)), num_heads=heads,
            head_dim=hd, state_size=int(_first(text, "ssm_state_size", "mamba_d_state", default=128)),
            conv_kernel=int(_first(text, "conv_kernel", "mamba_d_conv", default=4)),
            ssm_dtype=text.get("mamba_ssm_dtype"),
        )
    return None


def _quant(cfg: Mapping[str, Any], text: Mapping[str, Any]) -> dict[str, Any]:
    q = _first(cfg, "quantization_config", "compression_config") or _first(text, "quantization_config") or {}
    if not isinstance(q, Mapping):
        return {}
    method = str(q.get("quant_method") or q.get("quant_algo") or "").lower() or None
    out: dict[str, Any] = {"quant_method": method}
    bits = q.get("bits") or q.get("w_bit")
    act_fp8 = False
    groups = q.get("config_groups")
    if isinstance(groups, Mapping):  # compressed-tensors: one scheme per group
        for g in groups.values():
            w = (g or {}).get("weights") or {}
            a = (g or {}).get("input_activations") or {}
            bits = bits or w.get("num_bits")
            if w.get("type") == "float" and w.get("num_bits") == 8 and a and a.get("type") == "float":
                act_fp8 = True
    out["quant_bits"] = int(bits) if bits else None
    out["group_size"] = q.get("group_size") or q.get("q_group_size")
    if isinstance(groups, Mapping):
        for g in groups.values():
            gs = ((g or {}).get("weights") or {}).get("group_size")
            out["group_size"] = out["group_size"] or gs
    out["quant_fp8_activations"] = act_fp8
    wbs = q.get("weight_block_size")
    if isinstance(wbs, list) and len(wbs) == 2:
        out["weight_block_size"] = (int(wbs[0]), int(wbs[1]))
    kv = q.get("kv_cache_quant_algo")
    if kv is None and isinstance(q.get("quantization"), Mapping):  # modelopt hf_quant_config layout
        kv = q["quantization"].get("kv_cache_quant_algo")
    out["kv_cache_quant_algo"] = kv
    return out


def parse_config(cfg: Mapping[str, Any], name: str = "") -> ModelInfo:
    """Build a ModelInfo from the content of ``config.json`` (no weights)."""
    text = _text_config(cfg)
    archs = tuple(cfg.get("architectures") or text.get("architectures") or ())
    n_layers = int(_first(text, "num_hidden_layers", "n_layer", "num_layers", default=0))
    heads = int(_first(text, "num_attention_heads", "n_head", default=0) or 0)
    hidden = int(_first(text, "hidden_size", "d_model", "n_embd", default=0) or 0)
    # configs/model_config.py get_total_num_kv_heads: these keys, else all heads
    kv = _first(text, "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num")
    if text.get("multi_query") and not text.get("new_decoder_architecture"):
        kv = 1
    head_dim = _first(text, "head_dim") or (hidden // heads if heads else 0)
    notes: list[str] = []
    kv_lora = text.get("kv_lora_rank")
    mla = kv_lora is not None and (bool(set(archs) & MLA_ARCHS) or text.get("qk_rope_head_dim") is not None)
    kinds = _layer_kinds(text, n_layers)
    full = linear = swa = None
    if kinds is not None:
        full = sum(k == "full" for k in kinds)
        linear = sum(k == "linear" for k in kinds)
        swa = sum(k == "swa" for k in kinds)
    linear_state = _linear_state(text, linear or 0) if linear else None
    vision = cfg.get("vision_config") if isinstance(cfg.get("vision_config"), Mapping) else None
    vl = vh = None
    if vision is not None:  # SGLang's VLM factor reads exactly these two keys
        vl = vision.get("num_hidden_layers")
        vh = vision.get("hidden_size")
    mtp = int(_first(text, "num_nextn_predict_layers", "mtp_num_hidden_layers", default=0) or 0)
    dtype = str(_first(text, "torch_dtype", "dtype") or _first(cfg, "torch_dtype", "dtype") or "bfloat16")
    q = _quant(cfg, text)
    est, est_mtp = estimate_checkpoint_bytes(text, q)
    est_vision = estimate_vision_bytes(vision) if vision is not None else 0
    return ModelInfo(
        name=name,
        architectures=archs,
        model_type=str(cfg.get("model_type") or text.get("model_type") or ""),
        num_layers=n_layers,
        num_heads=heads,
        num_kv_heads=int(kv) if kv is not None else heads,
        head_dim=int(head_dim),
        v_head_dim=int(_first(text, "v_head_dim", default=head_dim) or 0),
        hidden_size=hidden,
        context_len=_context_len(text),
        torch_dtype=dtype.replace("torch.", ""),
        vocab_size=int(text.get("vocab_size") or cfg.get("vocab_size") or 0),
        intermediate_size=int(_first(text, "intermediate_size", "ffn_hidden_size", default=0) or 0),
        moe_intermediate_size=int(_first(text, "moe_intermediate_size", default=0) or 0),
        num_experts=int(_first(text, "num_experts", "n_routed_experts", "num_local_experts", default=0) or 0),
        kv_lora_rank=int(kv_lora) if mla else None,
        qk_rope_head_dim=int(text["qk_rope_head_dim"]) if mla and text.get("qk_rope_head_dim") else None,
        index_head_dim=int(text["index_head_dim"]) if mla and text.get("index_head_dim") else None,
        full_attention_layers=full if linear else None,
        linear=linear_state,
        swa_layers=swa or 0,
        sliding_window=text.get("sliding_window"),
        mtp_layers=mtp,
        quant_method=q.get("quant_method"),
        quant_bits=q.get("quant_bits"),
        quant_fp8_activations=bool(q.get("quant_fp8_activations")),
        weight_block_size=q.get("weight_block_size"),
        kv_cache_quant_algo=q.get("kv_cache_quant_algo"),
        vision_config=vision is not None,
        vision_layers=int(vl) if vl else None,
        vision_hidden=int(vh) if vh else None,
        weights=WeightInfo(total_bytes=est + est_vision, mtp_bytes=est_mtp, vision_bytes=est_vision,
                           source="estimated from config.json's parameter count"),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------- safetensors


def read_safetensors_header(path: str | os.PathLike[str]) -> dict[str, TensorInfo]:
    """Tensor name -> TensorInfo from a safetensors file's header; the data is not read."""
    import json  # (a model directory on disk only)

    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"{path}: shorter than a safetensors header")
        (n,) = struct.unpack("<Q", head)
        if n <= 0 or n > _MAX_HEADER:
            raise ValueError(f"{path}: header length {n} is not a safetensors header")
        raw = f.read(n)
    if len(raw) != n:
        raise ValueError(f"{path}: header truncated ({len(raw)} of {n} bytes)")
    meta = json.loads(raw)
    out: dict[str, TensorInfo] = {}
    for name, t in meta.items():
        if name == "__metadata__" or not isinstance(t, Mapping):
            continue
        start, end = t["data_offsets"]
        out[name] = TensorInfo(str(t["dtype"]), tuple(int(x) for x in t["shape"]), int(end) - int(start))
    return out


_MTP_RE = re.compile(r"(^|\.)(mtp|nextn|eh_proj|enorm|hnorm|shared_head)(\.|$)")
_VISION_RE = re.compile(r"(^|\.)(visual|vision_tower|vision_model|vision_encoder|audio_tower|"
                        r"multi_modal_projector|mm_projector|vpm|image_newline)(\.|$)")
_LAYER_RE = re.compile(r"\.layers\.(\d+)\.")


def checkpoint_weights(path: str | os.PathLike[str], num_layers: int | None = None) -> WeightInfo | None:
    """Sum the tensor bytes of every ``*.safetensors`` file in a directory (headers only).

    Layers numbered ``>= num_layers`` (DeepSeek's nextn layer is ``model.layers.61``)
    count as MTP. Falls back to ``model.safetensors.index.json``'s ``total_size`` when
    the shards are absent (a cache holding only the index).
    """
    import json  # (a model directory on disk only)

    d = Path(path)
    shards = sorted(d.glob("*.safetensors"))
    if not shards:
        index = d / "model.safetensors.index.json"
        if index.is_file():
            try:
                total = int(json.loads(index.read_text())["metadata"]["total_size"])
            except (KeyError, ValueError, TypeError):
                return None
            return WeightInfo(total_bytes=total, files=0, source="model.safetensors.index.json total_size")
        return None
    total = wide = mtp = vision = 0
    for shard in shards:
        for name, t in read_safetensors_header(shard).items():
            total += t.nbytes
            if t.dtype in ("F32", "F64"):
                wide += t.nbytes
            m = _LAYER_RE.search(name)
            if _MTP_RE.search(name) or (num_layers and m and int(m.group(1)) >= num_layers):
                mtp += t.nbytes
            elif _VISION_RE.search(name):
                vision += t.nbytes
    return WeightInfo(total_bytes=total, wide_float_bytes=wide, mtp_bytes=mtp, vision_bytes=vision,
                      files=len(shards))


def read_model_dir(path: str | os.PathLike[str]) -> ModelInfo:
    """config.json + safetensors headers of a local model directory."""
    import json  # (a model directory on disk only)

    d = Path(path)
    cfg_path = d / "config.json"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"no config.json in {d}")
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{cfg_path}: not JSON ({e})") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{cfg_path}: not a JSON object")
    try:
        info = parse_config(cfg, name=d.name)
    except (TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"{cfg_path}: not a model config this tool can read ({e})") from None
    hf_quant = d / "hf_quant_config.json"  # ModelOpt checkpoints keep their quant config here
    if info.quant_method is None and hf_quant.is_file():
        q = json.loads(hf_quant.read_text()).get("quantization") or {}
        info = replace(info, quant_method=("modelopt_fp4" if "FP4" in str(q.get("quant_algo")) else "modelopt"),
                       kv_cache_quant_algo=q.get("kv_cache_quant_algo"))
    return replace(info, weights=checkpoint_weights(d, info.num_layers) or info.weights)


# --------------------------------------------------------------------------- HF cache


def _hub_dirs(env: Mapping[str, str]) -> list[Path]:
    dirs = []
    if env.get("HF_HUB_CACHE"):
        dirs.append(Path(env["HF_HUB_CACHE"]))
    if env.get("HF_HOME"):
        dirs.append(Path(env["HF_HOME"]) / "hub")
    home = env.get("HOME") or str(Path.home())
    dirs.append(Path(env.get("XDG_CACHE_HOME") or Path(home) / ".cache") / "huggingface" / "hub")
    return dirs


def find_in_hf_cache(model_id: str, env: Mapping[str, str] | None = None,
                     revision: str = "main") -> Path | None:
    """The snapshot directory of ``org/name`` in the local Hugging Face cache, if any.

    Layout: ``<hub>/models--org--name/snapshots/<commit>/``, with ``refs/<revision>``
    holding the commit; without the ref, the most recently modified snapshot.
    """
    if model_id.count("/") != 1 or model_id.startswith(("/", ".", "~")):
        return None
    env = os.environ if env is None else env
    folder = "models--" + model_id.replace("/", "--")
    for hub in _hub_dirs(env):
        snap = _snapshot(hub / folder, revision)
        if snap is not None:
            return snap
    return None


def _snapshot(repo: Path, revision: str = "main") -> Path | None:
    """The snapshot of a cache repository folder (``models--org--name``) holding a config.json."""
    snaps = repo / "snapshots"
    if not snaps.is_dir():
        return None
    ref = repo / "refs" / revision
    if ref.is_file():
        snap = snaps / ref.read_text().strip()
        if (snap / "config.json").is_file():
            return snap
    cands = [s for s in snaps.iterdir() if (s / "config.json").is_file()]
    return max(cands, key=lambda s: s.stat().st_mtime) if cands else None


def resolve_model_dir(model_path: str | None, env: Mapping[str, str] | None = None) -> Path | None:
    """A local directory for ``--model-path``: itself when it is one, the snapshot of a cache repository
    folder (``…/hub/models--org--name``), else the HF-cache snapshot of an ``org/name`` id."""
    if not model_path:
        return None
    p = Path(os.path.expanduser(model_path))
    if (p / "config.json").is_file():
        return p
    return _snapshot(p) or find_in_hf_cache(model_path, env)
