"""Hugging Face checkpoints as they lie on disk, without the weights: real tensor names and
shapes of a decoder (Llama / Qwen2 layout) in sparse ``*.safetensors`` shards, with the
``model.safetensors.index.json`` beside them, and the Hugging Face cache layout
(``hub/models--org--name/{blobs,refs,snapshots}``, snapshot files symlinked to blobs).
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

BF16 = 2


def decoder_tensors(cfg: dict[str, Any]) -> list[tuple[str, list[int]]]:
    """(name, shape) of every tensor of a Llama/Qwen2-style decoder checkpoint."""
    h, layers, inter = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim") or h // heads
    bias = cfg.get("model_type") == "qwen2"  # Qwen2 has q/k/v biases
    out: list[tuple[str, list[int]]] = [("model.embed_tokens.weight", [cfg["vocab_size"], h])]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [(p + "self_attn.q_proj.weight", [heads * hd, h]), (p + "self_attn.k_proj.weight", [kv * hd, h]),
                (p + "self_attn.v_proj.weight", [kv * hd, h]), (p + "self_attn.o_proj.weight", [h, heads * hd])]
        if bias:
            out += [(p + "self_attn.q_proj.bias", [heads * hd]), (p + "self_attn.k_proj.bias", [kv * hd]),
                    (p + "self_attn.v_proj.bias", [kv * hd])]
        if cfg.get("model_type") == "qwen3":  # Qwen3 normalizes q and k per head
            out += [(p + "self_attn.q_norm.weight", [hd]), (p + "self_attn.k_norm.weight", [hd])]
        out += [(p + "mlp.gate_proj.weight", [inter, h]), (p + "mlp.up_proj.weight", [inter, h]),
                (p + "mlp.down_proj.weight", [h, inter]), (p + "input_layernorm.weight", [h]),
                (p + "post_attention_layernorm.weight", [h])]
    out.append(("model.norm.weight", [h]))
    if not cfg.get("tie_word_embeddings"):
        out.append(("lm_head.weight", [cfg["vocab_size"], h]))
    return out


def _numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def write_checkpoint(d: Path, cfg: dict[str, Any], shards: int = 4) -> int:
    """config.json, ``shards`` sparse bf16 shards and the index in ``d``; returns the weight bytes."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg, indent=2))
    tensors = decoder_tensors(cfg)
    per = -(-len(tensors) // shards)
    weight_map: dict[str, str] = {}
    total = 0
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
        off = 0
        for t, shape in tensors[s * per:(s + 1) * per]:
            n = _numel(shape) * BF16
            header[t] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
            off += n
            weight_map[t] = name
        raw = json.dumps(header).encode()
        with open(d / name, "wb") as fh:  # sparse: the data is never written
            fh.write(struct.pack("<Q", len(raw)) + raw)
            fh.truncate(8 + len(raw) + off)
        total += off
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                "weight_map": weight_map}))
    return total


def write_hf_cache(hub: Path, model_id: str, cfg: dict[str, Any], shards: int = 4,
                   revision: str = "0123456789abcdef0123456789abcdef01234567") -> Path:
    """The model in a Hugging Face cache (``hub/models--org--name``): blobs, refs/main, a snapshot of
    symlinks. Returns the snapshot directory."""
    repo = hub / ("models--" + model_id.replace("/", "--"))
    staging = repo / ".staging"
    write_checkpoint(staging, cfg, shards)
    snap = repo / "snapshots" / revision
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for f in sorted(staging.iterdir()):
        blob = repo / "blobs" / hashlib.sha256(f.name.encode()).hexdigest()
        f.rename(blob)
        (snap / f.name).symlink_to(Path("../../blobs") / blob.name)
    staging.rmdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    return snap
