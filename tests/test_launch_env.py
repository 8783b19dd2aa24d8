"""The launch's environment: parsing every way a command sets it, the facts rules see, and
env fixes in the corrected command."""

from __future__ import annotations

from typing import Any

import pytest

from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.launch.command import extract_command, parse_command, render
from sglang_doctor.policy.redact import redact_command as redact
from sglang_doctor.facts.context import Context
from sglang_doctor.fix.correct import corrected_command as corrected
from sglang_doctor.pipeline.run import Options, diagnose
from sglang_doctor.launch.launch_env import launch_env
from sglang_doctor.model import Finding, FixOut

P = "python3 -m sglang.launch_server --model-path X"


def env_of(text: str) -> dict[str, Any]:
    """NAME -> value (None: set, value unknown; 'UNSET': explicitly unset)."""
    cmd = parse_command(text)
    assert cmd is not None, text
    return {k: (v.value if v.is_set else "UNSET") for k, v in launch_env(cmd).vars.items()}


# ----------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("text, want", [
    (f"A=1 B='x y' C=\"\" {P}", {"A": "1", "B": "x y", "C": ""}),
    (f"A=1 A=2 {P}", {"A": "2"}),
    (f"env A=1 {P}", {"A": "1"}),
    (f"/usr/bin/env A='a b' {P}", {"A": "a b"}),
    (f"A=1 env A=2 {P}", {"A": "2"}),  # the wrapper runs after the prefix
    (f"env -u A B=1 {P}", {"A": "UNSET", "B": "1"}),
    (f"env --unset=A -uB {P}", {"A": "UNSET", "B": "UNSET"}),
    (f"export A=1; env -u A {P}", {"A": "UNSET"}),
    (f"export A=1; export B=2; env -i B=3 {P}", {"B": "3"}),  # -i: nothing inherited
    (f"export A=1; A=2 {P}", {"A": "2"}),  # a prefix beats the script's export
    (f"export A=1 && {P}", {"A": "1"}),
    (f"export A=1; unset A; {P}", {"A": "UNSET"}),
    (f"export A=1; export -n A; {P}", {"A": "UNSET"}),
    (f"A=1; export A; {P}", {"A": "1"}),  # export of an earlier shell variable
    (f"A=1; {P}", {}),  # a shell variable that is never exported does not reach the launch
    (f"export A=1; A=2; {P}", {"A": "2"}),  # assigning an exported variable changes it
    (f"set -a; A=1; set +a; B=2; {P}", {"A": "1"}),
    (f"set -o allexport; A=1; {P}", {"A": "1"}),
    (f"declare -x A=1; declare B=2; {P}", {"A": "1"}),
    (f"export NAME; {P}", {"NAME": None}),
    (f"sudo nohup env A=1 {P}", {"A": "1"}),
    ("env A=1 sglang serve --model-path X", {"A": "1"}),
])  # fmt: skip
def test_plain_launch(text: str, want: dict[str, Any]) -> None:
    assert env_of(text) == want


@pytest.mark.parametrize("text, want", [
    (f"docker run -e A=1 --env A=2 img {P}", {"A": "2"}),
    (f"docker run --env=A=1 -eB=2 -e 'C=x y' img {P}", {"A": "1", "B": "2", "C": "x y"}),
    (f"A=1 docker run img {P}", {}),  # the host's prefix stops at docker
    (f"A=1 docker run -e A img {P}", {"A": "1"}),  # -e NAME passes the host's value
    (f"export A=5; docker run -e A img {P}", {"A": "5"}),
    (f"docker run -e A img {P}", {"A": None}),  # from the host, value not in the command
    (f"docker run -e A=1 img env A=2 {P}", {"A": "2"}),  # the container's wrapper runs last
    (f"docker run -e A=1 img env -u A {P}", {"A": "UNSET"}),
])  # fmt: skip
def test_docker(text: str, want: dict[str, Any]) -> None:
    assert env_of(text) == want


