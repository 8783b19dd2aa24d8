"""`--fix` rewrites a --cmd-file in place (issue 16, item 4): the user's secrets stay in the file and
never reach the output, the original is kept as FILE.bak, nothing is written without a corrected
command; a compose / Kubernetes launch's env fixes go into its environment (issue 16)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_cli import run

from sglang_doctor.launch.command import extract_command, parse_command
from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.launch.rewrite import rewrite_file

TOKEN = "hf_QwErTyUiOpAsDfGhJkLzXc12"
UNKNOWN_FLAG_LOG = "sglang==0.5.14\nsglang serve: error: unrecognized arguments: --tp-szie 2\n"
GATED_LOG = ("Cannot access gated repo for url https://huggingface.co/google/gemma-2-9b-it/resolve/main/"
             "config.json.\n")
SCRIPT = f"""#!/bin/bash
set -e
export HF_TOKEN={TOKEN}
python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B \\
  --tp-szie 2 2>&1 | tee server.log &
wait
"""
DOCKER = (f"docker run --gpus all -e HF_TOKEN={TOKEN} lmsysorg/sglang:v0.5.14 python3 -m sglang.launch_server "
          "--model-path Qwen/Qwen3-8B --tp-szie 2\n")
COMPOSE = f"""# the serving stack
services:
  sglang:
    image: lmsysorg/sglang:v0.5.14
    environment:
      - HF_TOKEN={TOKEN}   # read token
    command: bash -c "pip install -U transformers && python3 -m sglang.launch_server --model-path m --tp-szie 2"
  web:
    image: nginx
"""
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
            - Qwen/Qwen3-8B   # the model
            - --api-key
            - $(SGLANG_API_KEY)
            - --tp-szie
            - "2"
          env:
            - name: SGLANG_API_KEY
              valueFrom: {secretKeyRef: {name: sglang, key: api-key}}
---
apiVersion: v1
kind: Service
"""


def _fix(tmp_path: Path, name: str, text: str, log: str = UNKNOWN_FLAG_LOG, *extra: str):
    (tmp_path / "x.log").write_text(log)
    f = tmp_path / name
    f.write_text(text)
    r = run(["check", tmp_path / "x.log", "--no-baseline", "--no-color", "--cmd-file", f, "--fix", *extra])
    return r, f


@pytest.mark.parametrize("name,text", [("serve.sh", SCRIPT), ("run.sh", DOCKER)])
def test_a_script_is_rewritten_with_its_secret_kept(tmp_path: Path, name: str, text: str) -> None:
    r, f = _fix(tmp_path, name, text)
    new = f.read_text()
    assert new == text.replace("--tp-szie", "--tp-size")  # only the flag changed: the token, the tee, the & stay
    assert TOKEN in new and TOKEN not in r.stdout + r.stderr
    assert (tmp_path / f"{name}.bak").read_text() == text
    assert f"fixed {f} (the original is in {f}.bak)" in r.stderr
    assert "\n-  --tp-szie 2" in r.stdout or "--tp-szie 2" in r.stdout.split("--- a/")[1]  # the diff is printed
    assert r.exit_code == 1  # the report's status: the log still shows the error


def test_the_diff_shows_only_the_change_not_the_secret(tmp_path: Path) -> None:
    r, _ = _fix(tmp_path, "run.sh", DOCKER)
    diff = r.stdout[r.stdout.index("--- a/--cmd-file"):].splitlines()
    changed = [ln for ln in diff if ln[:1] in "+-" and not ln.startswith(("---", "+++"))]
    assert len(changed) == 2 and "--tp-szie" in changed[0] and "--tp-size" in changed[1]
    assert "HF_TOKEN=$HF_TOKEN" in changed[0]  # the given line masked as the corrected one is: no false change


def test_a_compose_file_is_edited_in_place(tmp_path: Path) -> None:
    r, f = _fix(tmp_path, "compose.yml", COMPOSE)
    assert f.read_text() == COMPOSE.replace("--tp-szie", "--tp-size")  # comments, the other service, the token
    assert TOKEN not in r.stdout + r.stderr
    assert (tmp_path / "compose.yml.bak").read_text() == COMPOSE


def test_a_kubernetes_manifest_keeps_its_secret_reference(tmp_path: Path) -> None:
    r, f = _fix(tmp_path, "deploy.yaml", K8S)
    new = f.read_text()
    assert new == K8S.replace("- --tp-szie", "- --tp-size")
    assert "$(SGLANG_API_KEY)" in r.stdout  # Kubernetes' own reference syntax is no secret: shown intact


