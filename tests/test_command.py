"""Tests for sglang_doctor.launch.command: parse, extract, apply fixes, render, redact."""

from __future__ import annotations

import enum
import shlex
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.launch.command import Arg, LaunchCommand, extract_command, parse_command, render
from sglang_doctor.policy.redact import redact_command as redact

P = "python3 -m sglang.launch_server"


def parse(text: str, **kw) -> LaunchCommand:
    cmd = parse_command(text, **kw)
    assert cmd is not None, text
    return cmd


def fix(kind: str, flag: str | None = None, action: str = "set", value=None, name: str | None = None) -> dict:
    return {"kind": kind, "flag": flag, "name": name, "action": action, "value": value}


# ----------------------------------------------------------------------------- launchers


@pytest.mark.parametrize(
    "text, launcher",
    [
        (f"{P} --model-path X", ["python3", "-m", "sglang.launch_server"]),
        ("python -m sglang.launch_server --model-path X", ["python", "-m", "sglang.launch_server"]),
        ("sglang serve --model-path X", ["sglang", "serve"]),
        ("python python/sglang/launch_server.py --model-path X", ["python", "python/sglang/launch_server.py"]),
        ("/opt/venv/bin/python3.11 -u -m sglang.launch_server --model-path X",
         ["/opt/venv/bin/python3.11", "-u", "-m", "sglang.launch_server"]),
        ("$PYTHON -m sglang.launch_server --model-path X", ["$PYTHON", "-m", "sglang.launch_server"]),
        ("nohup python3 -m sglang.launch_server --model-path X", ["nohup", "python3", "-m", "sglang.launch_server"]),
        ("uv run sglang serve --model-path X", ["uv", "run", "sglang", "serve"]),
        ("python -m sglang_router.launch_server --model-path X", ["python", "-m", "sglang_router.launch_server"]),
    ],
)  # fmt: skip
def test_launcher_forms(text: str, launcher: list[str]) -> None:
    cmd = parse(text)
    assert cmd.launcher == launcher
    assert cmd.get("--model-path") == "X"
    assert cmd.docker is None
    assert render(cmd) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "pip install 'sglang[all]'",
        "python -m sglang.bench_serving --backend sglang",
        "echo python3 -m sglang.launch_server --model-path X",
        "python3 -m vllm.entrypoints.openai.api_server --model X",
        "docker run --gpus all lmsysorg/sglang:latest python3 train.py",
        "docker run --gpus all",
        "docker ps",
        "# python3 -m sglang.launch_server --model-path X",
        "python3 -m",
    ],
)
def test_not_a_launch(text: str) -> None:
    assert parse_command(text) is None


# ----------------------------------------------------------------------------- args


def test_equals_and_separate_values() -> None:
    cmd = parse(f"{P} --model-path X --tp 2 --mem-fraction-static=0.8")
    assert [a.flag for a in cmd.args] == ["--model-path", "--tp-size", "--mem-fraction-static"]
    tp, mem = cmd.args[1], cmd.args[2]
    assert (tp.written, tp.value, tp.uses_equals) == ("--tp", "2", False)
    assert (mem.written, mem.value, mem.uses_equals) == ("--mem-fraction-static=0.8", "0.8", True)
    assert cmd.get("--mem-fraction-static") == "0.8"


@pytest.mark.parametrize(
    "written, canonical",
    [
        ("--tp", "--tp-size"), ("--tensor-parallel-size", "--tp-size"), ("--tp-size", "--tp-size"),
        ("--dp", "--dp-size"), ("--data-parallel-size", "--dp-size"),
        ("--ep", "--ep-size"), ("--expert-parallel-size", "--ep-size"),
        ("--pp", "--pp-size"), ("--pipeline-parallel-size", "--pp-size"),
        ("--model", "--model-path"), ("--mem-frac", "--mem-fraction-static"),
    ],
)  # fmt: skip
def test_default_aliases(written: str, canonical: str) -> None:
    for form in (f"{written} 4", f"{written}=4"):
        cmd = parse(f"{P} {form}")
        assert cmd.args[0].flag == canonical
        assert cmd.get(canonical) == "4"
        assert cmd.get(written) == "4"  # lookups fold aliases too
        assert cmd.has(canonical)


def test_caller_alias_table_extends_defaults() -> None:
    cmd = parse(f"{P} --ctx 4096 --tp 2", aliases={"--ctx": "--context-length"})
    assert cmd.get("--context-length") == "4096"
    assert cmd.get("--tp-size") == "2"


def test_boolean_flags() -> None:
    cmd = parse(f"{P} --trust-remote-code --model-path X --enable-torch-compile")
    assert cmd.has("--trust-remote-code") and cmd.get("--trust-remote-code") is None
    assert cmd.has("--enable-torch-compile") and cmd.get("--enable-torch-compile") is None
    assert cmd.get("--model-path") == "X"
    assert not cmd.has("--disable-radix-cache")


