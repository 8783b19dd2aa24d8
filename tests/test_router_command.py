"""Router launches: the command parser, router flag fixes, and a whole run on router logs."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from helpers_cli import run
from sglang_doctor.fix.apply import apply_fixes
from sglang_doctor.launch.command import CO_LAUNCH, ROUTER, SERVER, parse_command, render, router_image

TIMEOUT = {"kind": "flag", "flag": "--worker-startup-timeout-secs", "action": "raise", "value": "1800",
           "launcher": "router"}
MFS = {"kind": "flag", "flag": "--mem-fraction-static", "action": "set", "value": "0.8"}


# -- which launcher ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, kind, launcher",
    [
        ("python -m sglang_router.launch_router --worker-urls http://a:1 http://b:2", ROUTER, "launch_router"),
        ("python3 -m sglang_router.launch_server --model-path X --dp 2", CO_LAUNCH, "launch_server"),
        ("python -m sglang_router launch --worker-urls http://a:1", ROUTER, "launch_router"),
        ("python -m sglang_router server --model-path X", CO_LAUNCH, "launch_server"),
        ("smg launch --worker-urls http://a:1", ROUTER, "launch_router"),
        ("sglang-router server --model-path X", CO_LAUNCH, "launch_server"),
        ("/opt/venv/bin/amg launch --worker-urls http://a:1", ROUTER, "launch_router"),
        ("python sglang_router/launch_server.py --model-path X", CO_LAUNCH, "launch_server"),
        ("python3 -m sglang.launch_server --model-path X", SERVER, None),
        ("sglang serve --model-path X", SERVER, None),
        ("docker run --rm -p 30000:30000 lmsysorg/sgl-model-gateway:v0.2.3 --worker-urls http://a:1", ROUTER, "launch_router"),
        ("docker run lmsysorg/sglang:latest python3 -m sglang_router.launch_router --worker-urls http://a:1",
         ROUTER, "launch_router"),
    ],
)  # fmt: skip
def test_launcher_kind(text: str, kind: str, launcher: str | None) -> None:
    cmd = parse_command(text)
    assert cmd is not None
    assert (cmd.kind, cmd.router_launcher) == (kind, launcher)
    assert cmd.takes_server_flags is (kind != ROUTER)
    assert render(cmd) == text


def test_router_only_launch_takes_no_sglang_aliases() -> None:
    cmd = parse_command("python -m sglang_router.launch_router --worker-urls http://a:1 --dp-aware")
    assert cmd is not None and [a.flag for a in cmd.args] == ["--worker-urls", "--dp-aware"]
    assert parse_command("python -m sglang_router.launch_server --model X --dp 2").get("--dp-size") == "2"  # type: ignore[union-attr]


@pytest.mark.parametrize("text", [
    "docker run lmsysorg/sgl-router:latest bash",  # not the router's own command
    "python -m sglang_router --version",
    "smg --help",
    "echo python -m sglang_router.launch_router",
])
def test_not_a_router_launch(text: str) -> None:
    assert parse_command(text) is None


def test_router_images() -> None:
    assert router_image("lmsysorg/sgl-model-gateway:v0.2.3") and router_image("ghcr.io/x/sglang-router@sha256:ab")
    assert not router_image("lmsysorg/sglang:v0.5.14") and not router_image("my-router:1")


# -- fixes ---------------------------------------------------------------------------


def test_router_fix_spelled_for_each_launcher() -> None:
    cases = {
        "python -m sglang_router.launch_router --worker-urls http://a:1 --worker-startup-timeout-secs 300":
            ("python -m sglang_router.launch_router --worker-urls http://a:1 --worker-startup-timeout-secs 1800",
             [True, False]),
        "python3 -m sglang_router.launch_server --model-path X --router-worker-startup-timeout-secs 300":
            ("python3 -m sglang_router.launch_server --model-path X --router-worker-startup-timeout-secs 1800"
             " --mem-fraction-static 0.8", [True, True]),
        "python3 -m sglang.launch_server --model-path X":
            ("python3 -m sglang.launch_server --model-path X --mem-fraction-static 0.8", [False, True]),
    }
    for text, (want, applied) in cases.items():
        cmd = parse_command(text)
        assert cmd is not None
        new, ok = apply_fixes(cmd, [TIMEOUT, MFS])
        assert (render(new), ok) == (want, applied)
        again, _ = apply_fixes(new, [TIMEOUT, MFS])
        assert render(again) == want  # idempotent


def test_router_fix_never_lowers_and_unknown_flag_is_not_written() -> None:
    cmd = parse_command("python -m sglang_router.launch_router --worker-urls http://a:1 --worker-startup-timeout-secs 3600")
    assert cmd is not None
    new, ok = apply_fixes(cmd, [TIMEOUT, {**TIMEOUT, "flag": "--no-such-router-flag", "action": "set", "value": None}])
    assert ok == [True, False] and new.get("--worker-startup-timeout-secs") == "3600"


# -- whole runs ------------------------------------------------------------------------

ROUTER_LOG = ("[Router (Python)] 2025-03-08 02:33:11 - ERROR - Failed to start router: Timeout 300s waiting for workers "
              '["http://0.0.0.0:31000"] to become healthy. Please set --router-worker-startup-timeout-secs '
              "(sglang_router.launch_server) or --worker-startup-timeout-secs (sglang_worker.router) to a larger value\n")


def _report(tmp_path, text: str, *args: str) -> dict:
    log = tmp_path / "router.log"
    log.write_text(text)
    return json.loads(run(["--format", "json", "--no-baseline", *args, log]).stdout)


def test_report_fix_is_spelled_for_the_command_and_validates(tmp_path) -> None:
    schema = json.loads((resources.files("sglang_doctor") / "data" / "report-v1.schema.json").read_text())
    cmd = "python3 -m sglang_router.launch_server --model-path /m --dp-size 2"
    data = _report(tmp_path, ROUTER_LOG, "--cmd", cmd)
    jsonschema.Draft202012Validator(schema).validate(data)
    (finding,) = [f for f in data["findings"] if f["code"] == "SGD703"]
    assert finding["fixes"][0] == {"kind": "flag", "flag": "--router-worker-startup-timeout-secs",
                                   "action": "raise", "value": "1800", "text": finding["fixes"][0]["text"]}
    assert "launcher" not in json.dumps(data["findings"])  # internal: not in the contract
    assert data["corrected_command"].endswith("--dp-size 2 --router-worker-startup-timeout-secs 1800")
    assert data["context"]["launch"]["kind"] == CO_LAUNCH


def test_router_release_stated_in_the_log_drops_a_flag_it_lacks(tmp_path) -> None:
    old = "Successfully installed sglang-router-0.1.2\nFailed to create router: Timeout 300s waiting for workers to become healthy\n"
    fixes = _report(tmp_path, old)["findings"][0]["fixes"]
    assert [f.get("flag") or f.get("name") for f in fixes[:2]] == ["sglang-router", None]  # the upgrade leads
    new = old.replace("0.1.2", "0.1.3")
    assert _report(tmp_path, new)["findings"][0]["fixes"][0]["flag"] == "--worker-startup-timeout-secs"


def test_router_flags_are_not_reported_as_unknown_launch_flags(tmp_path) -> None:
    healthy = "[2025-03-08 02:40:00] The server is fired up and ready to roll!\n"
    for cmd in ("python3 -m sglang_router.launch_server --model-path /m --router-policy round_robin "
                "--router-worker-startup-timeout-secs 900 --router-dp-worker-base-port 32000",
                "python -m sglang_router.launch_router --worker-urls http://a:1 --policy round_robin --dp-aware"):
        codes = [f["code"] for f in _report(tmp_path, healthy, "--cmd", cmd)["findings"]]
        assert "SGD990" not in codes, cmd
    typo = "python3 -m sglang_router.launch_server --model-path /m --mem-fraction-statc 0.8"
    assert "SGD990" in [f["code"] for f in _report(tmp_path, healthy, "--cmd", typo)["findings"]]
    router_typo = "python3 -m sglang_router.launch_server --model-path /m --router-polcy round_robin"
    codes = [f["code"] for f in _report(tmp_path, healthy, "--cmd", router_typo)["findings"]]
    assert "SGD704" in codes and "SGD990" not in codes


def test_router_flag_check_follows_the_stated_release(tmp_path) -> None:
    cmd = "python -m sglang_router.launch_router --worker-urls http://a:1 --worker-startup-timeout-secs 900"
    old = _report(tmp_path, "pip install sglang-router==0.1.2\n", "--cmd", cmd)
    (hit,) = [f for f in old["findings"] if f["code"] == "SGD704"]
    assert hit["captures"]["release"] == "0.1.2" and hit["captures"]["stated"] == "yes"
    assert hit["fixes"][0] == {"kind": "package", "name": "sglang-router", "action": "raise", "value": ">=0.1.3",
                               "text": "the release that added --worker-startup-timeout-secs"}
    assert not [f for f in _report(tmp_path, "pip install sglang-router==0.1.3\n", "--cmd", cmd)["findings"]
                if f["code"] == "SGD704"]


def test_current_value_is_read_in_either_spelling(tmp_path) -> None:
    log = ROUTER_LOG.replace("300s", "600s")
    for cmd, flag in (("python3 -m sglang_router.launch_server --model-path /m --router-worker-startup-timeout-secs 600",
                       "--router-worker-startup-timeout-secs"),
                      ("python -m sglang_router.launch_router --worker-urls http://a:1 --worker-startup-timeout-secs 600",
                       "--worker-startup-timeout-secs")):
        data = _report(tmp_path, log, "--cmd", cmd)
        fix = data["findings"][0]["fixes"][0]
        assert (fix["flag"], fix["from"], fix["value"]) == (flag, "600", "2400")
        assert data["corrected_command"] == cmd.replace(" 600", " 2400")