def test_the_env_fix_goes_into_the_compose_environment(tmp_path: Path) -> None:
    compose = COMPOSE.replace("--tp-szie", "--tp-size").replace(f"      - HF_TOKEN={TOKEN}   # read token\n",
                                                                 "      - HF_HUB_ENABLE_HF_TRANSFER=1\n")
    r, f = _fix(tmp_path, "compose.yml", compose, GATED_LOG)
    assert f.read_text() == compose.replace("      - HF_HUB_ENABLE_HF_TRANSFER=1\n",
                                            "      - HF_HUB_ENABLE_HF_TRANSFER=1\n      - HF_TOKEN=$HF_TOKEN\n")
    shown = r.stdout[r.stdout.index("corrected command:"):]
    assert shown.startswith("corrected command:\n  # services.sglang:\n  environment:\n  - HF_HUB_ENABLE_HF_TRANSFER=1\n"
                            "  - HF_TOKEN=$HF_TOKEN\n  (from --cmd-file)")  # the list form; no `env` wrapper


def test_nothing_is_written_without_a_corrected_command(tmp_path: Path) -> None:
    script = SCRIPT.replace("--tp-szie", "--tp-size")
    r, f = _fix(tmp_path, "serve.sh", script, "sglang==0.5.14\nThe server is fired up and ready to roll!\n")
    assert f.read_text() == script and not (tmp_path / "serve.sh.bak").exists()
    assert f"--fix: nothing written to {f}: no problem found" in r.stderr
    assert r.exit_code == 0


def test_a_value_to_fill_in_is_not_written() -> None:
    # a fix whose value the user must supply (`<iface>`) is never written into the file
    cmd = parse_command("python3 -m sglang.launch_server --model-path m")
    assert cmd is not None
    new, _ = apply_fixes(cmd, [{"kind": "env", "name": "GLOO_SOCKET_IFNAME", "action": "set", "value": "<iface>"}])
    text, why = rewrite_file("python3 -m sglang.launch_server --model-path m\n", "serve.sh", new)
    assert text is None and "GLOO_SOCKET_IFNAME='<iface>'" in why


def test_an_unwritable_file_is_one_line_and_not_zero(tmp_path: Path) -> None:
    (tmp_path / "serve.sh.bak").mkdir()  # (the backup cannot be written: also as root, who may write any file)
    r, f = _fix(tmp_path, "serve.sh", SCRIPT)
    assert f.read_text() == SCRIPT
    err = [ln for ln in r.stderr.splitlines() if "--fix" in ln]
    assert len(err) == 1 and "serve.sh.bak" in err[0] and "Traceback" not in r.stderr
    assert r.exit_code != 0


def test_fix_needs_a_cmd_file(tmp_path: Path) -> None:
    (tmp_path / "x.log").write_text(UNKNOWN_FLAG_LOG)
    r = run(["check", tmp_path / "x.log", "--fix"])
    assert r.exit_code == 2 and r.stderr.strip() == (
        "sglang-doctor: --fix rewrites the file given with --cmd-file: give one")
    (tmp_path / "serve.sh").write_text(SCRIPT)
    r = run(["check", tmp_path / "x.log", "--follow", "--cmd-file", tmp_path / "serve.sh", "--fix"])
    assert r.exit_code == 2 and "not with --follow" in r.stderr and (tmp_path / "serve.sh").read_text() == SCRIPT


def test_crlf_line_ends_are_kept(tmp_path: Path) -> None:
    text = SCRIPT.replace("\n", "\r\n")
    (tmp_path / "x.log").write_text(UNKNOWN_FLAG_LOG)
    f = tmp_path / "serve.sh"
    f.write_bytes(text.encode())
    run(["check", tmp_path / "x.log", "--no-baseline", "--cmd-file", f, "--fix"])
    assert f.read_bytes() == text.replace("--tp-szie", "--tp-size").encode()
    assert (tmp_path / "serve.sh.bak").read_bytes() == text.encode()


# --- the YAML writer ------------------------------------------------------------------------


def _edited(text: str, name: str, fixes: list[dict], env=None):
    found = extract_command(text, name)
    assert found is not None
    cmd = parse_command(found)
    assert cmd is not None
    new, ok = apply_fixes(cmd, fixes)
    assert all(ok)
    return rewrite_file(text, name, new, env)


ADD = [{"kind": "flag", "flag": "--mem-fraction-static", "action": "set", "value": "0.8"}]


def test_kubernetes_env_gets_a_name_value_item() -> None:
    text, why = _edited(K8S, "d.yaml", ADD, [("SGLANG_MAMBA_CONV_DTYPE", "float16")])
    assert why == "" and text is not None
    assert ('            - "2"\n            - --mem-fraction-static\n            - "0.8"\n          env:\n'
            "            - name: SGLANG_API_KEY\n              valueFrom: {secretKeyRef: {name: sglang, key: api-key}}\n"
            '            - name: SGLANG_MAMBA_CONV_DTYPE\n              value: "float16"\n---\n') in text