def test_negative_numbers_are_values_but_flags_are_not() -> None:
    cmd = parse(f"{P} --random-seed -1 --weight -0.5 --tiny -1e-3 --flag --other -x")
    assert cmd.get("--random-seed") == "-1"
    assert cmd.get("--weight") == "-0.5"
    assert cmd.get("--tiny") == "-1e-3"
    assert cmd.has("--flag") and cmd.get("--flag") is None
    assert cmd.has("--other") and cmd.get("--other") is None
    assert cmd.has("-x")


def test_nargs_values_and_last_occurrence_wins() -> None:
    cmd = parse(f"{P} --cuda-graph-bs 1 2 4 8 --tp 2 --tp 4")
    arg = cmd.args[0]
    assert (arg.value, arg.extra, arg.values) == ("1", ["2", "4", "8"], ["1", "2", "4", "8"])
    assert cmd.get("--cuda-graph-bs") == "1 2 4 8"
    assert cmd.get("--tp-size") == "4"


def test_positionals_and_double_dash() -> None:
    cmd = parse(f"{P} model-dir --port 1 -- --not-a-flag")
    assert cmd.args[0] == Arg("", "model-dir", "model-dir")
    assert [a.flag for a in cmd.args] == ["", "--port", "", ""]
    assert cmd.args[-1].value == "--not-a-flag"
    assert render(cmd) == f"{P} model-dir --port 1 -- --not-a-flag"


def test_quotes_and_json() -> None:
    text = (
        f"{P} --json-model-override-args '{{\"rope_scaling\": {{\"type\": \"yarn\", \"factor\": 4.0}}}}' "
        '--chat-template "my template.jinja" --served-model-name=\'a b\' --x "say \\"hi\\""'
    )
    cmd = parse(text)
    assert cmd.get("--json-model-override-args") == '{"rope_scaling": {"type": "yarn", "factor": 4.0}}'
    assert cmd.get("--chat-template") == "my template.jinja"
    assert cmd.get("--served-model-name") == "a b"
    assert cmd.args[2].written == "--served-model-name='a b'"
    assert cmd.get("--x") == 'say "hi"'
    assert render(cmd) == text
    assert shlex.split(render(cmd)) == shlex.split(text)


def test_variables_kept_verbatim() -> None:
    text = f'{P} --model-path $MODEL --port ${{PORT}} --dp $((NGPU / 2)) --host "$(hostname -i)" --x `id -u`'
    cmd = parse(text)
    assert cmd.get("--model-path") == "$MODEL"
    assert cmd.get("--port") == "${PORT}"
    assert cmd.get("--dp-size") == "$((NGPU / 2))"
    assert cmd.get("--host") == "$(hostname -i)"
    assert cmd.get("--x") == "`id -u`"
    assert render(cmd) == text


def test_multiline_continuations_and_comments() -> None:
    text = """# start the server
CUDA_VISIBLE_DEVICES=0,1 \\
python3 -m sglang.launch_server \\
    --model-path meta-llama/Llama-3.1-8B-Instruct \\
    --tp 2 \\
    --json-model-override-args '{"rope_scaling":
        {"type": "yarn"}}' \\
    --trust-remote-code  # needed for custom code
"""
    cmd = parse(text)
    assert cmd.env_prefix == [("CUDA_VISIBLE_DEVICES", "0,1")]
    assert cmd.get("--tp-size") == "2"
    assert cmd.get("--json-model-override-args") == '{"rope_scaling":\n        {"type": "yarn"}}'
    assert cmd.has("--trust-remote-code")
    assert len(cmd.args) == 4  # the trailing comment is not an argument


def test_env_prefix() -> None:
    text = f'CUDA_VISIBLE_DEVICES=0,1 SGLANG_FOO=1 NCCL_DEBUG="INFO" EMPTY= {P} --model-path X'
    cmd = parse(text)
    assert cmd.env_prefix == [("CUDA_VISIBLE_DEVICES", "0,1"), ("SGLANG_FOO", "1"), ("NCCL_DEBUG", "INFO"), ("EMPTY", "")]
    assert cmd.env("NCCL_DEBUG") == "INFO"
    assert render(cmd) == text  # the user's quoting of NCCL_DEBUG survives


def test_redirects_background_and_pipes() -> None:
    cmd = parse(f"nohup {P} --model-path X > server.log 2>&1 &")
    assert cmd.redirects == ["> server.log", "2>&1"]
    assert render(cmd) == f"nohup {P} --model-path X > server.log 2>&1"
    cmd = parse(f"{P} --model-path X 2>&1 | tee log.txt")
    assert cmd.get("--model-path") == "X" and cmd.redirects == ["2>&1"]


# ----------------------------------------------------------------------------- docker

DOCKER = (
    "docker run --gpus all --shm-size 32g -p 30000:30000 -e HF_TOKEN=hf_xxx --ipc=host "
    "lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m --tp 2"
)


