"""Advice that points the right way, on every fixture and every real log (ruledev/advice.py).

A `raise` fix's value is above its `from`, a `lower` fix's below; a printed corrected command differs
from the command it corrects; the printed verb is the action's. Values the rules compute are pinned by
the fixtures' snapshots (test_rules.py); this checks the properties every value must have.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.model import FixOut
from sglang_doctor.pipeline.run import Options, diagnose
from sglang_doctor.ruledev.advice import fix_problems, report_problems

REAL = Path(__file__).resolve().parent / "data" / "real"


def test_every_fixture_and_real_log_gets_advice_that_points_the_right_way(rules):
    inputs = [p for r in rules for p in sum(r.fixtures(), [])] + sorted(REAL.glob("*.log"))
    assert len(inputs) > 900
    problems = [f"{p.name}: {x}" for p in inputs for x in report_problems(diagnose([str(p)], rules).report)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("fix, wrong", [
    (FixOut("flag", flag="--mem-fraction-static", action="raise", from_="0.95", value="0.93"), "not above"),
    (FixOut("flag", flag="--watchdog-timeout", action="raise", from_="300", value="30"), "not above"),
    (FixOut("flag", flag="--cuda-graph-max-bs-prefill", action="lower", from_="512", value="2048"), "not below"),
    (FixOut("docker", flag="--shm-size", action="raise", from_="64g", value="32g"), "not above"),
    (FixOut("flag", flag="--tp-size", action="set", from_="2", value="2"), "already has"),
    (FixOut("package", name="accelerate", action="set", text="uninstall it when it breaks"), "says otherwise"),
    (FixOut("package", name="torch", action="raise", text="downgrade it to the pinned release"), "says otherwise"),
])
def test_advice_checker_names_each_wrong_direction(fix, wrong):
    problems = fix_problems(fix)
    assert len(problems) == 1 and wrong in problems[0], problems


@pytest.mark.parametrize("fix", [
    FixOut("flag", flag="--mem-fraction-static", action="raise", from_="0.8", value="0.89"),
    FixOut("docker", flag="--shm-size", action="raise", from_="64m", value="32g"),
    FixOut("flag", flag="--chunked-prefill-size", action="lower", from_="8192", value="4096"),
    FixOut("package", name="accelerate", action="remove", text="SGLang does not need it to serve"),
    FixOut("package", name="py-spy", action="add"),
    FixOut("flag", flag="--reasoning-parser", action="set", from_="kimi_k2", value="kimi_k2", replaces="--reasoning_parser"),
])
def test_advice_checker_accepts_right_advice(fix):
    assert fix_problems(fix) == []


def _fixes(text: str, rules, rule_id: str, command: str | None = None) -> dict[str, FixOut]:
    run = diagnose(["x.log"], rules, Options(command=command), texts={"x.log": text})
    finding = next(f for f in run.report.findings if f.rule == rule_id)
    return {fx.flag or fx.name or "": fx for fx in finding.fixes}


DECODE_OOM = """[2026-01-20 03:38:02] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', mem_fraction_static={mfs}, \
schedule_conservativeness={sc}, max_running_requests=64, page_size=1, tp_size=1)
[2026-01-20 03:40:11 TP0] Scheduler hit an exception: Traceback (most recent call last):
RuntimeError: Decode out of memory. Try to lower your batch size.
Try to allocate 64 tokens.
Available tokens: 12 (available_size=12 + evictable_size=0)
"""


def test_a_raise_the_current_value_already_passes_is_not_offered(rules):
    """min(current + 0.03, 0.93) with 0.95 set would "raise" to 0.93: the fix is left out; the
    scheduler's conservativeness is raised from what the launch has, not to a constant below it."""
    low = _fixes(DECODE_OOM.format(mfs=0.8, sc=1.0), rules, "decode-kv-oom")
    assert (low["--mem-fraction-static"].from_, low["--mem-fraction-static"].value) == ("0.8", "0.83")
    assert (low["--schedule-conservativeness"].from_, low["--schedule-conservativeness"].value) == ("1.0", "1.3")
    high = _fixes(DECODE_OOM.format(mfs=0.95, sc=2.0), rules, "decode-kv-oom")
    assert "--mem-fraction-static" not in high
    assert (high["--schedule-conservativeness"].from_, high["--schedule-conservativeness"].value) == ("2.0", "2.6")
    assert (high["--max-running-requests"].from_, high["--max-running-requests"].value) == ("64", "32")


SHM = "[2026-01-20 03:38:02] host-a:77:77 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-Pq8N1 (size 9637888)\n"


@pytest.mark.parametrize("shm, want", [(None, ("32g", None)), ("16g", ("32g", "16g")), ("64g", ("128g", "64g"))])
def test_docker_shm_fix_starts_from_the_commands_value(rules, shm, want):
    command = "docker run --gpus all " + (f"--shm-size {shm} " if shm else "") + \
        "lmsysorg/sglang:v0.5.14 python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 2"
    fx = _fixes(SHM, rules, "shm-too-small", command)["--shm-size"]
    assert (fx.value, fx.from_) == want
    run = diagnose(["x.log"], rules, Options(command=command), texts={"x.log": SHM})
    assert f"--shm-size {want[0]}" in run.report.corrected_command


def test_a_corrected_command_for_an_unknown_release_says_it_is_unverified(rules, tmp_path):
    from helpers_cli import run

    cmd = "docker run --gpus all lmsysorg/sglang:{tag} python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2"
    unknown = diagnose(["x.log"], rules, Options(command=cmd.format(tag="latest")), texts={"x.log": SHM}).report
    assert unknown.corrected_command and "does not say which SGLang release" in \
        unknown.context["corrected_command_unverified"]
    stated = diagnose(["x.log"], rules, texts={"x.log": f"# cmd: {cmd.format(tag='v0.5.14')}\n{SHM}"}).report
    assert stated.corrected_command and stated.context.get("sglang_version") == "0.5.14"
    assert "corrected_command_unverified" not in stated.context
    log = tmp_path / "x.log"
    log.write_text(SHM)
    out = run(["--no-baseline", "--cmd", cmd.format(tag="latest"), log]).stdout
    assert "corrected command:" in out and "(unverified for this release:" in out


def test_lint_checks_a_star_rules_fix_flags_against_every_release(tmp_path):
    """--dist-timeout arrived in 0.4.3.post3: a `versions: "*"` rule must narrow its fix (the newest
    release alone would pass it)."""
    from rule_helpers import GOOD, write_rule
    from sglang_doctor.engine.rules import load_rules
    from sglang_doctor.ruledev.lint import lint_rules

    text = GOOD.replace("    flag: --disable-cuda-graph\n    action: add\n",
                        "    flag: --dist-timeout\n    action: raise\n")
    problems = [str(p) for p in lint_rules(load_rules([write_rule(tmp_path, text)], builtin=False))]
    assert any("--dist-timeout does not exist in 0.4.0..0.4.3.post2" in p for p in problems), problems
    narrowed = text.replace("    action: raise\n", "    action: raise\n    versions: \"0.4.3.post3-\"\n")
    assert not lint_rules(load_rules([write_rule(tmp_path, narrowed)], builtin=False))
