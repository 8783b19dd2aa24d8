"""`sglang-doctor preflight` end to end: real Hugging Face layouts, the GPU sources, every format,
the exit codes and the one-line input errors."""

from __future__ import annotations

import json
import os
import stat
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from checkpoints import write_checkpoint, write_hf_cache
from helpers_cli import isolate, run

CONFIGS = Path(__file__).resolve().parent / "data" / "model_configs"
SCHEMA = json.loads((resources.files("sglang_doctor") / "data" / "report-v1.schema.json").read_text())
QWEN7B = json.loads((CONFIGS / "qwen2.5-7b.json").read_text())  # Qwen/Qwen2.5-7B: 131,072-token context
LAUNCH = "python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --port 30000"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + os.environ.get("PATH", ""))
    (tmp_path / "bin").mkdir()


def no_nvidia_smi(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # nothing else: no nvidia-smi


def fake_nvidia_smi(tmp_path: Path, line: str) -> None:
    script = tmp_path / "bin" / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho '{line}'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture()
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Qwen/Qwen2.5-7B in an HF cache under HF_HOME: blobs, refs/main, a snapshot of symlinks."""
    snap = write_hf_cache(tmp_path / "hf" / "hub", "Qwen/Qwen2.5-7B", QWEN7B)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    return snap


def valid(data: dict) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)]
    assert not errors, errors[:5]


def test_model_from_the_hf_cache_text_report_with_the_plan_block(hub: Path) -> None:
    r = run(["preflight", "--cmd", LAUNCH, "--gpu", "RTX 4090", "--sglang", "0.5.14"])
    assert r.exit_code == 0, r.stderr  # it starts: the short pool is a warning
    out = r.stdout
    plan = out.split("\n\n")[0]
    assert plan.startswith("plan: SGLang 0.5.14 (given) · Qwen2ForCausalLM · RTX 4090 24.0 GiB")
    assert "weights      14.34 GB per GPU (safetensors headers, 4 file(s))" in plan
    assert "KV pool      92,756 tokens (57,344 bytes per token, bfloat16)" in plan
    assert "context      131,072 tokens vs a pool of 92,756" in plan and "outcome      starts" in plan
    assert "warning SGD128" in out and "fix: --context-length 92160" in out
    assert "corrected command:\n  python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --port 30000 " \
           "--context-length 92160" in out


def test_json_has_the_preflight_object_and_validates(hub: Path) -> None:
    r = run(["preflight", "--cmd", LAUNCH, "--gpu", "RTX 4090", "--sglang", "0.5.14", "--format", "json"])
    data = json.loads(r.stdout)
    valid(data)
    assert data["preflight"] == {"sglang_version": "0.5.14", "mem_fraction_static": 0.833, "weights_gb": 14.34,
                                 "kv_tokens": 92756, "mamba_slots": None, "max_running_requests": 2048,
                                 "context_len": 131072, "outcome": "ok", "failure": None}
    assert data["context"]["plan"]["model"]["dir"] == str(hub)
    assert data["findings"][0]["docs"] == "docs/rules/SGD128-kv-pool-smaller-than-context.md"


def test_a_predicted_failure_exits_1_and_the_corrected_command_is_predicted_to_work(hub: Path) -> None:
    cmd = LAUNCH + " --mem-fraction-static 0.6"  # 8.8 GB free after the weights, 23.2 x 0.4 kept back
    r = run(["preflight", "--cmd", cmd, "--gpu", "RTX 4090", "--sglang", "0.5.14", "--format", "json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    valid(data)
    p = data["preflight"]
    assert p["outcome"] == "fail" and p["failure"].startswith(
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.6.")
    fixed = data["corrected_command"]
    # no fraction holds 131,072 tokens: the release default (not the failing 0.6) and the context capped to it
    assert fixed.endswith("--mem-fraction-static 0.833 --context-length 92160")
    again = run(["preflight", "--cmd", fixed, "--gpu", "RTX 4090", "--sglang", "0.5.14", "--format", "json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["preflight"]["outcome"] == "ok"
    assert json.loads(again.stdout)["findings"] == []
    # --fail-on never: the same prediction, exit 0
    assert run(["preflight", "--cmd", cmd, "--gpu", "RTX 4090", "--sglang", "0.5.14", "--fail-on", "never"]).exit_code == 0


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown", "junit"])
def test_every_format(hub: Path, fmt: str) -> None:
    cmd = LAUNCH + " --mem-fraction-static 0.6 --api-key sk-very-secret-123"
    r = run(["preflight", "--cmd", cmd, "--gpu", "RTX 4090", "--sglang", "0.5.14", "--format", fmt])
    assert r.exit_code == 1 and "sk-very-secret-123" not in r.stdout
    if fmt == "json":
        valid(json.loads(r.stdout))
    elif fmt == "sarif":
        sarif_run = json.loads(r.stdout)["runs"][0]
        res = sarif_run["results"]
        assert [x["ruleId"] for x in res] == ["SGD101", "SGD128"][:len(res)] and res[0]["level"] == "error"
        assert sarif_run["properties"]["preflight"]["outcome"] == "fail"
        assert any(d["id"] == "SGD101" and d.get("helpUri") for d in sarif_run["tool"]["driver"]["rules"])
    elif fmt == "junit":
        tree = ET.fromstring(r.stdout)
        assert tree.find(".//failure") is not None
        assert tree.find(".//property[@name='preflight.outcome']").get("value") == "fail"
    elif fmt == "github":
        assert r.stdout.startswith("::error ") and "SGD101" in r.stdout
    elif fmt == "markdown":
        assert "### error SGD101" in r.stdout and "--mem-fraction-static 0.6 → 0.833" in r.stdout
        assert "### Predicted memory plan" in r.stdout and "| KV pool (tokens) |" not in r.stdout  # fails first
    else:
        assert "fails: ValueError: Loaded weights leave no GPU memory" in r.stdout
        assert "$SGLANG_API_KEY" in r.stdout


def test_model_dir_forms(tmp_path: Path, hub: Path) -> None:
    plain = tmp_path / "Qwen2.5-7B"
    write_checkpoint(plain, QWEN7B, shards=4)
    repo = hub.parent.parent  # hub/models--Qwen--Qwen2.5-7B: the cache's repository folder
    for d in (plain, hub, repo):
        r = run(["preflight", "--model-dir", d, "--cmd", "--context-length 32768", "--gpu-mem", "24",
                 "--sglang", "0.5.14", "--format", "json"])
        assert r.exit_code == 0, r.stderr
        p = json.loads(r.stdout)["preflight"]
        assert (p["weights_gb"], p["context_len"], p["outcome"]) == (14.34, 32768, "ok")
    local = run(["preflight", "--cmd", f"python -m sglang.launch_server --model-path {plain}", "--gpu-mem", "24",
                 "--format", "json"])
    assert json.loads(local.stdout)["preflight"]["weights_gb"] == 14.34


def test_cmd_file_script(tmp_path: Path, hub: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nset -e\nexport HF_HUB_ENABLE_HF_TRANSFER=1\n"
                      "python3 -m sglang.launch_server \\\n  --model-path Qwen/Qwen2.5-7B \\\n"
                      "  --mem-fraction-static 0.6 \\\n  --port 30000\n")
    r = run(["preflight", "--cmd-file", script, "--gpu", "RTX 4090", "--sglang", "0.5.14", "--format", "json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert data["inputs"][0]["name"] == str(script) and data["preflight"]["outcome"] == "fail"


def test_gpu_from_nvidia_smi(tmp_path: Path, hub: Path) -> None:
    fake_nvidia_smi(tmp_path, "NVIDIA GeForce RTX 4090, 24564, 20000, 8.9")
    r = run(["preflight", "--cmd", LAUNCH, "--sglang", "0.5.14", "--format", "json"])
    plan = json.loads(r.stdout)["context"]["plan"]
    assert plan["gpu"] == {"name": "NVIDIA GeForce RTX 4090", "total_gb": 23.99, "free_gb": 19.53, "count": 1,
                           "compute_capability": "8.9", "source": "nvidia-smi"}
    assert plan["memory"]["free_gb_before_load"] < 19.53  # planned from what is free now, not the total


def test_only_the_free_memory_given(tmp_path: Path, hub: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_nvidia_smi(monkeypatch, tmp_path)
    r = run(["preflight", "--cmd", LAUNCH, "--gpu-free", "20", "--sglang", "0.5.14", "--format", "json"])
    plan = json.loads(r.stdout)["context"]["plan"]
    assert (plan["gpu"]["total_gb"], plan["gpu"]["free_gb"]) == (20.0, 20.0)  # the total is at least what is free
    fake_nvidia_smi(tmp_path, "NVIDIA GeForce RTX 4090, 24564, 23000, 8.9")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    r = run(["preflight", "--cmd", LAUNCH, "--gpu-free", "20", "--sglang", "0.5.14", "--format", "json"])
    gpu = json.loads(r.stdout)["context"]["plan"]["gpu"]
    assert (gpu["total_gb"], gpu["free_gb"], gpu["compute_capability"]) == (23.99, 20.0, "8.9")


def test_an_invalid_choice_fails_with_argparse_words(hub: Path) -> None:
    r = run(["preflight", "--cmd", LAUNCH + " --kv-cache-dtype fp9", "--gpu-mem", "24", "--sglang", "0.5.14",
             "--format", "json"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["preflight"]["failure"].startswith(
        "error: argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'fp8_e5m2'")


def test_no_gpu_information_is_one_line_naming_what_to_pass(tmp_path: Path, hub: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    no_nvidia_smi(monkeypatch, tmp_path)
    r = run(["preflight", "--cmd", LAUNCH])
    assert r.exit_code == 2 and r.stdout == ""
    line = r.stderr.strip()
    assert "\n" not in line and "nvidia-smi is not available" in line and "--gpu-mem GIB" in line and "--gpu NAME" in line
    unknown = run(["preflight", "--cmd", LAUNCH, "--gpu", "Voodoo 5"])
    assert unknown.exit_code == 2 and "--gpu 'Voodoo 5': not a GPU this tool knows" in unknown.stderr


@pytest.mark.parametrize("setup, expect", [
    ("missing", "no config.json"),
    ("not-json", "config.json: not JSON"),
    ("a-list", "config.json: not a JSON object"),
    ("bad-shard", "safetensors"),
])
def test_bad_model_dirs_are_one_line_errors(tmp_path: Path, setup: str, expect: str) -> None:
    d = tmp_path / "m"
    d.mkdir()
    if setup == "not-json":
        (d / "config.json").write_text("{'architectures': ")
    elif setup == "a-list":
        (d / "config.json").write_text("[1, 2]")
    elif setup == "bad-shard":
        (d / "config.json").write_text(json.dumps(QWEN7B))
        (d / "model.safetensors").write_bytes(b"\xff" * 64)
    r = run(["preflight", "--model-dir", d, "--gpu-mem", "24"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and expect in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, expect", [
    (["--cmd", "echo hello"], "no SGLang server launch in 'echo hello'"),
    (["--cmd", "python -m sglang_router.launch_router --worker-urls http://a:30000"], "no SGLang server launch"),
    (["--cmd", "python -m sglang.launch_server --model-path Qwen/Absent"], "'Qwen/Absent' is neither a local directory"),
    (["--cmd", "x", "--cmd-file", "y"], "--cmd or --cmd-file"),
    (["--cmd-file", "missing.sh"], "missing.sh: No such file"),
    ([], "no model directory"),
])
def test_usage_errors(tmp_path: Path, args: list[str], expect: str) -> None:
    r = run(["preflight", *args, "--gpu-mem", "24"])
    assert r.exit_code == 2 and expect in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_static_checks_through_the_cli(tmp_path: Path) -> None:
    d = tmp_path / "m"
    write_checkpoint(d, QWEN7B, shards=2)  # 28 heads, 4 KV heads
    r = run(["preflight", "--model-dir", d, "--cmd", "--tp-size 3 --context-length 262144 --no-such-flag",
             "--gpu-mem", "80", "--gpus", "4", "--sglang", "0.5.14", "--format", "json"])
    codes = [(f["code"], f["rule"]) for f in json.loads(r.stdout)["findings"]]
    assert ("SGD990", "launch-flag-unknown") in codes and ("SGD124", "context-length-exceeds-model") in codes
    assert ("SGD301", "tp-not-divisible") in codes and r.exit_code == 1