def test_docker_run() -> None:
    cmd = parse(DOCKER)
    d = cmd.docker
    assert d is not None
    assert d.command == ["docker", "run"]
    assert d.image == "lmsysorg/sglang:latest"
    assert [(o.flag, o.value) for o in d.options] == [
        ("--gpus", "all"), ("--shm-size", "32g"), ("--publish", "30000:30000"),
        ("--env", "HF_TOKEN=hf_xxx"), ("--ipc", "host"),
    ]  # fmt: skip
    assert d.get("--shm-size") == "32g" and d.get("-p") == "30000:30000" and d.has("--ipc")
    assert cmd.launcher == ["python3", "-m", "sglang.launch_server"]
    assert cmd.get("--tp-size") == "2"
    assert cmd.env("HF_TOKEN") == "hf_xxx"
    assert render(cmd) == DOCKER


def test_docker_option_arity() -> None:
    text = (
        "sudo docker run -it --rm -d --privileged --init --name sgl -v /models:/models:ro "
        "--network=host --ulimit memlock=-1 --ulimit stack=67108864 -w /work -u 1000:1000 "
        "--env-file .env --runtime nvidia --entrypoint python3 -eFOO=1 -m 64g --restart unless-stopped "
        "--label a=b -h box --cap-add SYS_PTRACE --security-opt seccomp=unconfined --platform linux/amd64 "
        "--pull always --log-driver json-file --log-opt max-size=10m --add-host h:1.2.3.4 --device /dev/infiniband "
        "--cpus 8 --mount type=bind,src=/a,dst=/b --ipc host --net host "
        "lmsysorg/sglang:v0.5.2-cu126 -m sglang.launch_server --model-path /models/x"
    )
    cmd = parse(text)
    d = cmd.docker
    assert d is not None
    assert d.command == ["sudo", "docker", "run"]
    assert d.image == "lmsysorg/sglang:v0.5.2-cu126"
    assert cmd.launcher == ["-m", "sglang.launch_server"]  # interpreter comes from --entrypoint
    flags = [o.flag for o in d.options]
    for boolean in ("-it", "--rm", "--detach", "--privileged", "--init"):
        assert boolean in flags
        assert next(o for o in d.options if o.flag == boolean).value is None
    assert d.get("--name") == "sgl"
    assert d.get("--volume") == "/models:/models:ro"
    assert d.get("--network") == "host"  # --net folds onto --network; last one wins
    assert d.get("--memory") == "64g"
    assert d.get("--env") == "FOO=1"
    assert d.get("--entrypoint") == "python3"
    assert d.get("--hostname") == "box"
    assert d.get("--ulimit") == "stack=67108864"
    assert render(cmd) == text


@pytest.mark.parametrize(
    "prefix",
    ["docker container run --rm", "podman run --device nvidia.com/gpu=all", "nvidia-docker run"],
)
def test_docker_variants(prefix: str) -> None:
    cmd = parse(f"{prefix} img:1 {P} --model-path X")
    assert cmd.docker is not None and cmd.docker.image == "img:1"
    assert cmd.get("--model-path") == "X"


def test_docker_with_env_prefix_and_clustered_short_options() -> None:
    cmd = parse(f"DOCKER_HOST=tcp://h:2375 docker run -dp 8000:30000 img {P} --model-path X")
    assert cmd.env_prefix == [("DOCKER_HOST", "tcp://h:2375")]
    assert cmd.docker is not None and cmd.docker.get("--publish") == "8000:30000"
    assert cmd.docker.image == "img"


def test_bash_c_wrapper_is_unwrapped() -> None:
    cmd = parse(f"docker run --gpus all img bash -c \"pip install x && {P} --model-path X --tp 2\"")
    assert cmd.launcher == P.split()
    assert cmd.get("--tp-size") == "2"


# ----------------------------------------------------------------------------- extract

SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
export HF_HOME=/data/hf
MODEL=${1:-Qwen/Qwen2.5-7B-Instruct}
pip install -U "sglang[all]"
echo "launching python3 -m sglang.launch_server"
if [ -n "${DEBUG:-}" ]; then
    CUDA_LAUNCH_BLOCKING=1 python3 -m sglang.launch_server \\
        --model-path "$MODEL" \\
        --tp 2 \\
        --port 30000 # the default port
fi
python3 -m sglang.launch_server --model-path other
curl localhost:30000/health
"""


def test_extract_from_script() -> None:
    out = extract_command(SCRIPT, "run.sh")
    # the script's exports ride along (its plain MODEL=… and `set -euo pipefail` do not)
    assert out == ('export HF_HOME=/data/hf; '
                   'CUDA_LAUNCH_BLOCKING=1 python3 -m sglang.launch_server --model-path "$MODEL" --tp 2 --port 30000')
    cmd = parse(out)
    assert cmd.preamble == [["export", "HF_HOME=/data/hf"]]
    assert cmd.get("--model-path") == "$MODEL"
    assert parse(SCRIPT).get("--port") == "30000"  # parse_command also takes the first launch


def test_extract_one_liner_and_none() -> None:
    assert extract_command(f"{P} --model-path X", None) == f"{P} --model-path X"
    assert extract_command("ls -la\necho hi\n", "x.sh") is None
    assert extract_command("", None) is None


COMPOSE_STRING = """
services:
  redis:
    image: redis
    command: redis-server --save 60 1
  sglang:
    image: lmsysorg/sglang:latest
    environment:
      HF_TOKEN: secret
    command: >
      python3 -m sglang.launch_server
      --model-path meta-llama/Llama-3.1-8B-Instruct
      --host 0.0.0.0 --port 30000
      --json-model-override-args '{"a": 1}'
