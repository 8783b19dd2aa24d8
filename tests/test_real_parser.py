"""Every corrected command parses with SGLang's REAL argument parser (issue 16, item 1).

For each rule fixture, real log, healthy log and demo, the product's JSON report (through its CLI)
gives `corrected_command`; its SGLang arguments are parsed by `ServerArgs.add_cli_args` of the
covered release nearest to the detected one (tests/realparser/). Marker `realparser`: the first
run builds one venv per covered release (~1-2 min each, cached), see tests/realparser/harness.py.

Known rejections are xfail(strict=True) from tests/realparser/known_failures.yaml.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
import pytest

from tests.realparser import collect as col
from tests.realparser.harness import (
    ensure_env, nearest_release, releases, releases_for, sglang_parse_releases,
)
from tests.realparser.known import load_known


class KnownRejection(AssertionError):
    """The parser rejected the command with exactly the error recorded in known_failures.yaml."""


def _case_ids() -> list[str]:
    return [c.id for c in col._inputs()]


def _params() -> list:
    known = load_known()
    out = []
    for cid in _case_ids():
        k = known.get(cid)
        marks = [pytest.mark.realparser]
        if k:
            marks.append(pytest.mark.xfail(
                strict=True, raises=KnownRejection,
                reason=f"sglang {k['release']} rejects it: {k['error']}"))
        out.append(pytest.param(cid, marks=marks, id=cid))
    return out


@pytest.fixture(scope="session")
def checked(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every input run through the product once, and every corrected command parsed, batched per
    release (one subprocess each: importing server_args costs ~12 s of CPU). Maps case id →
    (case, how, argv, [(release, result)]), and ("self-check", release) → results of SELF_CHECK."""
    # Only the inputs of the selected tests (a -k run does not pay for all ~1,000 doctor runs).
    wanted = {item.callspec.params["case_id"] for item in request.session.items
              if "case_id" in getattr(getattr(item, "callspec", None), "params", {})}
    # Build missing venvs (mostly downloads) while the doctor runs (mostly CPU).
    with ThreadPoolExecutor(1) as builder:
        built = builder.submit(lambda: [ensure_env(rel) for rel in releases()])
        cases = col.collect(tmp_path_factory.mktemp("doctor-cwd"), only=wanted)
        built.result()
    by_input: dict[str, col.Case] = {}
    for c in cases:
        base = c.id.removesuffix("+standin")
        # The stand-in run only exists when the plain one had a flag fix but no command.
        if c.corrected or base not in by_input:
            by_input[base] = c
    batches: dict[str, list[tuple[object, list[str]]]] = defaultdict(list)
    for rel in releases():
        batches[rel] += [(("self-check", rel), col.launch_args(cmd)[0]) for cmd in SELF_CHECK]
    out: dict = {}
    for cid, c in by_input.items():
        argv, how = col.launch_args(c.corrected) if c.corrected else ([], "")
        out[cid] = (c, how, argv, [])
        if argv:
            for rel in releases_for(c.target_releases):
                batches[rel].append((cid, argv))
    results = sglang_parse_releases({rel: [a for _, a in items] for rel, items in batches.items()})
    for rel, items in batches.items():
        for (key, _argv), res in zip(items, results[rel]):
            if isinstance(key, tuple):
                out.setdefault(key, []).append(res)
            else:
                out[key][3].append((rel, res))
    return out


@pytest.mark.parametrize("case_id", _params())
def test_corrected_command_parses(case_id: str, checked) -> None:
    case, how, argv, parsed = checked[case_id]
    assert not case.error, f"the doctor failed on {case_id}: {case.error}"
    known = load_known().get(case_id)
    if known and (not case.corrected or how == "router"):
        pytest.fail(f"known_failures.yaml lists {case_id}, which no longer has a command to parse: "
                    "remove the entry", pytrace=False)
    if not case.corrected:
        pytest.skip("no corrected command")
    if how == "router":
        pytest.skip("an sglang_router launch: its parser (server + router flags) is not covered")
    assert argv, f"no SGLang launch found in the corrected command: {case.corrected}"
    bad = [(rel, res) for rel, res in parsed if not res.ok]
    if not bad:
        return
    release, res = bad[0]
    if known and known["error"] == res.error and known["release"] == release:
        raise KnownRejection(res.error)
    stale = (f"\n  known_failures.yaml records instead: sglang {known['release']}: {known['error']}"
             if known else "")
    pytest.fail(f"sglang {release} rejects the corrected command ({res.category}): {res.error}{stale}\n"
                f"  command: {case.corrected}\n  argv: {shlex.join(argv)}\n"
                f"  (detected release: {case.detected_release}; parsed with {[r for r, _ in parsed]})",
                pytrace=False)


