"""fix/memory_model.py: SGLang's memory arithmetic per release family, checked against the source's rules
and against the numbers real (and the seed's) launch logs state."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sglang_doctor.fix import memory_model as mm
from sglang_doctor.fix.memory_defaults import Knobs, default_mem_fraction, prefill_graph_sizes, vlm_factor
from sglang_doctor.launch.model_dir import ModelInfo, parse_config

ROOT = Path(__file__).resolve().parents[1]


def model(name: str) -> ModelInfo:
    path = ROOT / "tests" / "data" / "model_configs" / f"{name}.json"
    if not path.is_file():
        path = ROOT / "bench" / "preflight_cases" / name / "config.json"
    return parse_config(json.loads(path.read_text()), name)


QWEN36 = "qwen3.6-27b-awq-24gb-mfs-0.92"
QWEN3_14B = "qwen3-14b-tp4-rtx4090"
GPU24 = mm.Gpu(total_mib=24564, compute_cap=(8, 9))


@pytest.mark.parametrize("version, family", [
    ("0.4.3.post2", "0.4.4"), ("0.4.4.post3", "0.4.4"), ("0.4.5", "0.4.5"), ("0.4.6.post5", "0.4.6"),
    ("0.4.8.post1", "0.4.6"), ("0.4.9", "0.4.10"), ("0.4.10.post2", "0.4.10"), ("0.5.0rc0", "0.5.5"),
    ("0.5.6.post1", "0.5.5"), ("0.5.10", "0.5.10"), ("0.5.13", "0.5.10"), ("v0.5.14", "0.5.14"),
    ("0.5.22", "0.5.14"), ("0.5.23", "0.5.23"), ("0.6.0", "0.5.23"), (None, "0.5.23"), ("nightly", "0.5.23"),
])
def test_family_of(version: str | None, family: str) -> None:
    assert mm.family_of(version) == family


# --------------------------------------------------------------------------- default fractions


@pytest.mark.parametrize("family, gpu_mib, knobs, expected", [
    # 0.4.4 / 0.4.5: by tp alone, whatever the card (0.4.4.post3 server_args.py:219-229)
    ("0.4.4", 143771, Knobs(tp=1), 0.88), ("0.4.5", 24564, Knobs(tp=8), 0.81),
    # 0.4.6: <= 80 GiB table by tp*pp; > 96 GiB cards get min(m + 48 GiB (1-m)/gpu, (gpu-18 GiB)/gpu)
    ("0.4.6", 24564, Knobs(tp=2), 0.87), ("0.4.6", 81559, Knobs(tp=4, pp=2), 0.81),
    ("0.4.6", 143771, Knobs(tp=1), (143771 - 18432) / 143771),
    # 0.4.10: round((gpu - reserved)/gpu, 3), reserved by GPU class (+2 GiB speculative, +4 GiB dp-attention)
    ("0.4.10", 24564, Knobs(tp=1), round((24564 - 2.9 * 1024) / 24564, 3)),
    ("0.4.10", 81559, Knobs(tp=8), round((81559 - 13.5 * 1024) / 81559, 3)),
    ("0.4.10", 81559, Knobs(tp=8, speculative_algorithm="EAGLE", enable_dp_attention=True),
     round((81559 - 19.5 * 1024) / 81559, 3)),
    # 0.5.5: 512 + 1.5 * chunk + 2 * decode bs + tp*pp/8 GiB; 24 GiB class: chunk 2048, bs 24
    ("0.5.5", 24564, Knobs(tp=1), round((24564 - (512 + 3072 + 48 + 128)) / 24564, 3)),
    ("0.5.5", 24564, Knobs(tp=1, speculative_algorithm="EAGLE"), round((24564 - (3760 + 2048)) / 24564, 3)),
    # 0.5.10 / 0.5.14: + 8 MiB per prefill graph size (42 up to 2048): the reference's 0.833
    ("0.5.10", 24564, Knobs(tp=1), 0.833), ("0.5.14", 24564, Knobs(tp=1), 0.833),
    ("0.5.10", 24564, Knobs(tp=1, speculative_algorithm="EAGLE", prefill_graph=False),
     round((24564 - (3760 + 4096)) / 24564, 3)),
    ("0.5.14", 24564, Knobs(tp=1, speculative_algorithm="EAGLE", prefill_graph=False), 0.847),  # no spec term
    ("0.5.14", 24564, Knobs(tp=1, context_length=1024), round((24564 - (3760 + 8 * 38)) / 24564, 3)),
    ("0.5.14", 24564, Knobs(tp=1, use_mla=True), round((24564 - (3760 + 1536)) / 24564, 3)),
    # > 60 GiB: at least 10 GiB reserved
    ("0.5.5", 81559, Knobs(tp=1, chunked_prefill_size=2048, cuda_graph_max_bs=8), round((81559 - 10240) / 81559, 3)),
    # 0.5.23: the 20-35 GiB class moves to chunk 4096 / bs 48: the reference's 0.704
    ("0.5.23", 24564, Knobs(tp=1), 0.704),
    ("0.5.23", 24564, Knobs(tp=1, decode_graph=False, prefill_graph=False), round((24564 - (512 + 6144 + 128)) / 24564, 3)),
    ("0.5.23", 24564, Knobs(tp=1, max_running_requests=4), round((24564 - (512 + 6144 + 8 + 128 + 400)) / 24564, 3)),
])
def test_default_mem_fraction(family: str, gpu_mib: int, knobs: Knobs, expected: float) -> None:
    assert default_mem_fraction(family, gpu_mib, knobs).mem_fraction_static == pytest.approx(expected)


def test_vlm_factor_and_graph_sizes() -> None:
    assert vlm_factor(24, 1024) == pytest.approx(0.95)
    assert vlm_factor(None, 1152) == pytest.approx(0.95 * (1 - 0.1 * (1152 ** 2 / 1024 ** 2 - 1)))
    assert vlm_factor(48, 2048) == pytest.approx(0.95 * 0.8)
    assert len(prefill_graph_sizes(2048)) == 42 and prefill_graph_sizes(4)[-1] == 4


def test_multimodal_factors_per_family() -> None:
    gemma = model("gemma-3-4b-it-h200-0.4.4")
    gpu = mm.Gpu(total_mib=143771)
    assert mm.resolve_mem_fraction("0.4.4", gemma, mm.Launch(), gpu)[0] == pytest.approx(0.88 * 0.95)
    assert mm.resolve_mem_fraction("0.4.5", gemma, mm.Launch(mem_fraction_static=0.8), gpu)[0] == pytest.approx(0.72)
    # 0.4.6: Gemma3 is multimodal only with --enable-multimodal
    assert mm.resolve_mem_fraction("0.4.6", gemma, mm.Launch(mem_fraction_static=0.8), gpu)[0] == 0.8
    assert mm.resolve_mem_fraction("0.4.6", gemma, mm.Launch(mem_fraction_static=0.8, enable_multimodal=True),
                                   gpu)[0] == pytest.approx(0.72)
    # 0.5.x: an explicit value is kept; the default gets the VLM factor
    q = model(QWEN36)
    assert mm.resolve_mem_fraction("0.5.14", q, mm.Launch(mem_fraction_static=0.92), GPU24)[0] == 0.92
    m, src = mm.resolve_mem_fraction("0.5.14", q, mm.Launch(), GPU24)
    assert m == pytest.approx(round((24564 - 3760) / 24564, 3) * vlm_factor(None, 1152)) and "default" in src


def test_rocm_aiter_factor() -> None:
    m = model(QWEN3_14B)
    rocm = mm.Gpu(total_mib=196592, rocm=True)
    assert mm.resolve_mem_fraction("0.5.14", m, mm.Launch(mem_fraction_static=0.9), rocm)[0] == pytest.approx(0.765)
    assert mm.resolve_mem_fraction("0.5.14", m, mm.Launch(mem_fraction_static=0.9, context_length=8192), rocm)[0] == 0.9


# --------------------------------------------------------------------------- cell size and state size


def test_cell_size_gqa_and_replicated_kv_heads() -> None:
    m = model(QWEN3_14B)  # 8 KV heads of 128, 40 layers
    assert mm.cell_size("0.4.6", m, mm.Launch()) == 8 * 128 * 2 * 40 * 2
    assert mm.cell_size("0.5.14", m, mm.Launch(tp=4)) == 2 * (128 + 128) * 40 * 2
    # fewer KV heads than tp: one head per GPU, replicated (model_config.get_num_kv_heads)
    assert mm.cell_size("0.5.14", m, mm.Launch(tp=16)) == 1 * 256 * 40 * 2
    assert mm.cell_size("0.5.14", m, mm.Launch(kv_cache_dtype="fp8_e4m3")) == 8 * 256 * 40
    # dp-attention: attention tp = tp / dp
    assert mm.cell_size("0.5.14", m, mm.Launch(tp=8, dp=8, enable_dp_attention=True)) == 8 * 256 * 40 * 2


def test_cell_size_mla_fp8_checkpoint_kv_and_hybrid() -> None:
    r1 = model("deepseek-r1")
    assert mm.cell_size("0.5.14", r1, mm.Launch(tp=8)) == (512 + 64) * 61 * 2
    assert mm.cell_size("0.5.14", r1, mm.Launch(tp=8, kv_cache_dtype="fp8_e4m3")) == (512 + 64) * 61
    q = model(QWEN36)
    assert mm.cell_size("0.5.14", q, mm.Launch()) == 4 * 512 * 16 * 2  # full-attention layers only
    fp8_kv = replace(model(QWEN3_14B), kv_cache_quant_algo="FP8")
    assert mm.cell_size("0.5.5", fp8_kv, mm.Launch()) == 8 * 128 * 2 * 40  # auto -> fp8 from the checkpoint
    assert mm.cell_size("0.4.6", fp8_kv, mm.Launch()) == 8 * 128 * 2 * 40 * 2  # 0.4.x ignores it


def test_mamba_state_per_request() -> None:
    q = model(QWEN36)
    # 48 layers x (conv (6144 + 2*16*128) x 3 x bf16 + ssm 48 x 128 x 128 x fp32)
    assert mm.mamba_cache_per_req("0.5.14", q, mm.Launch()) == 48 * (10240 * 3 * 2 + 48 * 128 * 128 * 4)
    assert mm.mamba_cache_per_req("0.5.14", q, mm.Launch(mamba_ssm_dtype="bfloat16")) == 48 * (10240 * 3 * 2 + 48 * 128 * 128 * 2)
    # tp 32 does not divide 16 key groups: they are replicated up to tp (extra_groups_for_head_shards)
    per = mm.mamba_cache_per_req("0.5.14", q, mm.Launch(tp=32))
    assert per == 48 * (((6144 + 2 * 32 * 128) // 32) * 3 * 2 + (48 // 32) * 128 * 128 * 4)


def test_mamba_ratio_per_release() -> None:
    q = model(QWEN36)
    assert mm.mamba_ratio("0.5.5", q, mm.Launch()) == 3
    assert mm.mamba_ratio("0.5.10", q, mm.Launch()) == 3  # auto -> no_buffer
    assert mm.mamba_ratio("0.5.14", q, mm.Launch()) == 5  # auto -> extra_buffer with overlap
    assert mm.mamba_ratio("0.5.14", q, mm.Launch(disable_overlap_schedule=True)) == 3
    assert mm.mamba_ratio("0.5.14", q, mm.Launch(mamba_strategy="extra_buffer_lazy")) == 4
    assert mm.mamba_ratio("0.5.23", q, mm.Launch(disable_radix_cache=True)) == 1


# --------------------------------------------------------------------------- the seed's three launches


@pytest.fixture(scope="module")
def qwen36() -> ModelInfo:
    return model(QWEN36)


def seed(m: ModelInfo, mfs: float, family: str = "0.5.14") -> mm.PoolPlan:
    launch = mm.Launch(mem_fraction_static=mfs, context_length=32768, dtype="bfloat16")
    return mm.size_pools(family, m, launch, mfs, 23.21, 4.16, GPU24)  # the demo logs' avail mem readings


def test_seed_080_mamba_cache_negative(qwen36: ModelInfo) -> None:
    p = seed(qwen36, 0.80)
    assert p.mamba_slots == -2 and p.failure_kind == "mamba-negative" and not p.starts
    assert p.failure == (
        "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed "
        "max_mamba_cache_size=-2 (total_rest_memory=-0.48 GB, mamba_cache_per_req=146.81 MB). Try: (1) reduce "
        "--max-running-requests, (2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, "
        "or (4) use GPUs with more memory.")


def test_seed_088_four_slots_too_small(qwen36: ModelInfo) -> None:
    p = seed(qwen36, 0.88)
    assert (p.mamba_slots, p.mamba_ratio, p.max_running_requests) == (4, 5, 0)
    assert p.failure == (
        "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
        "max_mamba_cache_size=4, mamba_ratio=5, resulting max_num_reqs=0. Try: (1) reduce --max-running-requests, "
        "(2) increase --mem-fraction-static, or (3) use GPUs with more memory.")


def test_seed_092_starts(qwen36: ModelInfo) -> None:
    p = seed(qwen36, 0.92)
    assert p.starts and p.mamba_slots == 7 and p.max_running_requests == 1
    # the log says 21,482; with the logged readings rounded to 0.01 GB the arithmetic gives 21,292 (-0.9 %):
    # no (pre, post) that rounds to (23.21, 4.16) reaches 21,482 with this model's 146.81 MiB per slot
    assert abs(p.kv_tokens - 21482) / 21482 < 0.01
    best = mm.size_pools("0.5.14", qwen36, mm.Launch(mem_fraction_static=0.92, context_length=32768),
                         0.92, 23.205, 4.165, GPU24)
    assert best.kv_tokens < 21482


def test_seed_on_other_families(qwen36: ModelInfo) -> None:
    # 0.5.10: no_buffer ratio 3 -> 4 slots serve one request; no dedicated mamba error in 0.5.10
    assert seed(qwen36, 0.88, "0.5.10").max_running_requests == 1
    p = seed(qwen36, 0.80, "0.5.10")
    assert p.failure_kind == "kv-negative" and p.failure.endswith("Current value: mem_fraction_static=0.8")
    # 0.5.23 reserves the padding slot: one fewer slot than 0.5.14
    assert seed(qwen36, 0.92, "0.5.23").mamba_slots == 6


# --------------------------------------------------------------------------- failures per release


@pytest.mark.parametrize("family, message", [
    ("0.4.4", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."),
    ("0.4.6", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."),
    ("0.4.10", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."),
    ("0.5.5", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
              "Current value: self.server_args.mem_fraction_static=0.5"),
    ("0.5.10", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
               "Current value: mem_fraction_static=0.5"),
    ("0.5.14", "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5. "
               "Raise --mem-fraction-static above 0.750 (minimum viable = 1 - available/pre = 0.7500). "
               "If using speculative decoding, draft weights are now counted."),
    ("0.5.23", "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5. "
               "Raise --mem-fraction-static above 0.750"),
])
def test_weights_exceed_the_fraction(family: str, message: str) -> None:
    m = model(QWEN3_14B)
    p = mm.size_pools(family, m, mm.Launch(mem_fraction_static=0.5), 0.5, 20.0, 5.0, GPU24)
    assert not p.starts and p.failure.startswith(message)


def test_positive_budget_below_one_cell_is_not_enough_memory() -> None:
    m = model(QWEN3_14B)
    rest = 100_000 / mm.GIB  # less than one 163,840-byte token
    p = mm.size_pools("0.5.14", m, mm.Launch(mem_fraction_static=0.5), 0.5, 20.0, 10.0 + rest, GPU24)
    assert p.failure_kind == "kv-negative" and "Not enough memory" in p.failure


def test_max_running_requests_per_release() -> None:
    m = replace(model(QWEN3_14B), context_len=40960)
    # 0.4.x: min(tokens // 2, pool size = clamp(tokens / ctx * 512, 2048, 4096) + 1)
    p = mm.size_pools("0.4.6", m, mm.Launch(mem_fraction_static=0.88), 0.88, 3.23, 2.03, GPU24)
    assert p.max_running_requests == min(p.kv_tokens // 2, 2049)
    big = mm.size_pools("0.5.14", m, mm.Launch(mem_fraction_static=0.9, tp=4), 0.9, 23.08, 16.0, GPU24)
    assert big.max_running_requests == max(min(int(big.kv_tokens / 40960 * 512), 4096), 2048)
    capped = mm.size_pools("0.5.14", m, mm.Launch(mem_fraction_static=0.9, tp=4, max_running_requests=64), 0.9,
                           23.08, 16.0, GPU24)
    assert capped.max_running_requests == 64


def test_max_total_tokens_and_page_alignment() -> None:
    m = model(QWEN3_14B)
    p = mm.size_pools("0.5.14", m, mm.Launch(mem_fraction_static=0.9, max_total_tokens=20000, page_size=64),
                      0.9, 23.0, 10.0, GPU24)
    assert p.kv_tokens == 20000 // 64 * 64
    q = mm.size_pools("0.5.14", m, mm.Launch(mem_fraction_static=0.9, page_size=64), 0.9, 23.0, 10.0, GPU24)
    assert q.kv_tokens % 64 == 0


# --------------------------------------------------------------------------- the inverse


def test_plan_for_the_seed(qwen36: ModelInfo) -> None:
    launch = mm.Launch(mem_fraction_static=0.80, context_length=32768, dtype="bfloat16")
    fp = mm.plan("0.5.14", qwen36, launch, GPU24, 23.21, 4.16)
    assert fp.feasible and fp.mem_fraction_static == 0.89
    p = fp.predicted
    assert p.starts and p.mamba_slots == 5 and p.max_running_requests == 1
    # 5 slots leave a pool smaller than 32,768 tokens: the context is capped to what the pool holds
    assert fp.context_length is not None and fp.context_length <= p.kv_tokens and fp.context_length % 1024 == 0
    # never above what leaves SGLang's own headroom for activations and CUDA graphs
    assert fp.max_fraction is not None and fp.mem_fraction_static <= fp.max_fraction < 0.95


def test_plan_when_a_full_context_fits(qwen36: ModelInfo) -> None:
    launch = mm.Launch(mem_fraction_static=0.80, context_length=8192, dtype="bfloat16")
    fp = mm.plan("0.5.14", qwen36, launch, GPU24, 23.21, 4.16)
    assert fp.feasible and fp.context_length is None and fp.predicted.kv_tokens >= 8192
    assert fp.predicted.starts and fp.mem_fraction_static == 0.89


def test_a_capped_context_rests_on_a_fraction_on_the_grid() -> None:
    # the release default (0.4.10, 24 GB card: 0.879) is the floor when no fraction holds the context;
    # the fix is printed to two decimals, so the pool is sized at the default rounded up, never down
    m = replace(model(QWEN3_14B), kv_cell_bytes=131072, context_len=131072)
    launch = mm.Launch(mem_fraction_static=0.55, context_length=131072, max_total_tokens=131072)
    gpu = mm.Gpu(total_mib=24.04 * 1024)
    assert mm.plan("0.4.10", m, launch, gpu, 23.24, 8.18).mem_fraction_static == 0.879  # preflight prints 0.879
    fp = mm.plan("0.4.10", m, launch, gpu, 23.24, 8.18, on_grid=True)
    assert fp.feasible and fp.mem_fraction_static == 0.88 and fp.context_length == 44032
    at_printed = mm.size_pools("0.4.10", m, replace(launch, mem_fraction_static=0.88, context_length=44032),
                               float(f"{fp.mem_fraction_static:.2f}"), 23.24, 8.18)
    assert at_printed.kv_tokens >= fp.context_length


def test_plan_infeasible_on_a_small_card() -> None:
    m = model(QWEN3_14B)  # 27.5 GiB of weights on one 24 GB card
    fp = mm.plan("0.5.14", m, mm.Launch(mem_fraction_static=0.9), GPU24, 23.2, 23.2 - 27.6)
    assert not fp.feasible and "more GPU memory" in fp.reason


def test_simulate_from_gpu_total(qwen36: ModelInfo) -> None:
    m = model(QWEN3_14B)
    p = mm.simulate("0.5.14", m, mm.Launch(tp=4, mem_fraction_static=0.8), GPU24)
    assert p.starts and 290_000 < p.kv_tokens < 310_000  # the log: 298,447
    with pytest.raises(ValueError):
        mm.simulate("0.5.14", m, mm.Launch(), mm.Gpu())


def test_kv_budget_from_log_readings_alone() -> None:
    # "with 3.64 GB free after the weights and mem_fraction_static 0.88, the KV pool is negative"
    rest, failure = mm.kv_budget("0.5.14", 0.88, 23.21, 2.50)
    assert rest == pytest.approx(2.50 - 23.21 * 0.12) and failure.startswith("ValueError: Loaded weights leave no")
    assert mm.kv_budget("0.4.10", 0.88, 23.21, 2.50)[1] == (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
    assert mm.kv_budget("0.5.14", 0.92, 23.21, 4.16)[1] is None