"""

COMPOSE_LIST = """
services:
  sglang:
    image: lmsysorg/sglang:latest
    command: ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B",
              "--chat-template", "my template.jinja", "--tp", "2"]
"""

COMPOSE_ENTRYPOINT = """
services:
  sglang:
    image: lmsysorg/sglang:latest
    entrypoint: python3 -m sglang.launch_server
    command: --model-path meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0 --port 30000
"""

COMPOSE_LITERAL = """
services:
  sglang:
    command: |
      python3 -m sglang.launch_server \\
        --model-path X \\
        --tp 4
"""

COMPOSE_BASH = """
services:
  sglang:
    command: ["bash", "-c", "pip install flashinfer && python3 -m sglang.launch_server --model-path X --dp 2"]
"""

K8S = """
apiVersion: v1
kind: Service
metadata: {name: sglang}
---
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: sglang
          image: lmsysorg/sglang:latest
          command: ["python3", "-m", "sglang.launch_server"]
          args: ["--model-path", "X", "--tp", "8"]
"""


@pytest.mark.parametrize(
    "text, checks",
    [
        (COMPOSE_STRING, {"--model-path": "meta-llama/Llama-3.1-8B-Instruct", "--port": "30000",
                          "--json-model-override-args": '{"a": 1}'}),
        (COMPOSE_LIST, {"--model-path": "Qwen/Qwen3-8B", "--chat-template": "my template.jinja", "--tp-size": "2"}),
        (COMPOSE_ENTRYPOINT, {"--model-path": "meta-llama/Llama-3.1-8B-Instruct", "--host": "0.0.0.0"}),
        (COMPOSE_LITERAL, {"--model-path": "X", "--tp-size": "4"}),
        (COMPOSE_BASH, {"--model-path": "X", "--dp-size": "2"}),
        (K8S, {"--model-path": "X", "--tp-size": "8"}),
    ],
)  # fmt: skip
@pytest.mark.parametrize("filename", ["docker-compose.yml", "deploy.yaml", None])
def test_extract_from_yaml(text: str, checks: dict[str, str], filename: str | None) -> None:
    out = extract_command(text, filename)
    assert out is not None
    assert "\n" not in out
    cmd = parse(out)
    for flag, value in checks.items():
        assert cmd.get(flag) == value


def test_extract_yaml_without_launch_or_broken() -> None:
    assert extract_command("services:\n  db:\n    command: postgres\n", "compose.yml") is None
    assert extract_command("services: [\n  command: {", "compose.yaml") is None
    assert extract_command("a: &a [*a, *a]\ncommand: *a\n", "compose.yaml") is None  # cyclic alias


# ----------------------------------------------------------------------------- fixes

BASE = f"CUDA_VISIBLE_DEVICES=0 {P} --model-path X --tp 2 --mem-fraction-static=0.9 --trust-remote-code"


def test_flag_set_in_place_keeps_equals_style() -> None:
    cmd = parse(BASE)
    new, applied = apply_fixes(cmd, [fix("flag", "--mem-fraction-static", "lower", "0.8")])
    assert applied == [True]
    assert render(new) == BASE.replace("--mem-fraction-static=0.9", "--mem-fraction-static=0.8")
    assert render(cmd) == BASE  # the input is not modified


def test_flag_set_via_alias_keeps_user_spelling() -> None:
    new, applied = apply_fixes(parse(BASE), [fix("flag", "--tensor-parallel-size", "set", "4")])
    assert applied == [True]
    assert render(new) == BASE.replace("--tp 2", "--tp 4")


def test_flag_set_appends_when_absent() -> None:
    new, _ = apply_fixes(parse(BASE), [fix("flag", "--chunked-prefill-size", "set", "4096")])
    assert render(new) == BASE + " --chunked-prefill-size 4096"


def test_flag_set_without_value_is_written_only_for_a_switch() -> None:
    # a flag that takes a value is not appended bare when the fix does not know the value
    new, applied = apply_fixes(parse(BASE), [fix("flag", "--node-rank", "set")])
    assert applied == [False] and render(new) == BASE
    new, applied = apply_fixes(parse(BASE), [fix("flag", "--disable-radix-cache", "set")])
    assert applied == [True] and render(new) == BASE + " --disable-radix-cache"


def test_flag_value_needing_quotes_and_nargs_list() -> None:
    new, _ = apply_fixes(
        parse(BASE),
        [fix("flag", "--json-model-override-args", "set", '{"a": 1}'), fix("flag", "--cuda-graph-bs", "set", [1, 2, 4])],
    )
    assert render(new).endswith(" --json-model-override-args '{\"a\": 1}' --cuda-graph-bs 1 2 4")
    assert new.get("--cuda-graph-bs") == "1 2 4"


def test_flag_add_and_remove() -> None:
    cmd = parse(BASE)
    new, applied = apply_fixes(
        cmd,
        [
            fix("flag", "--disable-cuda-graph", "add"),
            fix("flag", "--trust-remote-code", "add"),  # already there: unchanged
            fix("flag", "--tp-size", "remove"),
            fix("flag", "--trust-remote-code", "remove"),
            fix("flag", "--not-there", "remove"),
        ],
    )
    assert applied == [True] * 5
    assert render(new) == f"CUDA_VISIBLE_DEVICES=0 {P} --model-path X --mem-fraction-static=0.9 --disable-cuda-graph"


def test_raise_lower_without_value_not_applied() -> None:
    cmd = parse(BASE)
    new, applied = apply_fixes(cmd, [fix("flag", "--mem-fraction-static", "lower"), fix("flag", "--tp", "raise")])
    assert applied == [False, False]
    assert render(new) == BASE


def test_raise_lower_never_move_the_wrong_way() -> None:
    cmd = parse(BASE)
    new, applied = apply_fixes(cmd, [fix("flag", "--mem-fraction-static", "raise", "0.85")])
    assert applied == [True] and render(new) == BASE  # 0.9 already satisfies "at least 0.85"
    new, _ = apply_fixes(cmd, [fix("flag", "--mem-fraction-static", "raise", "0.95")])
    assert new.get("--mem-fraction-static") == "0.95"
    new, _ = apply_fixes(cmd, [fix("flag", "--tp", "lower", "4")])
    assert new.get("--tp-size") == "2"


def test_duplicate_flag_occurrences_all_updated() -> None:
    new, _ = apply_fixes(parse(f"{P} --tp 2 --tp-size=8"), [fix("flag", "--tp-size", "set", "4")])
    assert render(new) == f"{P} --tp 4 --tp-size=4"


def test_flag_fix_given_as_flag_equals_value() -> None:
    new, applied = apply_fixes(parse(BASE), [fix("flag", "--port=30001")])
    assert applied == [True] and new.get("--port") == "30001"


def test_env_fixes_shell() -> None:
    cmd = parse(BASE)
    new, applied = apply_fixes(
        cmd,
        [
            fix("env", name="CUDA_VISIBLE_DEVICES", value="0,1"),
            fix("env", name="NCCL_P2P_DISABLE", value="1"),
            fix("env", name="SGLANG_X", value="a b"),
            fix("env", name="NOT_SET", action="remove"),
            fix("env", name="NEEDS_VALUE", action="set"),
        ],
    )
    assert applied == [True, True, True, True, False]
    assert render(new).startswith(f"CUDA_VISIBLE_DEVICES=0,1 NCCL_P2P_DISABLE=1 SGLANG_X='a b' {P} ")
    new2, _ = apply_fixes(new, [fix("env", name="CUDA_VISIBLE_DEVICES", action="remove")])
    assert new2.env_prefix == [("NCCL_P2P_DISABLE", "1"), ("SGLANG_X", "a b")]


def test_env_fixes_docker() -> None:
    cmd = parse(DOCKER)
    new, applied = apply_fixes(
        cmd,
        [fix("env", name="NCCL_DEBUG", value="INFO"), fix("env", name="HF_TOKEN", value="$HF_TOKEN")],
    )
    assert applied == [True, True]
    assert render(new) == DOCKER.replace(
        "-e HF_TOKEN=hf_xxx", "-e HF_TOKEN=$HF_TOKEN -e NCCL_DEBUG=INFO"
    )  # new -e goes after the existing ones, before the image
    assert new.env_prefix == []
    assert new.env("NCCL_DEBUG") == "INFO"
    new2, applied = apply_fixes(new, [fix("env", name="HF_TOKEN", action="remove")])
    assert applied == [True] and "HF_TOKEN" not in render(new2)


def test_env_fix_docker_without_existing_env_and_equals_style() -> None:
    cmd = parse(f"docker run --rm --env=A=1 img {P} --model-path X")
    new, _ = apply_fixes(cmd, [fix("env", name="A", value="2"), fix("env", name="B", value="3")])
    assert render(new) == f"docker run --rm --env=A=2 -e B=3 img {P} --model-path X"
    cmd = parse(f"docker run --rm img {P} --model-path X")
    new, _ = apply_fixes(cmd, [fix("env", name="B", value="3")])
    assert render(new) == f"docker run --rm -e B=3 img {P} --model-path X"


def test_docker_fixes() -> None:
    cmd = parse(DOCKER)
    new, applied = apply_fixes(
        cmd,
        [
            fix("docker", "--shm-size", "raise", "64g"),
            fix("docker", "--ipc", "set", "host"),
            fix("docker", "--ulimit", "add", "memlock=-1"),
            fix("docker", "--privileged", "add"),
            fix("docker", "-p", "remove"),
            fix("docker", "--gpus", "set", '"device=0,1"'),
        ],
    )
    assert applied == [True] * 6
    assert render(new) == (
        "docker run --gpus '\"device=0,1\"' --shm-size 64g -e HF_TOKEN=hf_xxx --ipc=host "
        "--ulimit memlock=-1 --privileged "
        "lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m --tp 2"
    )
    # raising to a smaller size leaves 64g alone
    again, applied = apply_fixes(new, [fix("docker", "--shm-size", "raise", "16g")])
    assert applied == [True] and again.docker is not None and again.docker.get("--shm-size") == "64g"


def test_docker_repeatable_options_keyed() -> None:
    cmd = parse(f"docker run --ulimit stack=1 --ulimit memlock=0 -v /a:/models img {P} --model-path X")
    new, _ = apply_fixes(
        cmd,
        [fix("docker", "--ulimit", "set", "memlock=-1"), fix("docker", "--volume", "set", "/b:/models"),
         fix("docker", "-v", "add", "/c:/cache")],
    )  # fmt: skip
    assert render(new) == (
        f"docker run --ulimit stack=1 --ulimit memlock=-1 -v /b:/models --volume /c:/cache img {P} --model-path X"
    )


def test_docker_fix_on_plain_command_and_other_kinds_not_applied() -> None:
    cmd = parse(BASE)
    new, applied = apply_fixes(
        cmd,
        [
            fix("docker", "--shm-size", "set", "32g"),
            {"kind": "package", "name": "flashinfer", "action": "raise", "value": "0.2.5"},
            {"kind": "system", "name": "driver", "action": "raise"},
            {"kind": "note", "text": "read the docs"},
            {"kind": "flag", "action": "set", "value": "1"},  # no flag
            {"kind": "bogus", "flag": "--x"},
            {"kind": "flag", "flag": "--x", "action": "explode"},
        ],
    )
    assert applied == [False] * 7
    assert render(new) == BASE


class Kind(enum.Enum):
    FLAG = "flag"


def test_fix_objects_and_enums() -> None:
    fixes = [
        SimpleNamespace(kind=Kind.FLAG, flag="--tp-size", name=None, action="set", value=4),
        SimpleNamespace(kind="flag", flag="--attention-backend", name=None, action=None, value="triton"),
    ]
    new, applied = apply_fixes(parse(BASE), fixes)
    assert applied == [True, True]
    assert new.get("--tp") == "4" and new.get("--attention-backend") == "triton"


ALL_FIXES = [
    fix("flag", "--mem-fraction-static", "lower", "0.8"),
    fix("flag", "--tp", "set", "4"),
    fix("flag", "--disable-cuda-graph", "add"),
    fix("flag", "--trust-remote-code", "remove"),
    fix("flag", "--cuda-graph-max-bs", "raise"),
    fix("flag", "--cuda-graph-bs", "set", ["1", "2"]),
    fix("env", name="NCCL_DEBUG", value="INFO"),
    fix("env", name="CUDA_VISIBLE_DEVICES", action="remove"),
    fix("docker", "--shm-size", "raise", "64g"),
    fix("docker", "--ipc", "set", "host"),
    fix("docker", "--ulimit", "add", "memlock=-1"),
    fix("docker", "-p", "remove"),
    {"kind": "package", "name": "sglang", "action": "raise", "value": "0.5.3"},
]


@pytest.mark.parametrize("text", [BASE, DOCKER, f"CUDA_VISIBLE_DEVICES=0 {DOCKER} --trust-remote-code"])
def test_idempotent(text: str) -> None:
    once, applied1 = apply_fixes(parse(text), ALL_FIXES)
    twice, applied2 = apply_fixes(once, ALL_FIXES)
    assert render(twice) == render(once)
    assert twice == once
    assert applied1 == applied2
    # and the result survives a render/parse round trip
    assert render(parse(render(once))) == render(once)


# ----------------------------------------------------------------------------- render


ROUND_TRIP = [
    BASE,
    DOCKER,
    f"{P} --model-path 'my model' --x=\"a b\" --y=$HOME/m --z \"$(cat f)\" --json '{{\"k\": [1, 2]}}'",
    f"A=1 B='two words' C=\"x\"y {P} --model X",
    f"{P} --model-path X --port 30000 > /tmp/log 2>&1",
    "docker run -it --rm -eHF_TOKEN=abc -v \"$HOME/.cache:/root/.cache\" img:tag sglang serve --model-path X",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip_one_line(text: str) -> None:
    cmd = parse(text)
    assert render(cmd) == text
    again = parse(render(cmd, multiline=True))
    assert again == cmd
    assert render(again) == text


def test_round_trip_multiline_input_keeps_tokens() -> None:
    text = f"""HF_HUB_OFFLINE=1 {P} \\
  --model-path "/models/Llama 3" \\
  --tp=2 \\
  --enable-metrics
