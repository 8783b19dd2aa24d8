"""launch/model_dir.py: config.json layouts of each family, safetensors headers, HF cache lookup."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from sglang_doctor.launch.gpu import lookup_gpu, query_nvidia_smi, resolve_gpu
from sglang_doctor.launch.model_dir import (
    checkpoint_weights,
    find_in_hf_cache,
    parse_config,
    read_model_dir,
    read_safetensors_header,
    resolve_model_dir,
)

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "bench" / "preflight_cases"
CONFIGS = ROOT / "tests" / "data" / "model_configs"


def cfg(name: str) -> dict[str, Any]:
    path = CONFIGS / f"{name}.json"
    if not path.is_file():
        path = CASES / name / "config.json"
    return json.loads(path.read_text())


def write_shard(path: Path, tensors: dict[str, tuple[str, list[int]]], elem: dict[str, int] | None = None) -> int:
    """A safetensors file whose data region is a sparse hole (only the header is written)."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "F8_E4M3": 1, "U8": 1}
    sizes.update(elem or {})
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for x in shape:
            n *= x
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + off)
    return off


# --------------------------------------------------------------------------- config.json layouts


def test_plain_decoder() -> None:
    m = parse_config(cfg("qwen3-14b-tp4-rtx4090"))
    assert (m.num_layers, m.num_heads, m.num_kv_heads, m.head_dim, m.v_head_dim) == (40, 40, 8, 128, 128)
    assert m.context_len == 40960 and not m.use_mla and m.linear is None and m.kv_layers == 40


def test_head_dim_from_hidden_and_llama3_rope_keeps_context() -> None:
    m = parse_config(cfg("llama-3.1-8b-lora-docs-ci"))
    assert m.head_dim == 4096 // 32
    assert m.context_len == 131072  # llama3 rope type: SGLang applies no factor


def test_moe() -> None:
    m = parse_config(cfg("qwen3-30b-a3b"))
    assert m.num_experts == 128 and m.moe_intermediate_size == 768 and m.num_kv_heads == 4
    # 30.5B parameters in bf16
    assert 60e9 < m.weights.total_bytes < 62.5e9


def test_mla_with_fp8_blocks_and_nextn() -> None:
    m = parse_config(cfg("deepseek-r1"))
    assert m.use_mla and (m.kv_lora_rank, m.qk_rope_head_dim) == (512, 64)
    assert m.quant_method == "fp8" and m.weight_block_size == (128, 128)
    assert m.mtp_layers == 1
    # yarn with original_max_position_embeddings: no factor (utils/hf_transformers/common.py:384-385)
    assert m.context_len == 163840
    assert 640e9 < m.weights.total_bytes < 720e9  # 671B + nextn, FP8


def test_hybrid_gdn_nested_multimodal() -> None:
    m = parse_config(cfg("qwen3.6-27b-awq-24gb-mfs-0.92"))
    assert m.architectures == ("Qwen3_5ForConditionalGeneration",)
    assert m.full_attention_layers == 16 and m.kv_layers == 16
    st = m.linear
    assert st is not None and st.kind == "gdn" and st.layers == 48
    assert (st.num_heads, st.n_groups, st.head_dim, st.state_size, st.conv_kernel) == (48, 16, 128, 128, 4)
    assert st.intermediate_size == 48 * 128 and st.ssm_dtype == "float32"
    assert m.vision_config and m.vision_layers is None and m.vision_hidden == 1152  # Qwen ViTs say "depth"
    assert m.context_len == 262144


def test_text_config_defaults_gemma3() -> None:
    m = parse_config(cfg("gemma-3-4b-it-h200-0.4.4"))
    # google/gemma-3-4b-it leaves heads / kv heads / head_dim to Gemma3TextConfig's defaults
    assert (m.num_heads, m.num_kv_heads, m.head_dim, m.num_layers) == (8, 4, 256, 34)
    assert m.vision_layers == 27 and m.vision_hidden == 1152


@pytest.mark.parametrize("quant, method, bits", [
    ("quant-awq", "awq", 4),
    ("quant-fp8-block", "fp8", None),
    ("quant-compressed-tensors-w8a16-int", "compressed-tensors", 8),
])
def test_quantization_configs(quant: str, method: str, bits: int | None) -> None:
    c = cfg("qwen2.5-7b")
    c["quantization_config"] = cfg(quant)
    m = parse_config(c)
    assert m.quant_method == method and m.quant_bits == bits
    plain = parse_config(cfg("qwen2.5-7b")).weights.total_bytes
    assert m.weights.total_bytes < plain  # quantized linear layers are smaller


def test_awq_checkpoint_size_estimate() -> None:
    c = cfg("qwen2.5-7b")
    c["quantization_config"] = cfg("quant-awq")
    # Qwen2.5-7B-Instruct-AWQ is 5.58 GB on disk: int4 body, bf16 embeddings and lm_head
    assert 5.2e9 < parse_config(c).weights.total_bytes < 6.0e9


# --------------------------------------------------------------------------- safetensors headers


def test_header_reader_on_sparse_file(tmp_path: Path) -> None:
    p = tmp_path / "model.safetensors"
    size = write_shard(p, {"model.embed_tokens.weight": ("BF16", [1000, 64]), "lm_head.weight": ("F32", [1000, 64])})
    t = read_safetensors_header(p)
    assert t["model.embed_tokens.weight"].nbytes == 1000 * 64 * 2 and t["lm_head.weight"].dtype == "F32"
    assert sum(x.nbytes for x in t.values()) == size
    assert p.stat().st_size > 8 + size - 1  # the file claims the full size ...
    assert p.stat().st_blocks * 512 < size  # ... but its data is a hole: nothing was written