def test_docker_env_file_is_named_not_read() -> None:
    cmd = parse_command(f"docker run --env-file .env --env-file=prod.env -e A=1 img {P}")
    env = launch_env(cmd)
    assert env.env_files == [".env", "prod.env"] and env.value("A") == "1"


COMPOSE = """
services:
  sglang:
    image: lmsysorg/sglang:v0.5.6
    env_file: [.env, {path: extra.env}]
    environment:
      NCCL_P2P_DISABLE: 1
      SGLANG_ENABLE_JIT_DEEPGEMM: "0"
      DEBUG: true
      FROM_HOST:
      SPACED: a b
    command: python3 -m sglang.launch_server --model-path X --tp 2
"""

COMPOSE_LIST = """
services:
  sglang:
    environment: ["A=1", "B", "C=x y"]
    command: ["bash", "-c", "export D=4 && python3 -m sglang.launch_server --model-path X"]
"""

K8S = """
spec:
  containers:
    - name: sglang
      env:
        - {name: HF_TOKEN, valueFrom: {secretKeyRef: {name: hf, key: token}}}
        - {name: NCCL_DEBUG, value: INFO}
      envFrom: [{configMapRef: {name: sglang-env}}]
      command: ["python3", "-m", "sglang.launch_server"]
      args: ["--model-path", "X"]
"""


@pytest.mark.parametrize("text, want, files", [
    (COMPOSE, {"NCCL_P2P_DISABLE": "1", "SGLANG_ENABLE_JIT_DEEPGEMM": "0", "DEBUG": "true", "FROM_HOST": None,
               "SPACED": "a b"}, [".env", "extra.env"]),
    (COMPOSE_LIST, {"A": "1", "B": None, "C": "x y", "D": "4"}, []),
    (K8S, {"HF_TOKEN": None, "NCCL_DEBUG": "INFO"}, ["configMapRef:sglang-env"]),
])  # fmt: skip
def test_compose_and_kubernetes_environment(text: str, want: dict[str, Any], files: list[str]) -> None:
    line = extract_command(text, "deploy.yaml")
    assert line is not None and "\n" not in line
    assert env_of(line) == want
    assert launch_env(parse_command(line)).env_files == files
    assert parse_command(line).get("--model-path") == "X"


SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
MODEL=/models/x
export HF_HOME=/data/hf NCCL_DEBUG=INFO
export CUDA_VISIBLE_DEVICES=0,1
source ./env.sh
if [ -n "${DEBUG:-}" ]; then
  unset NCCL_DEBUG