"""
    out = render(parse(text))
    assert "\n" not in out
    assert shlex.split(out) == shlex.split(text.replace("\\\n", " "))  # shlex keeps escaped newlines


def test_multiline_layout() -> None:
    out = render(parse(DOCKER + " > log 2>&1"), multiline=True)
    assert out.split("\n") == [
        "docker run \\",
        "  --gpus all \\",
        "  --shm-size 32g \\",
        "  -p 30000:30000 \\",
        "  -e HF_TOKEN=hf_xxx \\",
        "  --ipc=host \\",
        "  lmsysorg/sglang:latest python3 -m sglang.launch_server \\",
        "  --model-path m \\",
        "  --tp 2 > log 2>&1",
    ]


# ----------------------------------------------------------------------------- redact

TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"


def test_redact_docker_and_flags() -> None:
    cmd = parse(
        f"docker run -e HF_TOKEN={TOKEN} -e OPENAI_API_KEY=sk-abc -e KEEP=1 -e PASS_THROUGH_TOKEN img "
        f"{P} --model-path X --api-key sk-123 --admin-api-key=adm --ssl-keyfile-password 'p w'"
    )
    out = render(redact(cmd))
    assert out == (
        "docker run -e HF_TOKEN=$HF_TOKEN -e OPENAI_API_KEY=$OPENAI_API_KEY -e KEEP=1 -e PASS_THROUGH_TOKEN img "
        f"{P} --model-path X --api-key $SGLANG_API_KEY --admin-api-key=$SGLANG_ADMIN_API_KEY "
        "--ssl-keyfile-password $SGLANG_SSL_KEYFILE_PASSWORD"
    )
    assert "sk-" not in repr(redact(cmd)) and TOKEN not in repr(redact(cmd))
    assert render(cmd).count("sk-") == 2  # the original is untouched


def test_redact_env_prefix_and_hf_tokens_anywhere() -> None:
    cmd = parse(
        f"HF_TOKEN='{TOKEN}' MY_SECRET=x CUDA_VISIBLE_DEVICES=0 {P} "
        f"--model-path X --json-model-override-args '{{\"token\": \"{TOKEN}\"}}' --x={TOKEN} --api-key $KEY"
    )
    red = redact(cmd)
    out = render(red)
    assert TOKEN not in out and TOKEN not in repr(red) and TOKEN not in str(red.quoting)
    assert out.startswith(f"HF_TOKEN=$HF_TOKEN MY_SECRET=$MY_SECRET CUDA_VISIBLE_DEVICES=0 {P} ")
    assert red.get("--json-model-override-args") == '{"token": "$HF_TOKEN"}'
    assert "--x=$HF_TOKEN" in out
    assert out.endswith("--api-key $KEY")  # already a variable: left alone
    assert redact(red) == red


def test_redact_leaves_clean_command_alone() -> None:
    cmd = parse(BASE)
    assert render(redact(cmd)) == BASE
    text = (
        f"TOKENIZERS_PARALLELISM=false SGLANG_KEYFILE=/k {P} --tokenizer-path /t --max-total-tokens 4096 "
        "--skip-tokenizer-init --hf-token-file /x --model-path hf_model"
    )
    assert render(redact(parse(text))) == text


def test_redact_other_secret_names() -> None:
    cmd = parse(f"AWS_SECRET_ACCESS_KEY=a OPENAI_APIKEY=b {P} --hf-token tok --db-password=pw")
    assert render(redact(cmd)) == (
        f"AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY OPENAI_APIKEY=$OPENAI_APIKEY {P} "
        "--hf-token $SGLANG_HF_TOKEN --db-password=$SGLANG_DB_PASSWORD"
    )


# ----------------------------------------------------------------------------- robustness

GARBAGE = [
    "'", '"', "\\", "$(", "${", "`", "python3 -m sglang.launch_server '",
    'python3 -m sglang.launch_server --x "unterminated',
    "python3 -m sglang.launch_server --x $((1 + (2)",
    "docker run", "docker run -e", "docker run --gpus", "docker run -", "docker container",
    "sudo docker run img", "python3 -m sglang.launch_server --", "python3 -m sglang.launch_server -- --",
    "sglang serve =", "sglang serve --=", "sglang serve --a=", "sglang serve -", "sglang serve \\",
    "&&&|||;;;<<<>>>", "2>&1 >", "((()))", "\x00\x01\x02", "\u2028\u00a0python3 -m sglang.launch_server",
    "then do else { ! python3 -m sglang.launch_server",
    "bash -c 'bash -c \"bash -c \\\"bash -c sglang serve\\\"\"'",
    "A= B== =C python3 -m sglang.launch_server",
    "docker run -e -e -e img python3 -m sglang.launch_server",
    "services:\n  - command: [1, 2, null, {a: b}]\n",
    "command: !!python/object:os.system 'echo'\n",
]  # fmt: skip


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_never_raises(text: str) -> None:
    cmd = parse_command(text)
    if cmd is not None:
        render(cmd)
        render(cmd, multiline=True)
        render(redact(cmd))
        apply_fixes(cmd, ALL_FIXES)
    for filename in (None, "x.sh", "x.yml"):
        extract_command(text, filename)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    for t in (text, f"{P} {text}", f"docker run {text} img {P} {text}"):
        cmd = parse_command(t)
        if cmd is not None:
            render(cmd, multiline=True)
            render(redact(cmd))
            apply_fixes(cmd, ALL_FIXES)
    extract_command(text, None)
    extract_command(text, "compose.yaml")


_SHELLISH = st.text(alphabet="ab -=.,:{}'\"\\\t", max_size=60)


@settings(max_examples=200, deadline=None)
@given(_SHELLISH)
def test_tokens_agree_with_shlex(text: str) -> None:
    """With plain quoting (no $, #, newline, operators) the words are exactly shlex's."""
    try:
        expected = shlex.split(text)
    except ValueError:
        return  # unbalanced quote: we are lenient where shlex raises
    if "\\\n" in text:
        return  # bash drops backslash-newline; shlex keeps the newline
    cmd = parse_command(f"{P} --x {text}")
    assert cmd is not None
    assert [t for a in cmd.args for t in _arg_words(a)] == ["--x", *expected]


def _arg_words(a: Arg) -> list[str]:
    if not a.flag:
        return [a.value or ""]
    if a.uses_equals:
        return [f"{a.spelled}={a.value}", *a.extra]
    return [a.spelled, *a.values]


_flag = st.from_regex(r"--[a-z][a-z0-9-]{0,12}", fullmatch=True)
_value = st.one_of(
    st.from_regex(r"[A-Za-z0-9_./:,@%+]{1,12}", fullmatch=True),
    st.from_regex(r"-[0-9]{1,3}(\.[0-9])?", fullmatch=True),
    st.text(alphabet="abc {}[]\":,'$", min_size=1, max_size=12).map(shlex.quote),
    st.from_regex(r"\$([A-Z]{1,6}|\{[A-Z]{1,6}\})", fullmatch=True),
)
_arg = st.one_of(
    st.tuples(_flag).map(lambda t: t[0]),
    st.tuples(_flag, _value).map(" ".join),
    st.tuples(_flag, _value).map("=".join),
)
_env = st.tuples(st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True), _value).map("=".join)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_env, max_size=3),
    st.sampled_from([P, "sglang serve", "docker run --gpus all --shm-size=16g -e A=1 img " + P]),
    st.lists(_arg, max_size=8),
)
def test_round_trip_property(env: list[str], launcher: str, args: list[str]) -> None:
    text = " ".join([*env, launcher, *args])
    cmd = parse(text)
    assert render(cmd) == text
    assert parse(render(cmd, multiline=True)) == cmd
    once, _ = apply_fixes(cmd, ALL_FIXES)
    twice, _ = apply_fixes(once, ALL_FIXES)
    assert render(once) == render(twice)