# ---- the checking path itself: it must be able to fail --------------------------------------

GOOD = ("docker run --gpus all -p 30000:30000 img python3 -m sglang.launch_server --model-path m --tp 2 "
        "--dtype bfloat16 --trust-remote-code > s.log 2>&1")
# Shell variables in a Kubernetes pod spec: the shell gives them a value when the command runs.
GOOD_VARS = ("python3 -m sglang.launch_server --model-path $MODEL_NAME --nnodes 2 --node-rank $POD_INDEX "
             "--tp-size ${TP:-8} --dtype=$DTYPE --port 8000")
BROKEN = {
    "unknown-flag": "docker run --gpus all lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m --tp-szie 2",
    "missing-value": "python3 -m sglang.launch_server --model-path m --dtype",
    "bad-choice": "sglang serve m --dtype bf16",
    "duplicate": "bash -c 'pip install -U transformers && python3 -m sglang.launch_server --model-path m --tp 2 --tp-size 4'",
    "switch-with-value": "HF_HUB_OFFLINE=1 python -m sglang.launch_server --model-path m --trust-remote-code=yes",
    "bad-value": "python3 -m sglang.launch_server --model-path m --mem-fraction-static lots",
    # a variable's default is what the shell gives when it is unset: still checked
    "bad-value-default": "python3 -m sglang.launch_server --model-path m --node-rank ${RANK:-zero}",
}
SELF_CHECK = [GOOD, GOOD_VARS, *BROKEN.values()]


@pytest.mark.realparser
@pytest.mark.parametrize("release", releases())
def test_parser_rejects_broken_commands(release: str, checked) -> None:
    """Negative self-check: broken commands, through the same extraction, batch and parser as the
    corrected commands, are rejected for the right reason, and a valid one is accepted."""
    good, good_vars, *bad = checked[("self-check", release)]
    assert good.ok, f"sglang {release} rejects a valid command: {good.error}"
    assert good_vars.ok, f"sglang {release} rejects shell variables as values: {good_vars.error}"
    got = {cat: r.category for cat, r in zip(BROKEN, bad)}
    assert got == {cat: cat.removesuffix("-default") for cat in BROKEN}, [r.error for r in bad]


# ---- cheap checks of the glue (no venv; run in the quick path too) ---------------------------

@pytest.mark.parametrize("cmd, argv, how", [
    ("docker run --gpus all -e A=1 img:v1 python3 -m sglang.launch_server --model-path m --tp 2 > log 2>&1",
     ["--model-path", "m", "--tp", "2"], "launch_server"),
    ('nohup bash -c "pip install x && HF=1 python -m sglang.launch_server --model-path m" &',
     ["--model-path", "m"], "launch_server"),
    ("docker rm -f x && docker run img sh -c 'python3 -m sglang.launch_server --model-path m | tee o'",
     ["--model-path", "m"], "launch_server"),
    ("sglang serve Qwen/Q --model-type llm --port 1 | tee x", ["--model-path", "Qwen/Q", "--port", "1"], "serve"),
    ("python3 -m sglang.launch_server \\\n  --model-path m \\\n  --tp 2", ["--model-path", "m", "--tp", "2"],
     "launch_server"),
    ("python3 -m sglang_router.launch_server --model-path m", [], "router"),
    ("echo hello", [], ""),
])
def test_launch_args(cmd: str, argv: list[str], how: str) -> None:
    assert col.launch_args(cmd) == (argv, how)


def test_nearest_release() -> None:
    covered = sorted(releases(), key=lambda r: tuple(int(x) for x in r.split(".")[:3]))
    assert nearest_release(None) == covered[-1]
    assert nearest_release("not a version") == covered[-1]
    assert nearest_release("0.1.0") == covered[0]
    assert nearest_release(covered[1]) == covered[1]
    assert nearest_release("99.0") == covered[-1]
    assert nearest_release("0.5.14") == "0.5.14"
    assert nearest_release("0.5.13.post1") == "0.5.14"  # one release away, not nine
    assert nearest_release("0.5.6") == "0.5.5.post3"
    assert nearest_release("0.5.22") == "0.5.23"
    assert releases_for("0.4.0-0.5.19") == ["0.4.10.post2", "0.5.5.post3", "0.5.14"]
    assert releases_for("0.5.15-0.5.16") == ["0.5.14"]
    assert releases_for("0.5.20-0.5.23") == ["0.5.23"]
    assert releases_for(None) == [covered[-1]]


def test_known_failures_name_real_cases() -> None:
    """Every entry of known_failures.yaml names an input that exists (no stale ids)."""
    ids = set(_case_ids())
    stale = sorted(set(load_known()) - ids)
    assert not stale, f"known_failures.yaml names inputs that no longer exist: {stale}"
