"""The launch is the unit of analysis: a restarted server's log holds several launches, each with
its own facts, findings, startup summary and corrected command; unrelated inputs are separate
launches; the logs of one deployment's nodes are one."""

from __future__ import annotations

import json
import re

from helpers_cli import cache_builtin_rules, run
from sglang_doctor.pipeline.run import Options, diagnose

CMD = ("docker run --gpus all --shm-size 16g -v /models:/models lmsysorg/sglang:v0.5.14 python3 -m "
       "sglang.launch_server --model-path /models/Qwen3.6-27B-AWQ-INT4 --mem-fraction-static 0.80")


def _body(path) -> str:
    """A demo log without its `# cmd:` line (a container's own output has none)."""
    return "".join(ln for ln in path.read_text(encoding="utf-8").splitlines(keepends=True) if not ln.startswith("# cmd:"))


def restarted_log(demo_dir) -> str:
    """`docker logs` of a --restart container, saved with the command on top: the 0.80 launch fails,
    the container restarts at 10:05 with 0.92 and crashes on the dtype mismatch."""
    first = (demo_dir / "qwen3.6-27b-mamba-mfs-0.80.log").read_text(encoding="utf-8")  # with its `# cmd:` line
    second = _body(demo_dir / "qwen3.6-27b-awq-dtype-crash.log")
    second = re.sub(r"2026-05-02 09:14:(\d\d)", r"2026-05-02 10:05:\1", second)
    return first + second


def test_a_restarted_server_is_two_launches_with_their_own_facts(rules, demo_dir):
    text = restarted_log(demo_dir)
    rep = diagnose(["restarts.log"], rules, Options(), texts={"restarts.log": text}).report
    alone = diagnose([str(demo_dir / "qwen3.6-27b-mamba-mfs-0.80.log")], rules, Options()).report
    assert len(rep.launches) == 2
    second, first = rep.launches  # the last launch first
    assert first.first_line == 1 and second.first_line == first.last_line + 1
    by_index = {i: rep.findings[i] for la in rep.launches for i in la.findings}
    first_rules = {by_index[i].rule: by_index[i] for i in first.findings}
    second_rules = {by_index[i].rule for i in second.findings}
    assert "index-put-dtype-mismatch" in second_rules and "index-put-dtype-mismatch" not in first_rules
    mamba = next(f for r, f in first_rules.items() if r.startswith("hybrid-mamba"))
    fix = next(x for x in mamba.fixes if x.flag == "--mem-fraction-static")
    same = next(x for f in alone.findings if f.rule == mamba.rule for x in f.fixes if x.flag == "--mem-fraction-static")
    assert fix.from_ == "0.8" and (fix.from_, fix.value) == (same.from_, same.value)  # its own numbers, not 0.92's
    assert mamba.explanation == next(f.explanation for f in alone.findings if f.rule == mamba.rule)
    # Each launch's startup covers its own phases: no phase spans the restart gap.
    for la in rep.launches:
        assert all(p.get("seconds", 0) < 60 for p in la.startup["phases"]), la.startup
    assert rep.corrected_command is None and all(la.corrected_command for la in rep.launches)  # each has its own


def test_each_launch_gets_its_own_corrected_command(rules, demo_dir):
    text = restarted_log(demo_dir)
    rep = diagnose(["restarts.log"], rules, Options(command=CMD), texts={"restarts.log": text}).report
    second, first = rep.launches
    assert "--mem-fraction-static 0.89" in first.corrected_command
    assert "--dtype bfloat16" in second.corrected_command and "--dtype" not in first.corrected_command
    assert first.command_source == second.command_source == "cmd"


def test_unrelated_inputs_are_separate_launches(tmp_path, monkeypatch, demo_dir):
    cache_builtin_rules(monkeypatch)
    monkeypatch.chdir(tmp_path)
    for name in ("qwen3.6-27b-awq-dtype-crash.log", "qwen3.6-27b-mamba-mfs-0.80.log"):
        (tmp_path / name).write_text((demo_dir / name).read_text(encoding="utf-8"), encoding="utf-8")
    r = run(["qwen3.6-27b-awq-dtype-crash.log", "qwen3.6-27b-mamba-mfs-0.80.log", "--format", "json"])
    data = json.loads(r.stdout)
    assert [la["input"] for la in data["launches"]] == [0, 1]
    crash, mfs = data["launches"]
    assert "--dtype bfloat16" in crash["corrected_command"] and "--dtype bfloat16" in mfs["corrected_command"]
    assert "--mem-fraction-static 0.92" in crash["corrected_command"]  # its own command, not the other log's
    assert "--mem-fraction-static 0.89" in mfs["corrected_command"]
    assert "corrected_command" not in data
    assert all(data["findings"][i]["evidence"][0]["input"] == la["input"] for la in data["launches"] for i in la["findings"])
    text = run(["qwen3.6-27b-awq-dtype-crash.log", "qwen3.6-27b-mamba-mfs-0.80.log", "--no-color"]).stdout
    assert "launch 1 of 2: qwen3.6-27b-awq-dtype-crash.log:1-37" in text and "launch 2 of 2" in text
    assert text.count("corrected command:") == 2


def test_the_nodes_of_one_deployment_are_one_launch(rules, demo_dir):
    from test_multi_input import node0_log, node1_log

    rep = diagnose(["node0.log", "node1.log"], rules, Options(),
                   texts={"node0.log": node0_log(demo_dir), "node1.log": node1_log()}).report
    assert len(rep.launches) == 1 and rep.launches[0].inputs == [0, 1]
    assert rep.corrected_command == rep.launches[0].corrected_command and "--dtype bfloat16" in rep.corrected_command


def test_a_single_launch_keeps_the_top_level_fields(rules, demo_dir):
    path = demo_dir / "qwen3.6-27b-awq-dtype-crash.log"
    rep = diagnose([str(path)], rules, Options()).report
    [la] = rep.launches
    assert (la.input, la.first_line, la.last_line) == (0, 1, 37)
    assert la.findings == list(range(len(rep.findings)))
    assert rep.corrected_command == la.corrected_command and la.command_source == "log-comment"
    assert rep.startup == la.startup and la.sglang_version == "0.5.14"
