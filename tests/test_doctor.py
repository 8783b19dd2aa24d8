"""Whole-run behaviour: release-aware flags, version inference, root cause first."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.pipeline.run import Options, diagnose

PERF = Path(__file__).resolve().parent.parent / "sglang_doctor" / "rules" / "performance"


def run_text(text: str, rules, **kw):
    return diagnose(["x.log"], rules, Options(**kw), texts={"x.log": text}).report


def test_flag_is_spelled_for_the_logs_release(rules):
    log = (PERF / "decode-without-cuda-graph" / "fires-0.5.5-batch-above-captured.log").read_text()
    old = run_text(log, rules)
    fix = [f for f in old.findings if f.rule == "decode-without-cuda-graph"][0].fixes[0]
    assert fix.flag == "--cuda-graph-max-bs"
    new = run_text("# cmd: docker run --gpus all lmsysorg/sglang:v0.5.14 python3 -m sglang.launch_server --model-path m\n" + log, rules)
    fix = [f for f in new.findings if f.rule == "decode-without-cuda-graph"][0].fixes[0]
    assert fix.flag == "--cuda-graph-max-bs-decode"
    assert "--cuda-graph-max-bs-decode 512" in (new.corrected_command or "")


def test_version_inferred_from_server_args_fields(rules):
    from sglang_doctor.registry import flags

    fields = ", ".join(f"{f.lstrip('-').replace('-', '_')}=None" for f in flags.flags_for("0.5.14"))
    rep = run_text(f"[2026-01-01 00:00:00] server_args=ServerArgs({fields})\n", rules)
    v = rep.context["sglang_version"]
    assert "0.5.14" in v
    assert "inferred" in rep.context["notes"]["sglang.version"]


def test_consequences_follow_the_root_cause(rules, demo_dir):
    text = (demo_dir / "qwen3.6-27b-mamba-mfs-0.80.log").read_text()
    rep = run_text(text, rules)
    assert rep.findings[0].rule == "hybrid-mamba-not-enough-gpu-memory"
    for f in rep.findings[1:]:
        assert f.severity != "error"


def test_generic_oom_dropped_when_a_specific_error_explains_it(rules):
    text = ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n")
    rep = run_text(text, rules)
    assert [f.rule for f in rep.findings if f.severity == "error"] == ["kv-pool-not-enough-memory"]


def test_generic_error_gives_way_to_a_specific_warning_on_its_line(rules):
    # SGLang logs the PD transfer timeout and keeps serving: the specific rule calls it a warning; the generic
    # rule reading the env var the same line names must not turn it into an error.
    line = ("[2025-10-15 11:03:35 DP0 TP0] Some requests fail to receive KV Cache transfer done signal after "
            "bootstrapping. If a greater mean TTFT is acceptable, you can 'export "
            "SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to relax the timeout condition. \n")
    rep = run_text(line, rules)
    assert [(f.rule, f.severity) for f in rep.findings] == [("pd-kv-transfer-timeout", "warning")]
    # without the specific rule, the generic one reads the line
    rest = [r for r in rules if r.id != "pd-kv-transfer-timeout"]
    assert [(f.rule, f.severity) for f in run_text(line, rest).findings] == [("error-names-env-var", "error")]


def test_corrected_command_from_option(rules, demo_dir):
    text = (demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_text().split("\n", 1)[1]  # drop '# cmd:'
    rep = run_text(text, rules, command="python3 -m sglang.launch_server --model-path /m --dtype half --api-key sk-secret123456789012")
    assert rep.corrected_command is not None
    assert "--dtype bfloat16" in rep.corrected_command and "half" not in rep.corrected_command
    assert "sk-secret123456789012" not in rep.corrected_command


def test_command_rebuilt_from_server_args_when_none_given(rules, demo_dir):
    text = (demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_text().split("\n", 1)[1]  # no '# cmd:' line
    rep = run_text(text, rules)
    assert rep.context["command_source"].startswith("rebuilt")
    cmd = rep.corrected_command or ""
    assert cmd.startswith("python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B-AWQ-INT4")
    assert "--mem-fraction-static 0.92" in cmd and "--dtype bfloat16" in cmd
    assert "--tp-size" not in cmd  # equal to the release default: left out


def test_a_switch_renamed_into_a_flag_value_keeps_its_meaning():
    """--disable-piecewise-cuda-graph became --cuda-graph-backend-prefill=disabled: on a release
    that only has the new flag, the fix must carry the value, not a bare flag."""
    from sglang_doctor.fix.correct import spell_fixes
    from sglang_doctor.model import Finding, FixOut

    def finding() -> Finding:
        return Finding(rule="r", code="SGD1", title="t", severity="error", explanation="e",
                       fixes=[FixOut(kind="flag", flag="--disable-piecewise-cuda-graph", action="add"),
                              FixOut(kind="flag", flag="--cuda-graph-max-bs", action="lower")])

    [old] = spell_fixes([finding()], "0.5.10")  # before the new flag: the old switch
    [mid] = spell_fixes([finding()], "0.5.14")  # both taken: the one 0.5.14 does not deprecate (issue 16)
    [new] = spell_fixes([finding()], "0.5.20-0.5.23")
    assert (old.fixes[0].flag, old.fixes[0].value) == ("--disable-piecewise-cuda-graph", None)
    assert (mid.fixes[0].flag, mid.fixes[0].value) == ("--cuda-graph-backend-prefill", "disabled")
    first, second = new.fixes
    assert (first.flag, first.action, first.value) == ("--cuda-graph-backend-prefill", "set", "disabled")
    assert (second.flag, second.value) == ("--cuda-graph-max-bs-decode", None)  # a like-for-like rename


def test_a_raise_or_lower_fix_that_goes_the_wrong_way_is_never_emitted(tmp_path):
    """`raise --mem-fraction-static 0.79 → 0.25` (a value computed from text that is not this
    launch's) is no fix; nor is `lower` to a higher value, nor a size raised to a smaller one."""
    from rule_helpers import write_rule
    from sglang_doctor.engine.rules import load_rules

    rule = """id: wrong-way
code: SGD1998
title: computed fixes
severity: error
family: test
match:
  any:
    - regex: 'mfs wants (?P<mfs>[\\d.]+), requests (?P<req>\\d+), shm (?P<shm>\\w+)'
explanation: x
fixes:
  - {kind: flag, flag: --mem-fraction-static, action: raise, value: "{mfs}"}
  - {kind: flag, flag: --max-running-requests, action: lower, value: "{req}"}
  - {kind: flag, flag: --cuda-graph-max-bs, action: raise, value: "{shm}"}
docs: {what: a, why: b, fix: c}
"""
    rules = load_rules([write_rule(tmp_path, rule, "wrong-way")], builtin=False)
    head = ("[2026-05-02 09:14:00] server_args=ServerArgs(mem_fraction_static=0.79, max_running_requests=64, "
            "cuda_graph_max_bs='16g')\n")

    def fixes(line: str) -> list[tuple[str, str | None]]:
        [f] = run_text(head + line + "\n", rules).findings
        return [(x.flag, x.value) for x in f.fixes]

    assert fixes("mfs wants 0.25, requests 128, shm 512m") == []
    assert fixes("mfs wants 0.79, requests 64, shm 16g") == []
    assert fixes("mfs wants 0.85, requests 32, shm 32g") == [
        ("--mem-fraction-static", "0.85"), ("--max-running-requests", "32"), ("--cuda-graph-max-bs", "32g")]


def test_index_put_dtype_mismatch_follows_the_captured_dtypes(rules):
    """SGD401 the other way round (a float32 cache, a bfloat16 model): title, explanation and fixes
    say so, and never offer bfloat16, the variable's default, as a value to set."""
    msg = ("RuntimeError: Index put requires the source and destination dtypes match, got Float for the "
           "destination and BFloat16 for the source.\n")
    [f] = [f for f in run_text(msg, rules).findings if f.code == "SGD401"]
    assert f.title == "Model runs in bfloat16 but the hybrid conv-state cache is float32"
    assert "float16" not in f.explanation.replace("bfloat16", "")
    assert "SGLANG_MAMBA_CONV_DTYPE is set to float32" in f.explanation
    assert [(x.kind, x.name, x.action, x.value) for x in f.fixes] == [("env", "SGLANG_MAMBA_CONV_DTYPE", "remove", None)]
    # the motivating case keeps its title and fixes
    [g] = [g for g in run_text(msg.replace("Float for the destination and BFloat16", "BFloat16 for the destination "
                                           "and Half"), rules).findings if g.code == "SGD401"]
    assert g.title == "Model runs in float16 but the hybrid conv-state cache is bfloat16"
    assert [(x.flag or x.name, x.value) for x in g.fixes] == [("--dtype", "bfloat16"), ("SGLANG_MAMBA_CONV_DTYPE", "float16")]


def test_the_image_tag_of_the_given_command_beats_inference(rules, demo_dir):
    log = "".join((demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_text().splitlines(keepends=True)[1:])  # no `# cmd:`
    cmd = ("docker run --gpus all lmsysorg/sglang:v0.5.14-cu129 python3 -m sglang.launch_server "
           "--model-path /models/Qwen3.6-27B-AWQ-INT4 --dtype auto")
    assert "-" in run_text(log, rules).context["sglang_version"]  # without it: a range inferred from server_args
    ctx = run_text(log, rules, command=cmd).context
    assert ctx["sglang_version"] == "0.5.14" and ctx["notes"]["sglang.version"] == "from the docker image's tag"


@pytest.mark.parametrize("image, version", [
    ("lmsysorg/sglang:v0.5.14", "0.5.14"), ("lmsysorg/sglang:v0.5.5.post3-cu126", "0.5.5.post3"),
    ("registry.local:5000/mirror/sglang:v0.5.14-rocm700-mi30x", "0.5.14"), ("lmsysorg/sglang:latest", None),
    ("lmsysorg/sglang-router:v0.2.1", None), ("nvcr.io/nvidia/pytorch:24.05-py3", None),
])
def test_version_from_image(image, version):
    from sglang_doctor.launch.version_infer import version_from_image

    assert version_from_image(image) == version


_GRAPH_OOM = (Path(__file__).resolve().parent.parent / "sglang_doctor" / "rules" / "memory" / "cuda-oom-cuda-graph-capture"
              / "fires-0.5.14-decode-runner.log")


def test_graph_capture_oom_at_the_smallest_batch_and_a_stated_release(rules):
    """SGD119 on a log stating 0.5.14 with --cuda-graph-max-bs-decode 8: no `max 8 → 8`, the release's
    own spelling of turning graphs off (no "0.5.14+ spell it" note), and the OOM line as evidence."""
    head = ("[2026-05-02 10:01:00] sglang 0.5.14\n[2026-05-02 10:01:01] server_args=ServerArgs(model_path='/m', "
            "mem_fraction_static=0.9, cuda_graph_max_bs_decode=8, tp_size=1)\n")
    [f] = [f for f in run_text(head + _GRAPH_OOM.read_text(), rules).findings if f.code == "SGD119"]
    assert "→ 8" not in f.explanation and "max 8" not in f.explanation
    assert "too few to lower further" in f.explanation
    assert [(x.flag, x.value) for x in f.fixes] == [("--mem-fraction-static", "0.85"),
                                                    ("--cuda-graph-backend-decode", "disabled")]
    assert all("spell it" not in (x.text or "") for x in f.fixes)
    assert f.evidence[0].text.startswith("torch.OutOfMemoryError: CUDA out of memory.")


def test_a_crash_no_rule_knows_quotes_its_exception_line_not_the_traceback_head(rules):
    log = ("[2026-05-02 10:01:41] Scheduler started\nTraceback (most recent call last):\n"
           '  File "/usr/lib/python3.11/site-packages/foo/bar.py", line 3, in run\n    go()\n'
           "FooBarError: the flux capacitor is out of sync\n")
    [f] = run_text(log, rules).findings
    assert f.code == "SGD739" and f.evidence[0].text == "FooBarError: the flux capacitor is out of sync"
    assert f.evidence[0].line == 5


def test_a_frame_is_quoted_as_the_log_has_it_when_the_exception_says_nothing(tmp_path):
    """A bare `AssertionError` says less than the frame a rule matched: the frame stays the evidence,
    quoted as pasted (never in the `line 0` form rules read)."""
    from rule_helpers import write_rule
    from sglang_doctor.engine.rules import load_rules

    rule = """id: frame-rule
code: SGD1997
title: a frame rule
severity: error
family: test
match:
  any:
    - regex: 'pdmux_context\\.py", line \\d+, in get_arch_constraints'
      in: frames
explanation: x
fix_none: nothing
docs: {what: a, why: b, fix: c}
"""
    rules = load_rules([write_rule(tmp_path, rule, "frame-rule")], builtin=False)
    frame = '  File "/opt/sglang/srt/multiplex/pdmux_context.py", in get_arch_constraints'
    [f] = run_text(f"Traceback (most recent call last):\n{frame}\n    assert major >= 9\nAssertionError\n", rules).findings
    assert (f.evidence[0].line, f.evidence[0].text) == (2, frame)