def test_kubernetes_container_without_env_gets_one() -> None:
    k8s = K8S[:K8S.index("          env:")] + K8S[K8S.index("---"):]
    text, _ = _edited(k8s, "d.yaml", [], [("NCCL_P2P_DISABLE", "1")])
    assert text is not None
    assert '            - "2"\n          env:\n            - name: NCCL_P2P_DISABLE\n              value: "1"\n---' in text


def test_kubernetes_refuses_a_shell_reference_as_a_value() -> None:
    text, why = _edited(K8S, "d.yaml", [], [("HF_TOKEN", "$HF_TOKEN")])
    assert text is None and "valueFrom.secretKeyRef" in why


def test_compose_mapping_environment_entry_set_and_removed() -> None:
    compose = ("services:\n  s:\n    environment:\n      A: 1\n      DROP: x  # gone\n      KEEP: y\n"
               "    command: python3 -m sglang.launch_server --model-path m\n")
    text, _ = _edited(compose, "c.yml", [], [("A", "2"), ("DROP", None), ("NEW", "z")])
    assert text == ('services:\n  s:\n    environment:\n      A: "2"\n      KEEP: y\n      NEW: "z"\n'
                    "    command: python3 -m sglang.launch_server --model-path m\n")


def test_compose_without_environment_gets_a_mapping() -> None:
    compose = "services:\n  s:\n    image: x\n    command: [python3, -m, sglang.launch_server]\n  t:\n    image: y\n"
    text, _ = _edited(compose, "c.yml", ADD, [("A", "1")])
    assert text == ("services:\n  s:\n    image: x\n    command: [python3, -m, sglang.launch_server, "
                    '--mem-fraction-static, "0.8"]\n    environment:\n      A: "1"\n  t:\n    image: y\n')


def test_a_block_scalar_script_stays_a_block() -> None:
    k8s = ("spec:\n  containers:\n    - name: s\n      command:\n        - /bin/bash\n        - -c\n        - |\n"
           "          pip install x\n          python3 -m sglang.launch_server --model-path m \\\n"
           "            --tp-szie 2\n      image: i\n")
    fixes = [{"kind": "flag", "flag": "--tp-szie", "action": "remove"},
             {"kind": "flag", "flag": "--tp-size", "action": "set", "value": "2", "replaces": "--tp-szie"}]
    text, why = _edited(k8s, "p.yaml", fixes)
    assert text == k8s.replace("--tp-szie", "--tp-size"), why


def test_a_change_the_file_cannot_take_is_refused_with_its_reason(tmp_path: Path) -> None:
    r, f = _fix(tmp_path, "deploy.yaml", K8S, GATED_LOG)  # HF_TOKEN=$HF_TOKEN: not expanded in a Kubernetes env
    assert f.read_text() == K8S and not (tmp_path / "deploy.yaml.bak").exists()
    assert f"--fix: nothing written to {f}: Kubernetes does not expand $HF_TOKEN in an env value" in r.stderr
    assert r.exit_code != 0


def test_a_command_with_only_secondary_changes_is_not_written(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from sglang_doctor.cli.fix_file import FileText, outcome
    from sglang_doctor.model import LaunchInfo, Report

    f = tmp_path / "serve.sh"
    f.write_text(SCRIPT)
    report = Report(launches=[LaunchInfo(input=0, first_line=1, last_line=2, corrected_command="x",
                                         command_kind="suggested")])
    run_ = SimpleNamespace(report=report, rewritten=SCRIPT.replace("szie", "size"), rewrite_refused="")
    message, failed = outcome(run_, str(f), FileText(SCRIPT.encode(), SCRIPT, False))
    assert "not the root cause's fix" in message and not failed
    assert f.read_text() == SCRIPT and not (tmp_path / "serve.sh.bak").exists()
    report.launches[0].command_kind = "corrected"
    message, failed = outcome(run_, str(f), FileText(SCRIPT.encode(), SCRIPT, False))
    assert message.startswith("fixed") and f.read_text() == SCRIPT.replace("szie", "size")


def test_several_launches_are_not_written_into_one_file(tmp_path: Path) -> None:
    (tmp_path / "y.log").write_text("sglang==0.5.14\nsglang serve: error: unrecognized arguments: --foo\n")
    r, f = _fix(tmp_path, "serve.sh", SCRIPT, UNKNOWN_FLAG_LOG, tmp_path / "y.log")
    assert f.read_text() == SCRIPT and "the logs hold 2 launches" in r.stderr