fi
SGLANG_ENABLE_JIT_DEEPGEMM=0 python3 -m sglang.launch_server --model-path "$MODEL" --tp 2
echo done
"""


def test_script_exports_before_the_launch() -> None:
    line = extract_command(SCRIPT, "run.sh")
    assert line is not None
    assert line == ("export HF_HOME=/data/hf NCCL_DEBUG=INFO; export CUDA_VISIBLE_DEVICES=0,1; source ./env.sh; "
                    'unset NCCL_DEBUG; SGLANG_ENABLE_JIT_DEEPGEMM=0 python3 -m sglang.launch_server --model-path "$MODEL" --tp 2')
    assert "MODEL=/models/x;" not in line and "pipefail" not in line
    env = launch_env(parse_command(line))
    # (every branch read as taken: the unset inside the if counts)
    assert {k: v.value for k, v in env.vars.items() if v.is_set} == {
        "HF_HOME": "/data/hf", "CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_ENABLE_JIT_DEEPGEMM": "0"}
    assert env.env_files == ["./env.sh"]
    # the corrected command is still the launch line alone
    assert render(parse_command(line)).startswith("SGLANG_ENABLE_JIT_DEEPGEMM=0 python3")


@pytest.mark.parametrize("text", ["", "env", "env -u", "docker run -e", "A= python3 -m sglang.launch_server",
                                  "export; unset; set -a; python3 -m sglang.launch_server", "env -i -- -x python3 -m sglang.launch_server",
                                  "docker run -e =1 -e '' img python3 -m sglang.launch_server"])
def test_odd_input_never_raises(text: str) -> None:
    cmd = parse_command(text)
    if cmd is not None:
        launch_env(cmd)


# ----------------------------------------------------------------------------- facts


def facts(command: str, log: str = "") -> dict[str, Any]:
    ctx = Context()
    ctx.command = command
    if log:
        from sglang_doctor.read.records import Segmenter
        from sglang_doctor.read.reader import Line

        seg = Segmenter()
        for i, text in enumerate(log.splitlines(), 1):
            for rec in seg.feed(Line(i, text)):
                ctx.observe(rec)
        for rec in seg.finish():
            ctx.observe(rec)
    ctx.finish()
    return {k: v for k, v in ctx.names().items() if k.startswith(("env", "launch.env"))}


def test_facts_from_the_command() -> None:
    got = facts(f"docker run --env-file .env -e SGL_ENABLE_JIT_DEEPGEMM=1 -e HF_TOKEN=hf_abcdefghijklmnopqrstu "
                f"-e TOKEN_REF=$HF_TOKEN -e FROM_HOST img env -u NCCL_DEBUG {P}")
    assert got == {
        "env.SGL_ENABLE_JIT_DEEPGEMM": "1", "env_set.SGL_ENABLE_JIT_DEEPGEMM": True,
        # a fact holds the value as the command has it (the report is redacted as a whole)
        "env.HF_TOKEN": "hf_abcdefghijklmnopqrstu", "env_set.HF_TOKEN": True,
        "env.TOKEN_REF": "$HF_TOKEN", "env_set.TOKEN_REF": True,  # a reference leaks nothing
        "env_set.FROM_HOST": True,  # set, value unknown: no env.FROM_HOST
        "env_set.NCCL_DEBUG": False,
        "launch.env_file": ".env",
    }


def test_facts_from_the_log_win_over_the_command() -> None:
    log = "\n".join([
        "/sgl/python/sglang/srt/environ.py:412: UserWarning: Environment variable SGL_ENABLE_JIT_DEEPGEMM is "
        "deprecated, please use SGLANG_ENABLE_JIT_DEEPGEMM",
        "  warnings.warn(",
        "UserWarning: Environment variable SGLANG_GC_LOG is deprecated. Please use SGLANG_LOG_GC instead.",
        "DeprecationWarning: Environment variable 'SGLANG_NSA_FUSE_TOPK' is deprecated; use 'SGLANG_DSA_FUSE_TOPK' instead.",
        'UserWarning: Invalid value for SGLANG_ENABLE_SPEC_V2: "maybe" is not a valid boolean value, using default "False"',
        "[W Utils.hpp:133] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function getCvarInt)",
        "node01:322:322 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
        "node01:322:322 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
    ])
    got = facts(f"NCCL_SOCKET_IFNAME=ib0 {P}", log)
    assert got["env_set.SGL_ENABLE_JIT_DEEPGEMM"] is True and got["env_set.SGLANG_ENABLE_JIT_DEEPGEMM"] is True
    assert got["env_set.SGLANG_GC_LOG"] is True and got["env_set.SGLANG_LOG_GC"] is True
    assert got["env_set.SGLANG_NSA_FUSE_TOPK"] is True and got["env_set.SGLANG_DSA_FUSE_TOPK"] is True
    # PyTorch's own wording names only the old variable: it reads it, it does not copy it
    assert got["env_set.NCCL_ASYNC_ERROR_HANDLING"] is True and "env_set.TORCH_NCCL_ASYNC_ERROR_HANDLING" not in got
    assert got["env.SGLANG_ENABLE_SPEC_V2"] == "maybe"
    assert got["env.NCCL_SOCKET_IFNAME"] == "eth0"  # what NCCL read, not what the pasted command says
    assert got["env.NCCL_IB_DISABLE"] == "1"


# ----------------------------------------------------------------------------- rules use them

DEEPEP = ("[2025-05-12 13:58:24 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
          '  File "/sgl/python/sglang/srt/layers/moe/token_dispatcher/deepep.py", line 505, in dispatch\n'
          "    x = buffer.dispatch()\n"
          "RuntimeError: DeepEP error: CPU recv timeout\n")


def env_fixes(rules: list[Any], command: str, log: str = DEEPEP, rule: str = "deepep-timeout") -> list[FixOut]:
    run = diagnose(["x.log"], rules, Options(command=command), texts={"x.log": log})
    found = [f for f in run.report.findings if f.rule == rule]
    assert found, [f.rule for f in run.report.findings]
    return [x for x in found[0].fixes if x.kind == "env"]


def test_deepgemm_switch_in_the_spelling_the_launch_uses(rules) -> None:
    # the user sets the pre-0.5 name: newer releases copy it over SGLANG_…, so it is the one to change
    fixes = env_fixes(rules, f"SGL_ENABLE_JIT_DEEPGEMM=1 {P}")
    assert [(x.name, x.from_, x.value) for x in fixes] == [("SGL_ENABLE_JIT_DEEPGEMM", "1", "0")]
    fixes = env_fixes(rules, f"docker run -e SGLANG_ENABLE_JIT_DEEPGEMM=1 lmsysorg/sglang:v0.5.6 {P}")
    assert [(x.name, x.from_, x.value) for x in fixes] == [("SGLANG_ENABLE_JIT_DEEPGEMM", "1", "0")]


def test_a_fix_already_in_place_is_not_offered_again(rules) -> None:
    assert env_fixes(rules, f"SGLANG_ENABLE_JIT_DEEPGEMM=false {P}") == []
    assert env_fixes(rules, f"SGL_ENABLE_JIT_DEEPGEMM=0 {P}") == []
    run = diagnose(["x.log"], rules, Options(command=f"SGLANG_ENABLE_JIT_DEEPGEMM=0 {P}"), texts={"x.log": DEEPEP})
    f = next(f for f in run.report.findings if f.rule == "deepep-timeout")
    assert "already" in f.explanation and "SGLANG_ENABLE_JIT_DEEPGEMM=0" in f.explanation


def test_conditions_see_env_facts(rules, tmp_path) -> None:
    from sglang_doctor.engine.rules import load_rules

    d = tmp_path / "r" / "flags"
    d.mkdir(parents=True)
    (d / "my-env-rule.yaml").write_text("""