def test_a_deep_copy_of_a_launch_shares_nothing_mutable():
    """LaunchCommand.__deepcopy__ copies field by field; the generic deep copy is the reference."""
    import copy
    import dataclasses

    from sglang_doctor.launch.command import _FIELD_COPY, Arg, DockerPart, LaunchCommand, parse_command

    cmd = parse_command("A=1 docker run --gpus all -e B=2 -v /m:/m lmsysorg/sglang:v0.5.5 python3 -m "
                        "sglang.launch_server --model-path /m/x --cuda-graph-bs 1 2 4 --tp 2 > server.log 2>&1")
    assert cmd is not None
    mine = copy.deepcopy(cmd)
    assert mine == cmd and repr(mine) == repr(cmd) and mine.aliases == cmd.aliases and mine.quoting == cmd.quoting

    def mutable_ids(obj, out):
        if isinstance(obj, (list, dict)) or dataclasses.is_dataclass(obj):
            out.add(id(obj))
        items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else (
            vars(obj).values() if dataclasses.is_dataclass(obj) else ())
        for x in items:
            mutable_ids(x, out)
        return out

    assert not mutable_ids(mine, set()) & mutable_ids(cmd, set())
    # a field added to these classes must be given its copy (or found immutable) here and in _FIELD_COPY
    assert {f.name for f in dataclasses.fields(LaunchCommand)} == set(_FIELD_COPY)
    assert {f.name for f in dataclasses.fields(Arg)} == {"flag", "written", "value", "uses_equals", "extra",
                                                         "attached", "spelled"}
    assert {f.name for f in dataclasses.fields(DockerPart)} == {"command", "options", "image"}
