"""A --tp-size fix gets a value, not a direction (issue 16, item 7): a size that splits the model's
heads and KV heads when its config.json is known (--model-dir, the model path, the HF cache), else
a divisor of the dimension the message names; never the size that failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers_cli import run

from sglang_doctor.fix.tp_values import tp_choices, with_tp_values
from sglang_doctor.launch.model_dir import parse_config
from sglang_doctor.model import Evidence, Finding, FixOut

LOG = (Path(__file__).resolve().parent.parent / "sglang_doctor" / "rules" / "parallelism" / "tp-not-divisible"
       / "fires-0.5.5-qwen-28-heads-tp8.log")
# Qwen/Qwen2.5-7B-Instruct's config.json (the shapes that matter)
QWEN_7B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
           "intermediate_size": 18944, "num_attention_heads": 28, "num_key_value_heads": 4,
           "num_hidden_layers": 28, "max_position_embeddings": 32768, "vocab_size": 152064,
           "torch_dtype": "bfloat16"}


def _finding(value: str | None, numerator: str = "28", denominator: str = "8") -> Finding:
    return Finding(rule="tp-not-divisible", code="SGD301", severity="error", title="t", explanation="e",
                   evidence=[Evidence(input=0, line=1, text="x")],
                   captures={"numerator": numerator, "denominator": denominator},
                   fixes=[FixOut(kind="flag", flag="--tp-size", action="set", value=value, text="a size")])


def test_the_size_that_failed_is_never_the_value() -> None:
    [f] = with_tp_values([_finding("8")], {"tp_size": 8}, None)
    fix = f.fixes[0]
    assert fix.value == "7" and "8" not in fix.text.split(": ")[-1]
    assert fix.text == "a size (sizes below 8 that divide 28: 7, 4, 2, 1)"


def test_a_direction_gets_the_largest_size_that_splits_the_model() -> None:
    model = parse_config(QWEN_7B, "Qwen2.5-7B-Instruct")
    [f] = with_tp_values([_finding(None)], {"tp_size": 8}, model)
    fix = f.fixes[0]
    assert fix.value == "4"  # 7 divides 28 heads but not the 4 KV heads: not offered
    assert fix.text == "a size (sizes below 8 that split Qwen2.5-7B-Instruct's 28 heads and 4 KV heads: 4, 2, 1)"
    assert tp_choices(8, model, [])[0] == [4, 2, 1]


def test_the_rules_value_is_kept_when_it_splits_the_model() -> None:
    [f] = with_tp_values([_finding("2")], {"tp_size": 8}, parse_config(QWEN_7B, "q"))
    assert f.fixes[0].value == "2"


def test_a_message_dividing_by_another_size_is_left_alone() -> None:
    f = _finding(None, denominator="4")  # attention TP (--tp-size 8 / --dp-size 2): not --tp-size's value
    assert with_tp_values([f], {"tp_size": 8}, None) == [f]


@pytest.mark.parametrize("how", ["model-dir", "hf-cache"])
def test_check_reads_the_models_config(tmp_path: Path, how: str) -> None:
    if how == "model-dir":
        model = tmp_path / "Qwen2.5-7B-Instruct"
        args, env = ["--model-dir", str(model)], {}
    else:
        model = tmp_path / "hub" / "models--Qwen--Qwen2.5-7B-Instruct" / "snapshots" / "0123abc"
        args, env = [], {"HF_HUB_CACHE": str(tmp_path / "hub")}
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps(QWEN_7B))
    rep = json.loads(run(["check", str(LOG), "--no-baseline", "--format", "json", *args], env=env).stdout)
    [fix] = [x for f in rep["findings"] if f["rule"] == "tp-not-divisible" for x in f["fixes"] if x["flag"] == "--tp-size"]
    assert fix["value"] == "4" and "28 heads and 4 KV heads: 4, 2, 1)" in fix["text"]
    assert "--tp-size 4" in rep["corrected_command"]
