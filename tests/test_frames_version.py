"""The release a log runs, bounded by its traceback frames of SGLang's files (data/frames.zip,
tools/extract_frames.py, registry/frames.py, launch/version_infer.version_from_frames)."""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path

import pytest
import yaml

from helpers_cli import run
from helpers_tools import load_tool
from sglang_doctor.launch.version_infer import version_from_frames
from sglang_doctor.registry import frames
from sglang_doctor.registry.versions import compare

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "sglang_doctor" / "data" / "frames.zip"
_RELEASE = re.compile(r"\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?")
_FRAME = re.compile(r'File "[^"]*sglang/[^"]+\.py", line \d+, in [\w<>]+')


def _index() -> dict:
    with zipfile.ZipFile(DATA) as z:
        return json.loads(z.read("index.json"))


def test_header_records_one_wheel_per_release_from_0_2_to_the_flag_registrys_newest():
    index = _index()
    flags = json.loads((ROOT / "sglang_doctor" / "data" / "flags.json").read_text())
    rels = index["releases"]
    assert index["generator"] == "tools/extract_frames.py" and rels[0] == "0.2.0"
    assert rels[-len(flags["releases"]):] == flags["releases"] and "0.3.6" in rels  # (older logs too)
    assert [w["wheel"].split("-")[1] for w in index["wheels"]] == index["releases"]
    sched = frames._load().functions("srt/managers/scheduler.py")
    assert "event_loop_normal" in sched and "<module>" in sched
    with zipfile.ZipFile(DATA) as z:
        assert not [n for n in z.namelist() if re.search(r"(^|/)tests?(/|\.json$)", n)]


@pytest.mark.parametrize("path, rel", [
    ("/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", "srt/managers/scheduler.py"),
    ("/sgl-workspace/sglang/python/sglang/srt/server_args.py", "srt/server_args.py"),
    ("C:\\envs\\x\\Lib\\site-packages\\sglang\\launch_server.py", "launch_server.py"),
    ("sglang/srt/utils.py", "srt/utils.py"), ("/home/user/app/serve.py", None)])
def test_a_frames_path_below_its_last_sglang_directory(path, rel):
    assert frames.relative(path) == rel


def _known(release: str) -> tuple[str, int, str]:
    """A frame that holds in `release`: the middle line of the scheduler's event_loop_normal there."""
    i = _index()["releases"].index(release)
    for lo, hi, start, end, *_ in frames._load().functions("srt/managers/scheduler.py")["event_loop_normal"]:
        if lo <= i <= hi:
            return ("/x/sglang/srt/managers/scheduler.py", (start + end) // 2, "event_loop_normal")
    raise AssertionError(release)


def test_frames_bound_the_release_and_a_forks_frames_say_nothing():
    frame = _known("0.5.4")
    names, used = frames.releases_of([frame, ("/x/sglang/srt/my_plugin.py", 10, "hook"),
                                      ("/x/sglang/srt/managers/scheduler.py", 12, "no_such_function")])
    assert used == 1 and "0.5.4" in names and len(names) < len(_index()["releases"])


def test_frames_no_release_holds_together_give_no_answer():
    late = ("/x/sglang/srt/managers/scheduler.py", 10**6, "event_loop_normal")  # (past any file's end)
    assert frames.releases_of([_known("0.5.4"), late]) is None
    assert frames.releases_of([("/x/app.py", 3, "main")]) is None


def _labelled_with_frames() -> list[tuple[str, str, list[str]]]:
    """(log, release, its SGLang frames) of every case in tests/data whose label's sglang_version is
    exactly one release (not `~0.4.6`, `0.4.2 (built from source)`, `main`: those are approximate)."""
    out = []
    for cases in sorted((ROOT / "tests" / "data").glob("*/cases.yaml")):
        for case in yaml.safe_load(cases.read_text()) or []:
            stated = str(case.get("sglang_version") or "")
            if not _RELEASE.fullmatch(stated):
                continue
            fs = _FRAME.findall((cases.parent / case["file"]).read_text(errors="replace"))
            if fs:
                out.append((case["file"], stated, fs))
    return out


def test_on_real_logs_labelled_with_their_release_the_frames_bound_include_it():
    """The range inferred from the frames alone holds the labelled release, or there is none (a build
    between releases, a release before 0.4.0)."""
    cases = _labelled_with_frames()
    assert len(cases) >= 12
    bounded = []
    for name, stated, fs in cases:
        guess = version_from_frames(fs)
        if guess is None:
            continue
        lo, _, hi = guess[0].partition("-")
        assert compare(lo, stated) <= 0 <= compare(hi or lo, stated), (name, stated, guess)
        bounded.append(name)
    assert len(bounded) >= 8, bounded


def test_a_crash_log_without_a_version_gets_one_from_its_frames(tmp_path):
    path, line, func = _known("0.5.4")
    log = tmp_path / "crash.log"
    log.write_text("Traceback (most recent call last):\n"
                   f'  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line {line}, in {func}\n'
                   "    self.process_batch_result(batch, result)\n"
                   "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    r = run(["--format", "json", str(log)])
    report = json.loads(r.stdout)
    version = report["launches"][0]["sglang_version"]
    assert version is not None
    lo, _, hi = version.partition("-")
    assert compare(lo, "0.5.4") <= 0 <= compare(hi or lo, "0.5.4")


@pytest.mark.catalog_build
def test_rebuild_from_local_wheels_gives_the_committed_file(tmp_path):
    if not os.environ.get("CATALOG_BUILD"):
        pytest.skip("reads every release (~10 min): set CATALOG_BUILD=1")
    wheelcache = load_tool("wheelcache")
    rels = _index()["releases"]
    if any(wheelcache.cached("sglang", r) is None for r in rels):
        pytest.skip("the sglang wheels are not in wheels/")
    out = tmp_path / "frames.zip"
    load_tool("extract_frames").main(["--out", str(out), "--releases", *rels])
    assert out.read_bytes() == DATA.read_bytes()
