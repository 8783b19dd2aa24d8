"""Checkpoint size from config.json alone, for a model directory without weights on disk.

Counts the parameters of the decoder (embeddings, attention — GQA, gated-query, MLA —,
dense / MoE MLPs, gated-delta-net layers, norms) and prices them the way the common
checkpoint formats store them: 16-bit floats; 4-bit AWQ/GPTQ/compressed-tensors linear
weights with a 16-bit scale (and 4-bit zero) per group; 1-byte FP8 weights with fp32 block
scales. A vision tower is counted as a plain ViT (attention + MLP per block, 16-bit).
The safetensors headers, when present, are always preferred (``model_dir.checkpoint_weights``).

Public API::

    estimate_checkpoint_bytes(text_config, quant) -> tuple[int, int]   # (bytes, mtp bytes)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["estimate_checkpoint_bytes", "estimate_vision_bytes"]


def _g(d: Mapping[str, Any], *keys: str, default: Any = 0) -> Any:
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return default


def _linear_bytes(params: int, quant: Mapping[str, Any]) -> float:
    """Bytes of a quantizable linear layer's weight under the checkpoint's scheme."""
    method = str(quant.get("quant_method") or "")
    bits = quant.get("quant_bits")
    if method in ("awq", "gptq", "compressed-tensors", "auto-round", "autoround") and bits and bits < 8:
        group = int(quant.get("group_size") or 128)
        return params * bits / 8 + params / group * (2 + bits / 8)  # packed weights + fp16 scale + packed zero
    if method in ("fp8", "w8a8_fp8", "modelopt") or (bits == 8 and method == "compressed-tensors"):
        return params * 1.0 + params / (128 * 128) * 4  # e4m3 weights, fp32 128x128 block scales
    if method in ("mxfp4", "modelopt_fp4", "nvfp4"):
        return params * 0.5 + params / 32
    return params * 2.0


def _attention(t: Mapping[str, Any], hidden: int) -> int:
    heads = int(_g(t, "num_attention_heads"))
    if t.get("kv_lora_rank") is not None:  # MLA (DeepSeek V2/V3, Kimi K2, GLM-4.7-Flash…)
        nope, rope = int(_g(t, "qk_nope_head_dim")), int(_g(t, "qk_rope_head_dim"))
        v, kv_lora = int(_g(t, "v_head_dim")), int(t["kv_lora_rank"])
        q_lora = t.get("q_lora_rank")
        q = hidden * q_lora + q_lora * heads * (nope + rope) if q_lora else hidden * heads * (nope + rope)
        return q + hidden * (kv_lora + rope) + kv_lora * heads * (nope + v) + heads * v * hidden
    kv = int(_g(t, "num_key_value_heads", default=heads))
    hd = int(_g(t, "head_dim", default=hidden // max(heads, 1)))
    q_out = heads * hd * (2 if t.get("attn_output_gate") else 1)  # Qwen3.5/3-Next gate rides on q_proj
    return hidden * q_out + 2 * hidden * kv * hd + heads * hd * hidden


def _gdn(t: Mapping[str, Any], hidden: int) -> int:
    nk, dk = int(t["linear_num_key_heads"]), int(t["linear_key_head_dim"])
    nv, dv = int(t["linear_num_value_heads"]), int(t["linear_value_head_dim"])
    kernel = int(_g(t, "linear_conv_kernel_dim", default=4))
    key, value = nk * dk, nv * dv
    return hidden * (2 * key + 2 * value) + hidden * 2 * nv + (2 * key + value) * kernel + value * hidden


def _mlp(t: Mapping[str, Any], hidden: int, layer: int) -> tuple[int, int]:
    """(params priced as linear layers, params kept in 16 bits) of one layer's MLP."""
    experts = int(_g(t, "num_experts", "n_routed_experts", "num_local_experts"))
    dense = int(_g(t, "intermediate_size"))
    first_dense = int(_g(t, "first_k_dense_replace"))
    step = int(_g(t, "decoder_sparse_step", default=1)) or 1
    only = set(t.get("mlp_only_layers") or [])
    if not experts or layer < first_dense or layer in only or (layer + 1) % step:
        return 3 * hidden * dense, 0
    moe = int(_g(t, "moe_intermediate_size", default=dense))
    shared = int(_g(t, "shared_expert_intermediate_size")) or int(_g(t, "n_shared_experts")) * moe
    return experts * 3 * hidden * moe + 3 * hidden * shared, hidden * experts + (hidden if shared else 0)


def estimate_checkpoint_bytes(t: Mapping[str, Any], quant: Mapping[str, Any]) -> tuple[int, int]:
    """(estimated checkpoint bytes, of which MTP/nextn layers) from a text config."""
    hidden = int(_g(t, "hidden_size"))
    layers = int(_g(t, "num_hidden_layers"))
    vocab = int(_g(t, "vocab_size"))
    interval = t.get("full_attention_interval")
    types = t.get("layer_types") or []
    plain = vocab * hidden * (1 if t.get("tie_word_embeddings") else 2) + hidden  # embeddings, lm_head, final norm
    per_layer: list[float] = []
    for i in range(layers):
        is_gdn = bool(t.get("linear_num_value_heads")) and (
            (interval and (i + 1) % int(interval)) or (i < len(types) and "linear" in str(types[i])))
        mixer = _gdn(t, hidden) if is_gdn else _attention(t, hidden)
        mlp, mlp_plain = _mlp(t, hidden, i)
        per_layer.append(_linear_bytes(mixer + mlp, quant) + (mlp_plain + 2 * hidden) * 2)
    body = sum(per_layer)
    mtp_layers = int(_g(t, "num_nextn_predict_layers", "mtp_num_hidden_layers"))
    # an MTP block is a full decoder layer plus its projection (2*hidden -> hidden) and norms
    mtp = mtp_layers * ((per_layer[-1] if per_layer else 0) + 2 * hidden * hidden * 2 + 4 * hidden * 2)
    return int(body + plain * 2 + mtp), int(mtp)


def estimate_vision_bytes(v: Mapping[str, Any]) -> int:
    """A ViT tower: per block 4*h^2 (qkv + out) + 2*h*i (MLP), in 16 bits."""
    layers = int(_g(v, "num_hidden_layers", "depth"))
    h = int(_g(v, "hidden_size", "embed_dim"))
    i = int(_g(v, "intermediate_size", default=4 * h))
    return 2 * layers * (4 * h * h + 2 * h * i)
