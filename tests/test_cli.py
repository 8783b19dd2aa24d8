"""The CLI through click's runner: formats, exit codes, explain, rules commands, bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sglang_doctor.cli.main import main
from sglang_doctor.model import Report, from_json


def run(args, input=None):
    return CliRunner().invoke(main, args, input=input, catch_exceptions=False)


def test_demo_prints_the_dtype_fix(demo_dir):
    r = run([str(demo_dir / "qwen3.6-27b-awq-dtype-crash.log")])
    assert r.exit_code == 1
    assert "SGD401" in r.output and "--dtype auto → bfloat16" in r.output
    assert "corrected command" in r.output and "--dtype bfloat16" in r.output


def test_stdin_docker_logs_with_timestamps(demo_dir):
    text = (demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_text()
    stamped = "".join(f"2026-05-02T09:14:{i % 60:02d}.123456789Z {ln}\n" for i, ln in enumerate(text.splitlines()))
    r = run(["--format", "json"], input=stamped)
    report = from_json(Report, json.loads(r.output))
    first = report.findings[0]
    assert first.rule == "index-put-dtype-mismatch"
    fix = first.fixes[0]
    assert (fix.kind, fix.flag, fix.action, fix.value) == ("flag", "--dtype", "set", "bfloat16")


def test_json_contract_shape(demo_dir):
    r = run(["--format", "json", str(demo_dir / "qwen3.6-27b-mamba-mfs-0.80.log")])
    data = json.loads(r.output)
    assert data["schema"] == "sglang-doctor/report/v1"
    assert data["tool"]["name"] == "sglang-doctor"
    assert data["inputs"][0]["lines"] > 10
    f = data["findings"][0]
    assert f["code"] == "SGD104" and f["severity"] == "error"
    assert f["evidence"][0]["line"] == 16 and "max_mamba_cache_size=-2" in f["evidence"][0]["text"]
    assert f["captures"]["max_mamba_cache_size"] == "-2"
    assert f["fixes"][0] == {"kind": "flag", "flag": "--mem-fraction-static", "action": "raise",
                             "from": "0.8", "value": "0.89"}
    assert data["summary"]["error"] == 1 and data["summary"]["warning"] == 0  # SIGQUIT etc. are info
    assert data["context"]["server_args"]["mem_fraction_static"] == 0.8


def test_mamba_too_small_computes_fraction(demo_dir):
    r = run(["--format", "json", str(demo_dir / "qwen3.6-27b-mamba-mfs-0.88.log")])
    f = json.loads(r.output)["findings"][0]
    assert f["rule"] == "hybrid-mamba-cache-too-small"
    assert f["fixes"][0]["value"] == "0.90" and f["fixes"][0]["from"] == "0.88"
    assert "at 0.90 the pools get 4.16 − 23.21 × (1 − 0.90) = 1.84 GB: 5 mamba slots of ≤166.7 MB = 1 request" \
        in f["explanation"]


def test_clean_log_says_so_in_one_line_and_exits_0(tmp_path):
    p = tmp_path / "ok.log"
    p.write_text("[2025-01-01 10:00:00] The server is fired up and ready to roll!\n")
    r = run([str(p), "-q"])
    assert r.exit_code == 0 and "no known problem" in r.output


@pytest.mark.parametrize("fail_on, code", [("error", 0), ("info", 1), ("never", 0)])
def test_fail_on(tmp_path, fail_on, code):
    p = tmp_path / "info.log"
    p.write_text("Acceleration for non-quantized schemes is not supported by Compressed Tensors. "
                 "Falling back to UnquantizedLinearMethod\n")
    assert run([str(p), "--fail-on", fail_on]).exit_code == code


def test_explain_arguments_and_stdin():
    r = run(["explain", "RuntimeError: Index put requires the source and destination dtypes match, "
             "got BFloat16 for the destination and Half for the source."])
    assert r.exit_code == 1 and "--dtype" in r.output
    r = run(["explain", "--format", "json"], input="RuntimeError: Not enough memory. Please try to increase "
            "--mem-fraction-static. Current value: mem_fraction_static=0.2\n")
    assert json.loads(r.output)["findings"][0]["rule"] == "kv-pool-not-enough-memory"


def test_explain_unknown_error_is_the_crash_net_not_clean():
    """explain runs check's analysis: an error no rule knows is SGD739 quoting it, exit 1, never ✓."""
    r = CliRunner().invoke(main, ["explain", "ZeroDivisionError: something nobody has seen"])
    assert r.exit_code == 1
    assert "SGD739" in r.output and "ZeroDivisionError: something nobody has seen" in r.output
    assert "no known problem" not in r.output


@pytest.mark.parametrize("text", ["CUDA out of memory.", "something failed while loading"])
def test_explain_help_example_and_plain_error_text_are_not_clean(text):
    r = CliRunner().invoke(main, ["explain", text])
    assert r.exit_code == 1 and "no known problem" not in r.output


