"""Where the corrected command came from (issue 16, item 6): --cmd, --cmd-file, the log's `# cmd:`
line, or rebuilt from server_args -- and then which flags it leaves at the release's default."""

from __future__ import annotations

import json
from pathlib import Path

from helpers_cli import run

from sglang_doctor.fix.rebuild import rebuild

LOG = "sglang==0.5.14\nsglang serve: error: unrecognized arguments: --tp-szie 2\n"
CMD = "python3 -m sglang.launch_server --model-path m --tp-szie 2"


def _check(tmp_path: Path, text: str, *args: str) -> tuple[dict, str]:
    log = tmp_path / "x.log"
    log.write_text(text)
    base = ["check", str(log), "--no-baseline", *args]
    return (json.loads(run([*base, "--format", "json"]).stdout), run([*base, "--no-color"]).stdout)


def test_from_cmd(tmp_path: Path) -> None:
    rep, text = _check(tmp_path, LOG, "--cmd", CMD)
    assert rep["launches"][0]["command_source"] == "cmd"
    assert "command_defaults_omitted" not in rep["launches"][0]
    assert "--tp-size 2\n  (from --cmd)\n" in text


def test_from_cmd_file(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(CMD + "\n")
    rep, text = _check(tmp_path, LOG, "--cmd-file", str(script))
    assert rep["launches"][0]["command_source"] == "cmd-file"
    assert "  (from --cmd-file)\n" in text


def test_from_the_logs_cmd_line(tmp_path: Path) -> None:
    rep, text = _check(tmp_path, f"# cmd: {CMD}\n" + LOG)
    assert rep["launches"][0]["command_source"] == "log-comment"
    assert "  (from the log's `# cmd:` line)\n" in text


def test_rebuilt_says_which_defaults_it_leaves_out(tmp_path: Path, demo_dir: Path) -> None:
    log = (demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_text().split("\n", 1)[1]  # no '# cmd:' line
    rep, text = _check(tmp_path, log)
    launch = rep["launches"][0]
    assert launch["command_source"] == "server_args"
    omitted = launch["command_defaults_omitted"]
    assert "--tp-size" in omitted  # tp_size=1 is 0.5.x's default: not written, and said so
    assert "--mem-fraction-static" not in omitted and "--mem-fraction-static 0.92" in launch["corrected_command"]
    assert not any(f in launch["corrected_command"].split() for f in omitted)
    line = next(ln for ln in text.splitlines() if "rebuilt from the log's server_args" in ln)
    assert "left at the release's default: " in line and f"{len(omitted) - 6} more in --format json" in line


def test_rebuild_lists_the_default_flags_it_skips() -> None:
    cmd, omitted = rebuild({"model_path": "m", "tp_size": 1, "dtype": "auto", "mem_fraction_static": 0.8,
                            "enable_metrics": False, "tokenizer_path": "m"}, "0.5.14")
    assert cmd == "python3 -m sglang.launch_server --model-path m --mem-fraction-static 0.8"
    assert omitted == ["--tp-size", "--dtype", "--enable-metrics"]  # tokenizer_path is derived, not a default
