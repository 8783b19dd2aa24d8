"""The corrected command is the user's own text with only the launch's words changed (issue 16,
items 3-5): wrappers, chains, layout and flag order kept; every unknown flag its own finding;
`--diff`; `--cmd` without a launch is an error."""

from __future__ import annotations

import json

import pytest
from helpers_cli import run

from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.launch.command import parse_command
from sglang_doctor.launch.splice import launch_lines, splice
from sglang_doctor.model import FixOut

FIXES = [FixOut(kind="flag", flag="--mem-fraction-static", action="set", value="0.8"),
         FixOut(kind="flag", flag="--disable-cuda-graph", action="add"),
         FixOut(kind="flag", flag="--tp-size", action="remove")]


def edited(text: str) -> str:
    cmd = parse_command(text)
    assert cmd is not None
    new, _ = apply_fixes(cmd, FIXES)
    return splice(text, new)


@pytest.mark.parametrize("given, expected", [
    ('docker run --gpus all img bash -c "pip install -U transformers && python3 -m sglang.launch_server '
     '--model-path m --tp 2 --mem-fraction-static 0.9"',
     'docker run --gpus all img bash -c "pip install -U transformers && python3 -m sglang.launch_server '
     '--model-path m --mem-fraction-static 0.8 --disable-cuda-graph"'),
    ("docker rm -f x && docker run --name x img sh -c 'python3 -m sglang.launch_server --model-path m "
     "--mem-fraction-static 0.9 | tee o'",
     "docker rm -f x && docker run --name x img sh -c 'python3 -m sglang.launch_server --model-path m "
     "--mem-fraction-static 0.8 --disable-cuda-graph | tee o'"),
    ("nohup python3 -m sglang.launch_server --model-path m --tp-size 2 --mem-fraction-static 0.9 > log 2>&1 &",
     "nohup python3 -m sglang.launch_server --model-path m --mem-fraction-static 0.8 --disable-cuda-graph > log 2>&1 &"),
    ("A=1 python3 -m sglang.launch_server --mem-fraction-static=0.9 --model-path m | tee server.log",
     "A=1 python3 -m sglang.launch_server --mem-fraction-static=0.8 --model-path m --disable-cuda-graph | tee server.log"),
    # line continuations: kept, and each new flag on a line of its own
    ("python3 -m sglang.launch_server \\\n  --model-path m \\\n  --tp-size 2 \\\n  --port 1 2>&1 | tee server.log",
     "python3 -m sglang.launch_server \\\n  --model-path m \\\n  --port 1 \\\n  --mem-fraction-static 0.8 \\\n"
     "  --disable-cuda-graph 2>&1 | tee server.log"),
    # a double-quoted -c string: new words escaped for it, the user's escapes as written
    ('bash -c "python3 -m sglang.launch_server --model-path \\"$M\\" --mem-fraction-static 0.9"',
     'bash -c "python3 -m sglang.launch_server --model-path \\"$M\\" --mem-fraction-static 0.8 --disable-cuda-graph"'),
])
def test_wrapper_chain_and_layout_kept(given: str, expected: str) -> None:
    assert edited(given) == expected
    assert parse_command(expected) is not None


def test_script_lines_of_the_launch() -> None:
    script = "#!/bin/bash\nexport HF_HOME=/d\nnohup python3 -m sglang.launch_server \\\n  --model-path m \\\n" \
             "  --mem-fraction-static 0.9 2>&1 | tee s.log &\necho started\n"
    new = edited(script)
    assert new.startswith("#!/bin/bash\nexport HF_HOME=/d\n") and new.endswith("&\necho started\n")
    before, after = launch_lines(script, new)
    assert before == "nohup python3 -m sglang.launch_server \\\n  --model-path m \\\n  --mem-fraction-static 0.9 2>&1 | tee s.log &"
    assert after == ("nohup python3 -m sglang.launch_server \\\n  --model-path m \\\n  --mem-fraction-static 0.8 \\\n"
                     "  --disable-cuda-graph 2>&1 | tee s.log &")


ARGPARSE = "sglang==0.5.14\nsglang serve: error: unrecognized arguments: --tp-szie 2 --enable-ep-moe\n"


def _report(tmp_path, *args: str) -> dict:
    log = tmp_path / "a.log"
    log.write_text(ARGPARSE)
    r = run(["check", str(log), "--no-baseline", "--format", "json", *args])
    return json.loads(r.stdout)


def test_every_unknown_flag_its_own_finding_and_fix(tmp_path) -> None:
    cmd = "python3 -m sglang.launch_server --model-path m --tp-szie 2 --enable-ep-moe --port 1"
    rep = _report(tmp_path, "--cmd", cmd)
    unknown = [f for f in rep["findings"] if f["rule"] == "launch-flag-unknown"]
    assert [[e["text"] for e in f["evidence"]] for f in unknown] == [["--tp-szie 2"], ["--enable-ep-moe"]]
    assert [(f["fixes"][0]["flag"], f["fixes"][0]["value"]) for f in unknown] == [("--tp-size", "2"), ("--ep-size", "2")]
    texts = [(e["input"], e["line"], e["text"]) for f in rep["findings"] for e in f["evidence"]]
    assert len(texts) == len(set(texts))  # the same evidence line never twice
    # both fixed, in the user's order (0.5.14 has no --enable-ep-moe: the expert-parallel size is the TP size)
    assert rep["corrected_command"] == "python3 -m sglang.launch_server --model-path m --tp-size 2 --ep-size 2 --port 1"