def test_explain_of_text_that_is_no_error_is_clean_with_a_warning():
    r = CliRunner().invoke(main, ["explain", "hello there"])
    assert r.exit_code == 0 and "no SGLang launch found" in r.output


def test_missing_file_is_exit_2_but_others_processed(tmp_path, demo_dir):
    demo = str(demo_dir / "qwen3.6-27b-awq-dtype-crash.log")
    r = CliRunner().invoke(main, [str(tmp_path / "nope.log"), demo, "--fail-on", "never"])
    assert r.exit_code == 2
    assert "nope.log: no such file" in r.output
    assert "SGD401" in r.output
    # A failing finding in the inputs that could be read decides the status: 1, not 2.
    assert CliRunner().invoke(main, [str(tmp_path / "nope.log"), demo]).exit_code == 1


def test_binary_junk_does_not_crash(tmp_path):
    p = tmp_path / "junk.log"
    p.write_bytes(bytes(range(256)) * 50 + b"\x00\xff\xfe")
    r = CliRunner().invoke(main, [str(p)])
    assert r.exit_code == 0 and (r.exception is None or isinstance(r.exception, SystemExit)), r.output


def test_broken_user_rule_is_exit_2_one_line(tmp_path, demo_dir):
    d = tmp_path / "r"
    d.mkdir()
    (d / "bad.yaml").write_text("id: bad\ncode: nope\n")
    r = CliRunner().invoke(main, ["--rules", str(d), str(demo_dir / "qwen3.6-27b-awq-dtype-crash.log")])
    assert r.exit_code == 2
    err = [ln for ln in r.output.splitlines() if ln.startswith("sglang-doctor:")]
    assert len(err) == 1 and "bad.yaml" in err[0]


def test_rules_list_and_show():
    r = run(["rules", "list"])
    assert "SGD401" in r.output and "index-put-dtype-mismatch" in r.output
    r = run(["rules", "show", "SGD104"])
    assert "## How to fix it" in r.output and "--mem-fraction-static" in r.output
    assert CliRunner().invoke(main, ["rules", "show", "nope"]).exit_code == 2


def test_secrets_never_printed(tmp_path):
    p = tmp_path / "s.log"
    p.write_text("# cmd: python3 -m sglang.launch_server --model-path m --api-key sk-abcdefghijklmnop1234 --mem-fraction-static 0.2\n"
                 "[2025-01-01 10:00:00] server_args=ServerArgs(model_path='m', api_key='sk-abcdefghijklmnop1234', "
                 "mem_fraction_static=0.2, hf_token='hf_abcdefghijklmnopqrstuvwxyz')\n"
                 "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n")
    for fmt in ("text", "json"):
        r = run([str(p), "--format", fmt])
        assert "sk-abcdefghijklmnop1234" not in r.output and "hf_abcdefghijklmnopqrstuvwxyz" not in r.output
        assert "mem-fraction-static" in r.output


def test_rules_show_prints_the_yaml_and_the_fixtures_on_request(tmp_path):
    import yaml

    from sglang_doctor.engine.rules import load_rules

    page = run(["rules", "show", "SGD401"]).stdout
    assert page.startswith("# SGD401 index-put-dtype-mismatch") and "id: index-put" not in page
    src = run(["rules", "show", "index-put-dtype-mismatch", "--yaml"]).stdout
    assert yaml.safe_load(src)["code"] == "SGD401"  # the file itself: a template to copy
    (tmp_path / "r" / "precision").mkdir(parents=True)
    (tmp_path / "r" / "precision" / "copy.yaml").write_text(src.replace("index-put-dtype-mismatch", "copy")
                                                              .replace("SGD401", "SGD1401"))
    assert [r.code for r in load_rules([str(tmp_path / "r")], builtin=False)] == ["SGD1401"]
    fx = run(["rules", "show", "SGD401", "--fixtures"]).stdout
    heads = [ln for ln in fx.splitlines() if ln.startswith("==> ")]
    assert len(heads) == 5 and any(h.endswith("fires-pasted-error.log <==") for h in heads)
    assert "got BFloat16 for the destination and Half for the source" in fx


def test_the_same_file_given_twice_is_analysed_once(tmp_path, demo_dir, monkeypatch):
    import json
    import shutil

    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    shutil.copy(demo_dir / "qwen3.6-27b-awq-dtype-crash.log", tmp_path / "logs" / "a.log")
    r = run(["--format", "json", "logs/a.log", "./logs/a.log", str(tmp_path / "logs" / "a.log"), "logs"])
    data = json.loads(r.stdout)
    assert [i["name"] for i in data["inputs"]] == ["logs/a.log"]
    assert [f["code"] for f in data["findings"]].count("SGD401") == 1