@pytest.mark.parametrize("content", [b"", b"\x01\x00", struct.pack("<Q", 0), struct.pack("<Q", 2 ** 40) + b"{}",
                                     struct.pack("<Q", 100) + b"{}"])
def test_header_reader_rejects_non_headers(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "x.safetensors"
    p.write_bytes(content)
    with pytest.raises(ValueError):
        read_safetensors_header(p)


def test_checkpoint_weights_parts(tmp_path: Path) -> None:
    write_shard(tmp_path / "model-00001-of-00002.safetensors", {
        "model.layers.0.mlp.down_proj.weight": ("BF16", [64, 128]),
        "model.layers.2.eh_proj.weight": ("BF16", [64, 128]),  # DeepSeek nextn layer (index >= num layers)
        "model.layers.0.mlp.gate.e_score_correction_bias": ("F32", [256]),
    })
    write_shard(tmp_path / "model-00002-of-00002.safetensors", {
        "mtp.layers.0.fc.weight": ("BF16", [64, 64]),  # Qwen3-Next MTP
        "model.visual.blocks.0.attn.qkv.weight": ("BF16", [96, 32]),
        "model.layers.1.self_attn.q_proj.weight": ("F8_E4M3", [64, 64]),
    })
    w = checkpoint_weights(tmp_path, num_layers=2)
    assert w is not None and w.files == 2
    assert w.total_bytes == 64 * 128 * 2 * 2 + 256 * 4 + 64 * 64 * 2 + 96 * 32 * 2 + 64 * 64
    assert w.mtp_bytes == 64 * 128 * 2 + 64 * 64 * 2
    assert w.vision_bytes == 96 * 32 * 2 and w.wide_float_bytes == 256 * 4


def test_index_total_size_without_shards(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 12345}, "weight_map": {}}))
    w = checkpoint_weights(tmp_path)
    assert w is not None and w.total_bytes == 12345 and "index" in w.source


def test_read_model_dir_prefers_headers_over_estimate(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(cfg("qwen2.5-7b")))
    assert "config.json" in read_model_dir(tmp_path).weights.source  # no shards: estimate
    write_shard(tmp_path / "model.safetensors", {"model.embed_tokens.weight": ("BF16", [152064, 3584])})
    m = read_model_dir(tmp_path)
    assert m.weights.source == "safetensors headers" and m.weights.total_bytes == 152064 * 3584 * 2


# --------------------------------------------------------------------------- HF cache


def _hub_snapshot(hub: Path, model_id: str, rev: str) -> Path:
    repo = hub / ("models--" + model_id.replace("/", "--"))
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(cfg("qwen2.5-7b")))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)
    return snap


def test_hf_cache_lookup_with_hf_home(tmp_path: Path) -> None:
    snap = _hub_snapshot(tmp_path / "hf" / "hub", "Qwen/Qwen2.5-7B", "abc123")
    env = {"HF_HOME": str(tmp_path / "hf"), "HOME": str(tmp_path / "home")}
    assert find_in_hf_cache("Qwen/Qwen2.5-7B", env) == snap
    assert resolve_model_dir("Qwen/Qwen2.5-7B", env) == snap
    assert find_in_hf_cache("Qwen/Other", env) is None
    assert find_in_hf_cache("/abs/path", env) is None


def test_hf_cache_default_location_and_local_dir(tmp_path: Path) -> None:
    snap = _hub_snapshot(tmp_path / "home" / ".cache" / "huggingface" / "hub", "org/name", "r1")
    env = {"HOME": str(tmp_path / "home")}
    assert find_in_hf_cache("org/name", env) == snap
    assert resolve_model_dir(str(snap), env) == snap  # a local directory is itself


# --------------------------------------------------------------------------- GPU


class _Run:
    def __init__(self, out: str = "", rc: int = 0, exc: Exception | None = None) -> None:
        self.out, self.rc, self.exc = out, rc, exc

    def __call__(self, *a: Any, **k: Any) -> Any:
        if self.exc:
            raise self.exc
        return type("R", (), {"returncode": self.rc, "stdout": self.out})()


def test_nvidia_smi_parsing_and_absence() -> None:
    out = "NVIDIA GeForce RTX 4090, 24564, 24080, 8.9\nNVIDIA GeForce RTX 4090, 24564, 20000, 8.9\n"
    g = query_nvidia_smi(_Run(out))
    assert g is not None and len(g) == 2 and g[0].compute_cap == (8, 9) and g[1].free_mib == 20000
    assert query_nvidia_smi(_Run(exc=FileNotFoundError())) is None
    assert query_nvidia_smi(_Run(rc=9)) is None
    r = resolve_gpu(run=_Run(out))
    assert r is not None and r.total_mib == 24564 and r.free_mib == 20000 and r.count == 2  # min over GPUs
    assert resolve_gpu(run=_Run(exc=FileNotFoundError())) is None
    assert query_nvidia_smi(_Run("Tesla T4, 15360, 15000, [N/A]\n"))[0].compute_cap is None


def test_gpu_options_win_and_name_table() -> None:
    r = resolve_gpu(gpu_mem_gib=24.0, gpu_name="RTX 4090", run=_Run(exc=AssertionError("not called")))
    assert r is not None and r.total_mib == 24 * 1024 and r.compute_cap == (8, 9) and r.source == "options"
    assert lookup_gpu("NVIDIA A100-SXM4-40GB").total_gib == 40 and lookup_gpu("NVIDIA H200").compute_cap == (9, 0)
    assert lookup_gpu("Tesla T4").compute_cap == (7, 5) and lookup_gpu("unknown card") is None
