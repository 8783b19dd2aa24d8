"""A compose or Kubernetes file given with --cmd-file gets its corrected launch back as the YAML keys
that change (issue 16, item 4), not as a shell command."""

from __future__ import annotations

import json
from pathlib import Path

from helpers_cli import run

from sglang_doctor.launch.command import parse_command
from sglang_doctor.launch.yaml_edit import _distribute, fragment_keys, yaml_fragment

LOG = "sglang==0.5.14\nsglang serve: error: unrecognized arguments: --tp-szie 2\n"
K8S = """apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: sglang
          image: lmsysorg/sglang:v0.5.14
          command: ["python3", "-m", "sglang.launch_server"]
          args:
            - --model-path
            - Qwen/Qwen3-8B
            - --api-key
            - sk-live-0123456789abcdef0123
            - --tp-szie
            - "2"
"""
COMPOSE = """services:
  sglang:
    image: lmsysorg/sglang:v0.5.14
    command: bash -c "pip install -U transformers && python3 -m sglang.launch_server --model-path m --tp-szie 2"
"""


def _check(tmp_path: Path, name: str, text: str, *extra: str) -> tuple[dict, str]:
    log, cfg = tmp_path / "x.log", tmp_path / name
    log.write_text(LOG)
    cfg.write_text(text)
    base = ["check", str(log), "--no-baseline", "--cmd-file", str(cfg), *extra]
    return json.loads(run([*base, "--format", "json"]).stdout), run([*base, "--no-color"]).stdout


def test_kubernetes_args_come_back_as_the_args_list(tmp_path: Path) -> None:
    rep, text = _check(tmp_path, "deploy.yaml", K8S)
    fragment = rep["corrected_command"]
    assert fragment.splitlines()[0] == "# spec.template.spec.containers[sglang]:"
    assert "\nargs:\n- --model-path\n- Qwen/Qwen3-8B\n- --api-key\n" in fragment
    assert "\n- --tp-size\n- '2'" in fragment and "command:" not in fragment  # the unchanged key is left out
    assert "sk-live-0123456789abcdef0123" not in json.dumps(rep) and "sk-live-0123456789abcdef0123" not in text
    assert "corrected command:\n  # spec.template.spec.containers[sglang]:\n  args:\n" in text


def test_a_compose_bash_c_string_keeps_its_install_step(tmp_path: Path) -> None:
    rep, _ = _check(tmp_path, "compose.yml", COMPOSE)
    assert rep["corrected_command"] == (
        "# services.sglang:\ncommand: bash -c \"pip install -U transformers && python3 -m sglang.launch_server "
        "--model-path m --tp-size 2\"")  # the user's own string: its quotes stay


def test_diff_shows_the_changed_yaml_lines(tmp_path: Path) -> None:
    plain = K8S.replace("            - --api-key\n            - sk-live-0123456789abcdef0123\n", "")
    _, text = _check(tmp_path, "deploy.yaml", plain, "--diff")
    diff = text[text.index("--- a/--cmd-file"):]
    assert "\n-- --tp-szie\n+- --tp-size\n" in diff
    assert [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("---", "+++"))] == [
        "-- --tp-szie", "+- --tp-size"]


def test_a_change_goes_to_the_key_holding_its_place() -> None:
    keys = [("entrypoint", ["python3", "-m", "sglang.launch_server"]), ("command", ["--model-path", "m"])]
    assert _distribute(keys, ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--tp-size", "2"]) == {
        "entrypoint": ["python3", "-m", "sglang.launch_server"], "command": ["--model-path", "m", "--tp-size", "2"]}
    assert _distribute(keys, ["env", "A=1", "python3", "-m", "sglang.launch_server", "--model-path", "m"]) == {
        "entrypoint": ["env", "A=1", "python3", "-m", "sglang.launch_server"], "command": ["--model-path", "m"]}


def test_fragment_and_original_name_the_same_keys() -> None:
    compose = "services:\n  s:\n    entrypoint: [python3, -m, sglang.launch_server]\n    command: [--model-path, m]\n"
    cmd = parse_command("python3 -m sglang.launch_server --model-path m --dp-size 2")
    assert cmd is not None
    new = yaml_fragment(compose, cmd)
    assert new == "# services.s:\ncommand:\n- --model-path\n- m\n- --dp-size\n- '2'"
    given = parse_command("python3 -m sglang.launch_server --model-path m")
    assert given is not None
    assert yaml_fragment(compose, given, keys=fragment_keys(new)) == "# services.s:\ncommand:\n- --model-path\n- m"