id: my-env-rule
code: SGD1750
title: test rule
severity: warning
family: flags
versions: "*"
match: {any: [{regex: 'Hello there world'}]}
conditions:
  - {fact: env.NCCL_P2P_DISABLE, op: eq, value: "1"}
  - {fact: env_set.CUDA_VISIBLE_DEVICES, op: eq, value: false}
explanation: "P2P is off ({env.NCCL_P2P_DISABLE})."
fix_none: nothing
docs: {what: a, why: b, fix: c}
""")
    mine = [r for r in load_rules([str(tmp_path / "r")]) if r.id == "my-env-rule"]
    log = {"x.log": "Hello there world\n"}
    hit = diagnose(["x.log"], mine, Options(command=f"NCCL_P2P_DISABLE=1 env -u CUDA_VISIBLE_DEVICES {P}"), texts=log)
    assert [f.explanation for f in hit.report.findings] == ["P2P is off (1)."]
    miss = diagnose(["x.log"], mine, Options(command=f"NCCL_P2P_DISABLE=1 {P}"), texts=log)
    assert miss.report.findings == []


# ----------------------------------------------------------------------------- corrected command


def env_fix(name: str, value: str | None = None, action: str = "set") -> dict[str, Any]:
    return {"kind": "env", "name": name, "value": value, "action": action}


@pytest.mark.parametrize("text, fixes, want", [
    (P, [env_fix("A", "1")], f"A=1 {P}"),
    (P, [env_fix("A", "a b")], f"A='a b' {P}"),
    (f"A=1 B=2 A=3 {P}", [env_fix("A", "0")], f"A=0 B=2 {P}"),  # replaced once, the duplicate goes
    (f"A=1 {P}", [env_fix("A", action="remove")], P),
    (f"export A=1; {P}", [env_fix("A", action="remove")], f"env -u A {P}"),  # the script still exports it
    (f"env A=1 {P}", [env_fix("A", "0")], f"env A=0 {P}"),  # a prefix would lose to the wrapper
    (f"env A=1 {P}", [env_fix("B", "2")], f"env A=1 B=2 {P}"),
    (f"env -u A {P}", [env_fix("A", "0")], f"env A=0 {P}"),
    (f"A=1 env B=1 {P}", [env_fix("A", "0")], f"env B=1 A=0 {P}"),
    (f"docker run --gpus all img {P}", [env_fix("A", "1")], f"docker run --gpus all -e A=1 img {P}"),
    (f"docker run -e A=1 -p 1:1 --env A=2 img {P}", [env_fix("A", "0")], f"docker run -e A=0 -p 1:1 img {P}"),
    (f"docker run --env=A=1 img {P}", [env_fix("A", "0")], f"docker run --env=A=0 img {P}"),
    (f"docker run -e A img {P}", [env_fix("A", "0")], f"docker run -e A=0 img {P}"),
    (f"docker run -e A=1 -e B=2 img {P}", [env_fix("A", action="remove")], f"docker run -e B=2 img {P}"),
    (f"docker run --env-file x.env img {P}", [env_fix("A", action="remove")],
     f"docker run --env-file x.env img env -u A {P}"),
    (f"docker run img env A=1 {P}", [env_fix("A", "0")], f"docker run img env A=0 {P}"),
    (f"A=1 docker run img {P}", [env_fix("B", "1")], f"A=1 docker run -e B=1 img {P}"),
    (f"docker run -e HF_TOKEN=hf_abcdefghijklmnopqrstu img {P}", [env_fix("NCCL_DEBUG", "INFO")],
     f"docker run -e HF_TOKEN=$HF_TOKEN -e NCCL_DEBUG=INFO img {P}"),
])  # fmt: skip
def test_env_fix_written_the_way_the_command_sets_env(text: str, fixes: list[Any], want: str) -> None:
    cmd = parse_command(text)
    new, applied = apply_fixes(cmd, fixes)
    assert all(applied)
    assert render(redact(new)) == want
    again, _ = apply_fixes(new, fixes)  # no duplicate on a second pass
    assert render(redact(again)) == want


def test_compose_command_gets_an_env_wrapper() -> None:
    line = extract_command(COMPOSE, "docker-compose.yml")
    new, applied = apply_fixes(parse_command(line), [env_fix("NCCL_DEBUG", "INFO")], env_wrapper=True)
    assert applied == [True]
    assert render(new) == "env NCCL_DEBUG=INFO python3 -m sglang.launch_server --model-path X --tp 2"
    # an entrypoint-only launcher has no place for it: not applied, said by the fix line alone
    cmd = parse_command("python3 -m sglang.launch_server --model-path X")
    cmd.launcher = ["-m", "sglang.launch_server"]
    assert apply_fixes(cmd, [env_fix("A", "1")], env_wrapper=True)[1] == [False]


def corrected_command(command: str, findings: list[Finding], _ctx: None, env_wrapper: bool = False) -> str | None:
    fixed = corrected(command, findings, env_wrapper=env_wrapper)
    return render(fixed) if fixed is not None else None


def finding(*fixes: FixOut, severity: str = "error") -> Finding:
    return Finding(rule="r", code="SGD1", severity=severity, title="t", explanation="e", fixes=list(fixes))


def test_corrected_command_applies_the_first_env_fix() -> None:
    fx = FixOut(kind="env", name="NCCL_P2P_DISABLE", action="set", value="1")
    other = FixOut(kind="env", name="OTHER", action="set", value="1")
    assert corrected_command(P, [finding(fx, other)], None) == f"NCCL_P2P_DISABLE=1 {P}"
    assert corrected_command(f"docker run img {P}", [finding(fx)], None) == f"docker run -e NCCL_P2P_DISABLE=1 img {P}"
    assert corrected_command(P, [finding(fx)], None, env_wrapper=True) == f"env NCCL_P2P_DISABLE=1 {P}"
    rm = FixOut(kind="env", name="HF_HUB_OFFLINE", action="remove")
    assert corrected_command(f"HF_HUB_OFFLINE=1 {P} --tp 2", [finding(rm)], None) == f"{P} --tp 2"


def test_cli_cmd_file_compose(tmp_path, monkeypatch) -> None:
    from helpers_cli import isolate, run

    isolate(tmp_path, monkeypatch)
    (tmp_path / "compose.yml").write_text(COMPOSE)
    (tmp_path / "x.log").write_text("Cannot access gated repo for url https://huggingface.co/google/gemma-2-9b-it/"
                                    "resolve/main/config.json.\n")
    r = run(["--format", "json", "--cmd-file", "compose.yml", "x.log"])
    import json

    rep = json.loads(r.stdout)
    assert rep["context"]["env"]["NCCL_P2P_DISABLE"] == "1"
    assert rep["context"]["launch"]["env_file"] == ".env, extra.env"
    # compose runs its command without a shell: the env fix goes into the service's `environment:`, in its form
    assert rep["corrected_command"] == ("# services.sglang:\nenvironment:\n  NCCL_P2P_DISABLE: 1\n"
                                        "  SGLANG_ENABLE_JIT_DEEPGEMM: '0'\n  DEBUG: true\n  FROM_HOST: null\n"
                                        "  SPACED: a b\n  HF_TOKEN: $HF_TOKEN")
    # the same launch as a shell line gets a prefix
    r = run(["--format", "json", "--cmd", "python3 -m sglang.launch_server --model-path X --tp 2", "x.log"])
    assert json.loads(r.stdout)["corrected_command"] == "HF_TOKEN=$HF_TOKEN python3 -m sglang.launch_server --model-path X --tp 2"


# ----------------------------------------------------------------------------- secrets

ENV_SECRETS = {"OPENAI_API_KEY": "oaiKey77q with spaces9", "AWS_SECRET_ACCESS_KEY": "AbCdPlainXyz123",
               "DB_PASSWD": "hunter2x", "GITHUB_TOKEN": "ghtok8 z12345", "HF_TOKEN": "hf_QwErTyUiOpAsDfGhJkLzXc"}


@pytest.mark.parametrize("fmt", __import__("sglang_doctor.report", fromlist=["FORMATS"]).FORMATS)
def test_no_env_secret_in_any_format(tmp_path, monkeypatch, fmt) -> None:
    from pathlib import Path

    from helpers_cli import isolate, run

    isolate(tmp_path, monkeypatch)
    for var in ("GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(var, raising=False)
    demo = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"
    log = tmp_path / "x.log"
    log.write_text("\n".join((demo / "qwen3.6-27b-awq-dtype-crash.log").read_text().splitlines()[1:]) + "\n")
    cmd = (f"export GITHUB_TOKEN=\"{ENV_SECRETS['GITHUB_TOKEN']}\"; OPENAI_API_KEY='{ENV_SECRETS['OPENAI_API_KEY']}' "
           f"docker run --gpus all -e HF_TOKEN={ENV_SECRETS['HF_TOKEN']} "
           f"-e AWS_SECRET_ACCESS_KEY={ENV_SECRETS['AWS_SECRET_ACCESS_KEY']} --env=DB_PASSWD={ENV_SECRETS['DB_PASSWD']} "
           f"-e OPENAI_API_KEY lmsysorg/sglang:v0.5.14 env GITHUB_TOKEN='{ENV_SECRETS['GITHUB_TOKEN']}' "
           "python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B-AWQ-INT4 --dtype auto")
    summary = tmp_path / "summary.md"
    r = run(["--format", fmt, "--cmd", cmd, "--why", log.name], env={"GITHUB_STEP_SUMMARY": str(summary)})
    texts = [r.stdout, r.stderr] + ([summary.read_text()] if summary.exists() else [])
    for text in texts:
        for name, secret in ENV_SECRETS.items():
            for part in secret.split():
                if len(part) >= 6:
                    assert part not in text, (name, fmt, text[text.find(part) - 200:text.find(part) + 50])
    if fmt == "json":
        import json

        rep = json.loads(r.stdout)
        assert rep["context"]["env"]["AWS_SECRET_ACCESS_KEY"] == "<redacted>"
        assert rep["context"]["env_set"]["OPENAI_API_KEY"] is True  # (set from the host: value not shown)
        fixed = rep["corrected_command"]
        assert "-e HF_TOKEN=$HF_TOKEN" in fixed and "--env=DB_PASSWD=$DB_PASSWD" in fixed
        assert "--dtype bfloat16" in fixed


# ----------------------------------------------------------------------------- any input

import shlex  # noqa: E402

from hypothesis import given, settings, strategies as st  # noqa: E402

_name = st.sampled_from(["A", "B", "NCCL_DEBUG", "HF_TOKEN"])
_val = st.one_of(st.from_regex(r"[A-Za-z0-9_./:,-]{0,8}", fullmatch=True),
                 st.text(alphabet="ab '\"$=-", max_size=6).map(shlex.quote))
_word = st.one_of(
    st.tuples(_name, _val).map("=".join), _name, st.sampled_from(["-u", "-i", "--", "-", "--unset=A", "-uB", "-e", "--env"]),
)
_statement = st.one_of(
    st.lists(_word, min_size=1, max_size=3).map(lambda w: "export " + " ".join(w)),
    st.lists(_name, min_size=1, max_size=2).map(lambda w: "unset " + " ".join(w)),
    st.sampled_from(["set -a", "set +a", "set -o allexport", ". ./x.env", "declare -x A=1"]),
    st.tuples(_name, _val).map("=".join),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_statement, max_size=3), st.lists(_word, max_size=3),
       st.sampled_from(["", "docker run --gpus all {w} img ", "env {w} ", "docker run {w} img env {w} "]),
       st.lists(_word, max_size=3), st.sampled_from([None, "0", "a b"]), st.booleans())
def test_any_env_syntax_parses_resolves_and_edits(pre: list[str], prefix: list[str], wrap: str, inner: list[str],
                                                 value: str | None, yaml: bool) -> None:
    text = "; ".join([*pre, " ".join([*[p for p in prefix if "=" in p and not p.startswith("-")],
                                      wrap.replace("{w}", " ".join(inner)), P])])
    cmd = parse_command(text)
    if cmd is None:
        return
    launch_env(cmd)
    fixes = [env_fix("A", value, "set" if value is not None else "remove"), env_fix("NCCL_DEBUG", "INFO")]
    once, applied = apply_fixes(cmd, fixes, env_wrapper=yaml)
    again = parse_command(render(once))
    assert again is not None
    if value is not None and all(applied):  # a fix written holds once re-read, whatever the command looked like
        env = launch_env(again)
        assert env.value("A") == value and env.value("NCCL_DEBUG") == "INFO", (text, render(once))
    twice, _ = apply_fixes(once, fixes, env_wrapper=yaml)
    assert render(twice) == render(once)
