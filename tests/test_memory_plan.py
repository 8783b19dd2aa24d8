"""fix/memory_plan.py and mem_plan(): the memory model fed with a log's numbers, as rules use it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers_cli import isolate, run
from sglang_doctor.engine.expr import ExpressionError, MissingValue, compile_expr, evaluate
from sglang_doctor.fix.memory_plan import PLAN_FIELDS, plan_from_log

# The seed's facts as the demo logs state them (sglang_doctor/fixtures/demo/).
SEED: dict[str, Any] = {
    "sglang.version": "0.5.14", "gpu.free_gb_before_load": 23.21, "gpu.free_gb_after_load": 4.16,
    "model.weights_gb": 19.05, "model.arch": "Qwen3_5ForConditionalGeneration", "model.hybrid": True,
    "server_args.context_length": 32768, "server_args.chunked_prefill_size": 2048, "server_args.tp_size": 1,
    "server_args.mamba_full_memory_ratio": 0.9, "server_args.disable_radix_cache": False,
}


def seed(mfs: float, **more: Any) -> dict[str, Any]:
    return {**SEED, "server_args.mem_fraction_static": mfs, **more}


def test_stated_state_size_gives_the_demo_fraction() -> None:
    # the 0.80 launch's message: max_mamba_cache_size=-2, mamba_cache_per_req=140.00 MB
    p = plan_from_log(seed(0.8), mamba_per_req_mb=140.0, mamba_slots=-2)
    assert set(p) == set(PLAN_FIELDS)
    assert p["failure"].startswith("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state "
                                   "cache. Computed max_mamba_cache_size=-2 (total_rest_memory=-0.48 GB, "
                                   "mamba_cache_per_req=140.00 MB)")  # the log's own message, reproduced
    assert (p["mem_fraction_static"], p["fix_mamba_slots"], p["fix_requests"], p["kv_sized"]) == (0.89, 5, 1, False)
    assert p["outcome"].startswith("at 0.89 the pools get 4.16 − 23.21 × (1 − 0.89) = 1.61 GB: 5 mamba slots of "
                                   "140.0 MB = 1 request, 0.92 GB for the KV cache (how many tokens")
    assert p["context_length"] is None  # no token count without the KV bytes per token: no cap


def test_slot_count_bounds_the_state_size_and_the_fix_takes_the_upper_end() -> None:
    # the 0.88 launch's message: max_mamba_cache_size=4, mamba_ratio=5 -> each slot is at most 166.7 MB
    p = plan_from_log(seed(0.88), mamba_slots=4, mamba_ratio=5)
    assert p["failure"].startswith("RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve "
                                   "any requests. max_mamba_cache_size=4, mamba_ratio=5, resulting max_num_reqs=0.")
    assert p["mamba_per_req_mb"] == pytest.approx(166.7, abs=0.05)
    # the pool said is the least favourable of the sizes the count allows (133-167 MB): 6 slots at 0.90
    assert p["mem_fraction_static"] == 0.90 and "6 mamba slots of ≤166.7 MB = 1 request" in p["outcome"]
    # with the real size (146.81 MB, from the checkpoint) 0.89 would do: the bound errs towards memory
    assert plan_from_log(seed(0.88), mamba_per_req_mb=146.81, mamba_slots=4)["mem_fraction_static"] == 0.89


def test_a_running_launch_calibrates_both_sizes_and_reproduces_its_own_pools() -> None:
    facts = seed(0.92, **{"mamba.max_cache_size": 7, "mamba.cache_gb": 0.96, "kv.tokens": 21482,
                          "kv.max_total_num_tokens": 21482, "model.context_len": 32768, "cuda_graph.captured": True,
                          "server_args.cuda_graph_max_bs": 8})
    p = plan_from_log(facts)
    assert (p["kv_tokens"], p["mamba_slots"], p["starts"], p["kv_sized"]) == (21482, 7, True, True)
    # nothing up to the headroom holds 32,768 tokens: the context is capped at the fraction in use
    assert (p["mem_fraction_static"], p["context_length"], p["feasible"]) == (None, 20480, True)
    assert p["max_fraction"] == 0.93 and p["outcome"].startswith(
        "no fraction gives a KV pool that holds the 32,768-token context; at 0.92 the pools get")


def test_a_context_cap_holds_for_every_slot_size_the_count_allows() -> None:
    # the demo's 0.88 launch with --max-total-tokens: the profiled pool (13,128 tokens) gives the KV size
    facts = seed(0.88, **{"kv.profiled_tokens": 13128, "server_args.max_total_tokens": 65536,
                          "server_args.context_length": 65536})
    p = plan_from_log(facts, mamba_slots=4, mamba_ratio=5)
    assert p["kv_sized"] and (p["mem_fraction_static"], p["context_length"]) == (0.90, 15360)
    # with the checkpoint's sizes (146.81 MB per slot, 64 KiB per token) 0.90 gives 6 slots and a pool of
    # 16,036 tokens: the cap fits it (the largest slot size alone predicted 18,596 tokens, a cap of 18432)
    assert p["context_length"] <= 16036


def test_a_sized_pool_without_a_context_plans_a_nominal_one_and_caps_nothing() -> None:
    # a negative profile and no --context-length: the log ends before the scheduler states the context
    facts = {"sglang.version": "0.5.5", "gpu.free_gb_before_load": 23.21, "gpu.free_gb_after_load": 7.86,
             "server_args.mem_fraction_static": 0.6, "server_args.max_total_tokens": 32768,
             "kv.profiled_tokens": -10370}
    p = plan_from_log(facts)  # the fact alone gives the KV size (no kv_tokens argument)
    assert p["kv_sized"] and p["context_len"] is None and p["context_length"] is None
    assert p["mem_fraction_static"] == 0.69 and p["fix_kv_tokens"] >= 4096
    assert "this log does not state the context length" in p["outcome"]


def test_inputs_the_log_may_lack() -> None:
    assert plan_from_log(SEED) is None  # no fraction: the default depends on the model and GPU
    no_readings = {k: v for k, v in seed(0.8).items() if not k.startswith("gpu.")}
    assert plan_from_log(no_readings) is None
    # no "Load weight begin" line: before = after + mem usage (load_model prints before - after)
    begin_missing = {k: v for k, v in seed(0.8).items() if k != "gpu.free_gb_before_load"}
    assert plan_from_log(begin_missing)["rest_gb"] == pytest.approx(4.16 - 23.21 * 0.2, abs=1e-3)
    # an inferred release range plans with its newest end
    assert plan_from_log(seed(0.8, **{"sglang.version": "0.4.0-0.5.23"}))["family"] == "0.5.23"
    with pytest.raises(TypeError):
        plan_from_log(seed(0.8), mamba_per_request=1)


def test_a_negative_profiled_pool_gives_the_kv_size() -> None:
    facts = {"sglang.version": "0.5.5", "gpu.free_gb_before_load": 40.0, "gpu.free_gb_after_load": 5.0,
             "server_args.mem_fraction_static": 0.8, "server_args.max_total_tokens": 131072,
             "model.context_len": 32768}
    p = plan_from_log(facts, kv_tokens=-2_000_000)  # rest -3 GB over 2M tokens: 1,610 bytes per token
    assert p["kv_sized"] and p["feasible"] and p["fix_kv_tokens"] >= 32768
    assert p["mem_fraction_static"] == pytest.approx(0.89, abs=0.011)


# --------------------------------------------------------------------------- mem_plan() in expressions


def test_mem_plan_in_expressions() -> None:
    tree = compile_expr("mem_plan(mamba_per_req_mb=per_req, mamba_slots=slots)")
    p = evaluate(tree, {**seed(0.8), "per_req": 140.0, "slots": -2})
    assert p["mem_fraction_static"] == 0.89
    # an argument whose names this log lacks is left out: the plan works from the facts
    assert evaluate(tree, seed(0.8))["failure_kind"] == "mamba-negative"
    with pytest.raises(MissingValue):  # no readings: unknown, like any missing fact
        evaluate(tree, {"per_req": 140.0})
    with pytest.raises(MissingValue):  # a keyword it does not take
        evaluate(compile_expr("mem_plan(per_request=1)"), seed(0.8))
    for src in ("mem_plan(1)", "min(a=1)", "mem_plan(**x)"):
        with pytest.raises(ExpressionError):
            compile_expr(src)


RULE = """\
id: test-mem-plan
code: SGD9001
title: test rule using mem_plan
severity: error
family: memory
versions: 0.5.14-0.5.23
sources: [test]
match:
  any:
    - regex: 'Computed max_mamba_cache_size=(?P<slots>-?\\d+) \\(total_rest_memory=[-0-9.]+ GB, mamba_cache_per_req=(?P<per_req>[0-9.]+) MB\\)'