def test_deprecated_flag_fix_is_the_full_replacement(tmp_path) -> None:
    log = tmp_path / "a.log"
    log.write_text("sglang==0.5.14\n[2025-11-02 08:10:41] Load weight begin. avail mem=22.05 GB\n")
    r = run(["check", str(log), "--no-baseline", "--format", "json", "--cmd",
             "python3 -m sglang.launch_server --model-path m --disable-cuda-graph"])
    [f] = [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "launch-flag-deprecated"]
    assert [(x["flag"], x.get("value"), x.get("replaces")) for x in f["fixes"][:2]] == [
        ("--cuda-graph-backend-decode", "disabled", "--disable-cuda-graph"),
        ("--cuda-graph-backend-prefill", "disabled", "--disable-cuda-graph")]


def test_diff_and_cmd_file_script(tmp_path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nnohup python3 -m sglang.launch_server \\\n  --model-path m \\\n"
                      "  --tp-szie 2 \\\n  --port 1 2>&1 | tee s.log &\n")
    log = tmp_path / "a.log"
    log.write_text(ARGPARSE)
    r = run(["check", str(log), "--no-baseline", "--no-color", "--cmd-file", str(script), "--diff"])
    assert "--- a/--cmd-file\n+++ b/--cmd-file (corrected)\n" in r.stdout
    assert "-  --tp-szie 2 \\\n+  --tp-size 2 \\\n" in r.stdout
    rep = json.loads(run(["check", str(log), "--no-baseline", "--format", "json", "--cmd-file", str(script)]).stdout)
    assert rep["corrected_command"] == ("nohup python3 -m sglang.launch_server \\\n  --model-path m \\\n"
                                        "  --tp-size 2 \\\n  --port 1 2>&1 | tee s.log &")


def test_cmd_without_a_launch_is_an_error(tmp_path) -> None:
    log = tmp_path / "a.log"
    log.write_text(ARGPARSE)
    r = run(["check", str(log), "--no-baseline", "--cmd", "echo hello"])
    assert r.exit_code == 2
    assert "--cmd: no SGLang launch" in r.output and "'echo hello'" in r.output


@pytest.mark.parametrize("kind, label", [("suggested", "command with the suggested changes:"),
                                         ("corrected", "corrected command:")])
def test_text_report_says_what_the_command_is(kind: str, label: str) -> None:
    import io

    from sglang_doctor.model import LaunchInfo, Report
    from sglang_doctor.report.text import write

    cmd = "python3 -m sglang.launch_server --model-path m --mem-fraction-static 0.8"
    rep = Report(corrected_command=cmd, launches=[LaunchInfo(0, 1, 1, corrected_command=cmd, command_kind=kind)])
    out = io.StringIO()
    write(rep, out, color=False)
    assert f"{label}\n  {cmd}" in out.getvalue()


def test_one_command_per_node(tmp_path) -> None:
    log = tmp_path / "n.log"
    log.write_text("sglang==0.5.14\nsglang serve: error: unrecognized arguments: --tp-szie 16\n")
    cmd = "python3 -m sglang.launch_server --model-path m --tp-szie 16 --nnodes 2 --node-rank 1 --dist-init-addr h:5"
    rep = json.loads(run(["check", str(log), "--no-baseline", "--format", "json", "--cmd", cmd]).stdout)
    want = "python3 -m sglang.launch_server --model-path m --tp-size 16 --nnodes 2 --node-rank {} --dist-init-addr h:5"
    assert rep["launches"][0]["node_commands"] == [want.format(0), want.format(1)]
    assert rep["corrected_command"] == want.format(1)  # this log's node
    assert rep["launches"][0]["command_kind"] == "corrected"  # the root cause's removal is in it (as a rename)
    text = run(["check", str(log), "--no-baseline", "--no-color", "--cmd", cmd]).stdout
    assert f"corrected command (node 1 of 2: --node-rank 1):\n  {want.format(1)}\n" in text


def test_without_a_command_every_unrecognized_flag_is_named_and_fixed(tmp_path) -> None:
    # argparse joins every word it could not place: "--tp-szie 2 --enable-ep-moe" (issue 16, item 3)
    rep = _report(tmp_path)
    [f] = [f for f in rep["findings"] if f["code"] == "SGD953"]
    assert "none of the flags --tp-szie, --enable-ep-moe" in f["explanation"]
    assert [(x["flag"], x["action"], x.get("combined")) for x in f["fixes"][:2]] == [
        ("--tp-szie", "remove", None), ("--enable-ep-moe", "remove", True)]
    assert [e["text"] for e in f["evidence"]] == [ARGPARSE.splitlines()[1]]  # the message once, not once per flag


def test_argparse_flags_reads_the_joined_words() -> None:
    from sglang_doctor.engine.expr import compile_expr, evaluate

    def ev(src: str, **names):
        return evaluate(compile_expr(src), names)

    assert ev("argparse_flags(a)", a="--tp-szie 1 --enable-ep-moe --x=3 -1 --tp-szie 2") == (
        "--tp-szie", "--enable-ep-moe", "--x")
    assert ev("argparse_flags(a, 1)", a="--a 1") == ()
    assert ev("join(argparse_flags(a), ' / ')", a="--a --b") == "--a / --b"
