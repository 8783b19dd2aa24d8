"""--statistics: findings counted per rule and per input, for a directory of saved logs; and the
per-input lines of the text report when there are several inputs."""

from __future__ import annotations

import json
import shutil

import pytest

from helpers_cli import DEMO_LOG, isolate, run


@pytest.fixture
def logs(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    d = tmp_path / "logs"
    d.mkdir()
    shutil.copy(DEMO_LOG, d / "a.log")
    shutil.copy(DEMO_LOG, d / "b.log")
    (d / "clean.log").write_text("[2026-05-02 09:14:12] The server is fired up and ready to roll!\n")
    return d


def test_statistics_text(logs):
    r = run(["--statistics", "--no-color", "logs"])
    assert r.exit_code == 1  # the same status as the report
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["2", "SGD401", "error", "index-put-dtype-mismatch", "Model", "runs", "in", "float16",
                                "but", "the", "hybrid", "conv-state", "cache", "is", "bfloat16"]
    assert [ln.split()[1] for ln in lines[:5]] == ["SGD401", "SGD128", "SGD402", "SGD730", "SGD732"]
    assert "logs/a.log      1 error, 1 warning, 3 info  SGD401 SGD128 SGD402 SGD730 SGD732" in lines
    assert "logs/clean.log  no known problem" in lines
    assert lines[-1] == "3 inputs, 2 with findings: 2 errors, 2 warnings, 6 info"
    assert "Index put requires" not in r.stdout  # counts, not findings


def test_statistics_json(logs):
    data = json.loads(run(["--statistics", "--format", "json", "logs"]).stdout)
    first = data["rules"][0]
    assert (first["code"], first["findings"], first["inputs"]) == ("SGD401", 2, 2)
    assert [i["name"] for i in data["inputs"]] == ["logs/a.log", "logs/b.log", "logs/clean.log"]
    assert data["inputs"][2] == {"name": "logs/clean.log", "summary": {"error": 0, "warning": 0, "info": 0}, "codes": []}
    assert data["summary"] == {"error": 2, "warning": 2, "info": 6}


def test_statistics_refuses_the_formats_that_render_findings(logs):
    r = run(["--statistics", "--format", "sarif", "logs"])
    assert r.exit_code == 2 and "--statistics writes text or json" in r.stderr


def test_text_report_has_a_line_per_input_when_there_are_several(logs, tmp_path):
    missing = str(tmp_path / "nope.log")
    out = run(["--no-color", "logs", missing]).stdout.splitlines()
    rows = [ln.split(None, 1) for ln in out[1:5]]
    assert [name for name, _ in rows] == ["logs/a.log", "logs/b.log", "logs/clean.log", missing]
    assert [rest.strip() for _, rest in rows] == [
        "1 error, 1 warning, 3 info  SGD401 SGD128 SGD402 SGD730 SGD732"] * 2 + [
        "no known problem", "unreadable: no such file"]
    assert out[5] == ""
    single = run(["--no-color", "logs/a.log"]).stdout.splitlines()
    assert single[1] == ""  # one input: the summary line alone