let:
  plan: mem_plan(mamba_per_req_mb=per_req, mamba_slots=slots)
explanation:
  - "{plan.outcome}"
fixes:
  - kind: flag
    flag: --mem-fraction-static
    action: raise
    value: "{plan.mem_fraction_static:.2f}"
  - kind: flag
    flag: --context-length
    action: lower
    value: "20480"
    combined: true
  - kind: flag
    flag: --tp-size
    action: raise
docs: {what: a, why: b, fix: c}
"""


def _rule(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "rules" / "test"
    d.mkdir(parents=True)
    (d / "test-mem-plan.yaml").write_text(text)
    return tmp_path / "rules"


def test_a_user_rule_reads_the_record_and_combines_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          demo_dir: Path) -> None:
    isolate(tmp_path, monkeypatch)
    rules = _rule(tmp_path, RULE)
    assert run(["rules", "lint", "--rules", rules, "--only-user"]).exit_code == 0
    r = run(["--rules", rules, "--no-baseline", demo_dir / "qwen3.6-27b-mamba-mfs-0.80.log"])
    block = r.stdout[r.stdout.index("SGD9001"):]
    assert "at 0.89 the pools get 4.16 − 23.21 × (1 − 0.89) = 1.61 GB" in block
    assert "  fix: --mem-fraction-static 0.8 → 0.89\n  and: --context-length 32768 → 20480\n  or:  raise --tp-size" in block
    # the corrected command applies the first fix and the one combined with it, not the alternative
    assert "--mem-fraction-static 0.89 --context-length 20480" in r.stdout and "--tp-size" not in r.stdout.split(
        "corrected command:")[1]


def test_lint_checks_the_record_fields_and_keywords(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)
    bad = RULE.replace("mamba_slots=slots", "slot_count=slots").replace("{plan.outcome}", "{plan.outcom}")
    r = run(["rules", "lint", "--rules", _rule(tmp_path, bad), "--only-user"])
    assert r.exit_code == 1
    assert "mem_plan() takes no argument 'slot_count'" in r.stdout and "'plan.outcom' is used but" in r.stdout
    assert "plan.mem_fraction_static" not in r.stdout  # a field of the record is defined


def test_the_model_is_not_imported_by_a_run_that_does_not_need_it(demo_dir: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from sglang_doctor.pipeline.run import diagnose, Options; "
            "from sglang_doctor.engine.rules import load_rules; "
            f"diagnose([{str(demo_dir / 'qwen3.6-27b-awq-dtype-crash.log')!r}], load_rules(), Options()); "
            "print(sorted(m for m in sys.modules if 'memory' in m))")
    seen = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "memory_model" in seen  # SGD128 fires on the dtype-crash log: the plan was needed
    quiet = code.replace("qwen3.6-27b-awq-dtype-crash.log", "qwen3.6-27b-mamba-mfs-0.88.log")
    assert "memory_model" in subprocess.run([sys.executable, "-c", quiet], capture_output=True, text=True,
                                            check=True).stdout
    healthy = sorted(Path(__file__).parent.glob("data/healthy/*.log"))[0]
    none = code.replace(str(demo_dir / "qwen3.6-27b-awq-dtype-crash.log"), str(healthy))
    assert "memory_model" not in subprocess.run([sys.executable, "-c", none], capture_output=True, text=True,
                                                check=True).stdout


def test_the_searches_copy_of_a_model_is_the_one_replace_builds() -> None:
    """memory_plan._sized stands in for dataclasses.replace in the searches: it is only right while
    ModelInfo has init fields alone and no __post_init__."""
    import dataclasses

    from sglang_doctor.fix.memory_plan import _sized
    from sglang_doctor.launch.model_dir import LinearState, ModelInfo

    assert not hasattr(ModelInfo, "__post_init__") and all(f.init for f in dataclasses.fields(ModelInfo))
    m = ModelInfo(name="m", architectures=("A",), model_type="t", num_layers=4, num_heads=8, num_kv_heads=2,
                  head_dim=64, v_head_dim=64, hidden_size=512, context_len=4096,
                  linear=LinearState("gdn", 3, 1, 1, 1, 1, 1, 4), kv_cell_bytes=1 << 20)
    got = _sized(m, kv_cell_bytes=77, mamba_state_bytes=5)
    assert got == dataclasses.replace(m, kv_cell_bytes=77, mamba_state_bytes=5) and got is not m
    assert m.kv_cell_bytes == 1 << 20 and hash(got) == hash(dataclasses.replace(got))


@pytest.mark.parametrize("answer", [None, 1, 2, 99, 100, 101, 5000, (1 << 34) - 1, 1 << 34])
@pytest.mark.parametrize("likely", [None, 2, 100, 1 << 20])
def test_the_bounded_search_finds_what_the_whole_range_does(answer, likely):
    """A `likely` bound only orders the search: an answer above it is still found."""
    from sglang_doctor.fix.memory_plan import _largest

    calls = []

    def fits(x: int) -> bool:
        calls.append(x)
        return answer is not None and x <= answer

    assert _largest(fits, 1, 1 << 34, likely) == answer
    if likely == 100 and answer is not None and answer < 100:
        assert len(calls) <= 9  # the search stayed under the bound
