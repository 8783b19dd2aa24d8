"""Combinations SGLang itself rejects (data/rejected-combinations.yaml) are never made by a fix: the
fixer takes the finding's next fix and says why (issue 16, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers_cli import run

from sglang_doctor.fix.combinations import combinations, created_by
from sglang_doctor.fix.correct import correct
from sglang_doctor.launch.command import parse_command, render
from sglang_doctor.model import Finding, FixOut
from sglang_doctor.registry import flags

LAUNCH = "python3 -m sglang.launch_server --model-path m"
DTYPE = FixOut(kind="flag", flag="--dtype", action="set", value="bfloat16")
CONV = FixOut(kind="env", name="SGLANG_MAMBA_CONV_DTYPE", action="set", value="float16")
DEMO = Path(__file__).resolve().parents[1] / "sglang_doctor" / "fixtures" / "demo" / "qwen3.6-27b-awq-dtype-crash.log"


def dtype_crash() -> Finding:
    return Finding(rule="index-put-dtype-mismatch", code="SGD401", severity="error", title="t", explanation="e",
                   fixes=[DTYPE, CONV])


def test_the_data_names_real_flags_and_values() -> None:
    for c in combinations():
        rels = flags.releases_in_range(c.releases)
        assert rels, c.id
        for flag, values in c.flags.items():
            for rel in (rels[0], rels[-1]):
                spec = flags.resolve(flag, rel, allow_abbrev=False)
                assert spec is not None, (c.id, flag, rel)
                assert not spec.choices or set(values) <= {str(x) for x in spec.choices}, (c.id, flag, rel)


def test_awq_with_bfloat16_is_refused_and_the_next_fix_taken() -> None:
    found = correct(f"{LAUNCH} --quantization awq", [dtype_crash()], version="0.5.14")
    assert found is not None
    assert render(found.command) == f"SGLANG_MAMBA_CONV_DTYPE=float16 {LAUNCH} --quantization awq"
    assert found.kind == "corrected"  # the next fix of the root cause is the root cause's fix
    assert found.notes and found.notes[0].startswith("--dtype bfloat16 left out: ")
    assert "is not supported for quantization method awq" in found.notes[0]


def test_quantization_from_the_log_counts_and_marlin_does_not() -> None:
    cmd = parse_command(LAUNCH)
    assert cmd is not None
    assert created_by(DTYPE, cmd, {"quantization": "gptq"}, ["0.5.14"]) is not None
    assert created_by(DTYPE, cmd, {"quantization": "awq_marlin"}, ["0.5.14"]) is None
    found = correct(LAUNCH, [dtype_crash()], version="0.5.14", server_args={"quantization": "awq"})
    assert found is not None and "SGLANG_MAMBA_CONV_DTYPE=float16" in render(found.command)


def test_a_combination_the_user_wrote_is_not_blamed_on_a_fix() -> None:
    cmd = parse_command(f"{LAUNCH} --quantization awq --dtype bfloat16")
    assert cmd is not None
    assert created_by(FixOut(kind="flag", flag="--port", action="set", value="1"), cmd, {}, ["0.5.14"]) is None


def test_the_issue_example_through_the_cli(tmp_path) -> None:
    log = tmp_path / "awq.log"
    log.write_text(DEMO.read_text().replace("--cuda-graph-max-bs-decode 8", "--cuda-graph-max-bs-decode 8 --quantization awq", 1))
    rep = json.loads(run(["check", str(log), "--no-baseline", "--format", "json"]).stdout)
    assert "--dtype" not in rep["corrected_command"]
    assert "-e SGLANG_MAMBA_CONV_DTYPE=float16" in rep["corrected_command"]
    assert rep["context"]["corrected_command_left_out"][0].startswith("--dtype bfloat16 left out")
    text = run(["check", str(log), "--no-baseline", "--no-color"]).stdout
    assert "(--dtype bfloat16 left out: the plain AWQ and GPTQ kernels take float16 activations only" in text


def _backend_fixes() -> Finding:
    return Finding(rule="r", code="SGD000", severity="error", title="t", explanation="e",
                   fixes=[FixOut(kind="flag", flag="--attention-backend", action="set", value="fa3"),
                          FixOut(kind="flag", flag="--attention-backend", action="set", value="triton")])


def test_a_gpu_bound_backend_is_refused_on_another_gpu() -> None:
    cmd = parse_command(LAUNCH)
    assert cmd is not None
    fa3 = _backend_fixes().fixes[0]
    turing = created_by(fa3, cmd, {"gpu.sm": 75}, ["0.5.14"])
    assert turing is not None and turing.id == "fa3-outside-sm80-sm90"
    assert created_by(fa3, cmd, {"gpu.sm": 90}, ["0.5.14"]) is None
    assert created_by(fa3, cmd, {"gpu.sm": 100}, ["0.5.23"]) is not None  # Blackwell: not sm8x/sm90 either
    assert created_by(fa3, cmd, {}, ["0.5.14"]) is None  # a GPU the log does not name: not assumed
    mla = FixOut(kind="flag", flag="--attention-backend", action="set", value="trtllm_mla")
    assert created_by(mla, cmd, {"gpu.sm": 120}, ["0.5.5.post3"]) is not None  # sm100 only there
    assert created_by(mla, cmd, {"gpu.sm": 120}, ["0.5.14"]) is None  # SM12x joins in 0.5.14


def test_the_next_backend_is_taken_on_a_gpu_that_refuses_the_first() -> None:
    found = correct(LAUNCH, [_backend_fixes()], version="0.5.14", server_args={"gpu.sm": 75})
    assert found is not None and "--attention-backend triton" in render(found.command)
    assert any("FlashAttention v3 Backend requires SM>=80" in n for n in found.notes)
    hopper = correct(LAUNCH, [_backend_fixes()], version="0.5.14", server_args={"gpu.sm": 90})
    assert hopper is not None and "--attention-backend fa3" in render(hopper.command)


def test_fp8_is_refused_below_sm80_and_torch_compile_without_graph_padding() -> None:
    cmd = parse_command(LAUNCH)
    assert cmd is not None
    fp8 = FixOut(kind="flag", flag="--quantization", action="set", value="fp8")
    t4 = created_by(fp8, cmd, {"gpu.sm": 75}, ["0.5.14"])
    assert t4 is not None and t4.id == "quantization-below-sm80"
    assert created_by(fp8, cmd, {"gpu.sm": 86}, ["0.5.14"]) is None
    compile_ = FixOut(kind="flag", flag="--enable-torch-compile", action="add")
    padded = parse_command(f"{LAUNCH} --disable-cuda-graph-padding")
    assert padded is not None
    combo = created_by(compile_, padded, {}, ["0.5.14"])
    assert combo is not None and combo.id == "torch-compile-without-cuda-graph-padding"
    assert created_by(compile_, padded, {}, ["0.5.5.post3"]) is None  # not refused before 0.5.14
    assert created_by(compile_, cmd, {}, ["0.5.14"]) is None


def test_fp8_with_the_cutlass_moe_runner_is_refused_off_hopper_and_blackwell() -> None:
    # fp8 on sm80-sm88 itself is not refused (Marlin takes it on its own); the CUTLASS MoE runner is
    fp8 = parse_command(f"{LAUNCH} --quantization fp8")
    assert fp8 is not None
    cutlass = FixOut(kind="flag", flag="--moe-runner-backend", action="set", value="cutlass")
    ampere = created_by(cutlass, fp8, {"gpu.sm": 86}, ["0.5.14"])
    assert ampere is not None and ampere.id == "fp8-cutlass-moe-outside-sm90"
    assert created_by(cutlass, fp8, {"gpu.sm": 89}, ["0.5.23"]) is not None  # Ada fails the SM90/100/120 assert
    assert created_by(cutlass, fp8, {"gpu.sm": 90}, ["0.5.14"]) is None
    assert created_by(cutlass, fp8, {"gpu.sm": 120}, ["0.5.23"]) is None
    plain = parse_command(LAUNCH)
    assert plain is not None and created_by(cutlass, plain, {"gpu.sm": 86}, ["0.5.14"]) is None  # not an fp8 model
    assert created_by(cutlass, plain, {"gpu.sm": 86, "quantization": "fp8"}, ["0.5.14"]) is not None  # the log's
