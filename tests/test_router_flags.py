"""The router's flag registry (data/router-flags.json) and the tool that builds it.

The facts were checked in the sglang-router wheels' own ``sglang_router/launch_router.py``
(0.0.5-0.1.9) and ``router_args.py`` (0.2.0+), not from memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from sglang_doctor.registry import router_flags as R

TOOLS = Path(__file__).resolve().parent.parent / "tools"


# -- registry shape ----------------------------------------------------------


def test_releases_and_skips() -> None:
    rels = R.releases()
    assert rels[0] == "0.0.5" and "0.1.4" in rels and "0.2.0" in rels
    assert R.version_key(rels[-1]) >= R.version_key("0.3.2")
    skipped = R._data()["skipped"]
    assert set(skipped) == {"0.0.1", "0.0.2", "0.0.3", "0.0.4"}  # no command line in those wheels
    assert "sglang_router" in skipped["0.0.1"] and "Python API" in skipped["0.0.4"]
    assert all(len(R.flags_for(r, "launch_router")) >= 8 for r in rels)


def test_data_file_is_compact() -> None:
    blob = resources.files("sglang_doctor").joinpath("data/router-flags.json").read_bytes()
    assert len(blob) < 100_000


# -- facts from the source ---------------------------------------------------


def test_worker_startup_timeout_history() -> None:
    assert R.releases_with("--worker-startup-timeout-secs")[0] == "0.1.3"  # PR 3016, for issue 2778
    assert not R.flag_exists("--worker-startup-timeout-secs", "0.1.2", allow_abbrev=False)
    assert R.flags_for("0.1.4")["--worker-startup-timeout-secs"].default == 300
    assert R.flags_for("0.3.2")["--worker-startup-timeout-secs"].default == 1800
    assert R.flags_for("0.3.2")["--worker-startup-timeout-secs"].type == "int"


def test_launch_server_prefixes_router_flags() -> None:
    server = R.flags_for("0.1.4", "launch_server")
    assert "--router-worker-startup-timeout-secs" in server
    assert "--worker-startup-timeout-secs" not in server
    assert "--router-dp-worker-base-port" in server  # launch_server's own flag
    assert "--router-dp-worker-base-port" not in R.flags_for("0.1.4")
    assert "--host" not in server and "--router-host" not in server  # exclude_host_port=True
    assert "--worker-urls" in server  # registered without the prefix


def test_choices_and_switches() -> None:
    assert R.flags_for("0.1.4")["--policy"].choices == ("random", "round_robin", "cache_aware")
    assert "power_of_two" in R.flags_for("0.3.2")["--policy"].choices
    assert R.takes_value("--verbose") is False
    assert R.takes_value("--worker-urls") is True
    assert R.takes_value("--no-such-flag") is None


def test_spell_for_launcher_and_release() -> None:
    flag = "--worker-startup-timeout-secs"
    assert R.spell(flag, "0.1.4", "launch_router") == flag
    assert R.spell(flag, "0.1.4", "launch_server") == "--router-worker-startup-timeout-secs"
    assert R.spell(flag, "0.1.2", "launch_server") is None  # not a flag before 0.1.3
    assert R.spell(flag, None, "launch_server") == "--router-worker-startup-timeout-secs"
    assert R.spell("--router-worker-startup-timeout-secs", "0.2.0", "launch_server") == "--router-worker-startup-timeout-secs"
    assert R.spell("--host", None, "launch_server") is None
    assert R.spell(flag, "0.9.0", "launch_router") == flag  # a later release answers as the newest known


def test_nearest() -> None:
    assert R.nearest("--polcy", "0.3.2") == "--policy"
    assert R.nearest("--worker_startup_timeout_secs", None) == "--worker-startup-timeout-secs"
    assert R.nearest("--router-policy", None, "launch_router") == "--policy"  # the other launcher's spelling
    assert R.nearest("--policy", None, "launch_server") == "--router-policy"
    assert R.nearest("--cache-routing-prob", None) == "--cache-routing-prob"  # 0.0.5-0.0.7 had it
    assert R.nearest("--zzz", "0.3.2") is None


def test_resolve_abbreviation_and_unknown_release() -> None:
    spec = R.resolve("--worker-startup-timeout=600", "0.3.2")
    assert spec is not None and spec.name == "--worker-startup-timeout-secs"
    assert spec.help.startswith("Timeout in seconds")
    assert "0.1.3" in spec.releases
    assert R.resolve("--worker-startup", "0.3.2") is None  # ambiguous (timeout / check-interval)
    assert R.registry_release("0.0.1") is None and not R.known_release("junk")
    with pytest.raises(ValueError):
        R.flags_for("0.3.2", "launch_everything")


def test_a_run_without_router_flags_never_reads_the_router_registry(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    code = ("import sys\nfrom sglang_doctor.cli.main import main\n"
            "try:\n    main([sys.argv[1], '--no-baseline'])\nexcept SystemExit:\n    pass\n"
            "print('ROUTER' if 'sglang_doctor.registry.router_flags' in sys.modules else 'NONE')")
    def registry_read(text: str) -> bool:
        log.write_text(text)
        out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, check=True).stdout
        return out.strip().endswith("ROUTER")

    assert not registry_read("[2025-01-01 10:00:00 TP0] torch.OutOfMemoryError: CUDA out of memory.\n")
    assert registry_read("Failed to create router: Timeout 300s waiting for workers to become healthy\n")  # (the check works)


# -- the extraction tool, on a wheel made here ----------------------------------

_ARGS_V1 = '''
import argparse
import dataclasses

@dataclasses.dataclass
class RouterArgs:
    host: str = "127.0.0.1"
    worker_startup_timeout_secs: int = 300

    @staticmethod
    def add_cli_args(parser, use_router_prefix: bool = False, exclude_host_port: bool = False):
        prefix = "router-" if use_router_prefix else ""
        if not exclude_host_port:
            parser.add_argument("--host", type=str, default=RouterArgs.host)
        parser.add_argument("--worker-urls", type=str, nargs="+")
        parser.add_argument(f"--{prefix}worker-startup-timeout-secs", type=int,
                            default=RouterArgs.worker_startup_timeout_secs, help="Timeout")
        parser.add_argument(f"--{prefix}verbose", action="store_true")

def parse_router_args(args):
    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser, use_router_prefix=False)
    return parser.parse_args(args)
'''

_SERVER_V1 = '''
import argparse
from sglang_router.launch_router import RouterArgs
from sglang.srt.server_args import ServerArgs

def main():
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    RouterArgs.add_cli_args(parser, use_router_prefix=True, exclude_host_port=True)
    parser.add_argument("--router-dp-worker-base-port", type=int, default=31000)
'''


def _wheel(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


@pytest.fixture(scope="module")
def tool():
    sys.path.insert(0, str(TOOLS))
    try:
        import extract_router_flags

        yield extract_router_flags
    finally:
        sys.path.remove(str(TOOLS))


def test_tool_reads_both_launchers_with_their_arguments_bound(tool, tmp_path: Path) -> None:
    whl = _wheel(tmp_path / "sglang_router-9.9.9-py3-none-any.whl", {
        "sglang_router/__init__.py": "", "sglang_router/launch_router.py": _ARGS_V1,
        "sglang_router/launch_server.py": _SERVER_V1})
    res = tool.read_release(whl, "9.9.9")
    names = {lc: [f.name for f in tool.merged(regs)] for lc, regs in res.flags.items()}
    assert names["launch_router"] == ["--host", "--verbose", "--worker-startup-timeout-secs", "--worker-urls"]
    assert names["launch_server"] == ["--router-dp-worker-base-port", "--router-verbose",
                                      "--router-worker-startup-timeout-secs", "--worker-urls"]
    timeout = next(f for f in tool.merged(res.flags["launch_router"]) if f.name == "--worker-startup-timeout-secs")
    assert (timeout.type, timeout.default, timeout.help) == ("int", 300, "Timeout")
    data = tool.build([res], {"0.0.1": "unreadable: no command line"}, "test")
    assert data["server_spelling"]["--worker-startup-timeout-secs"] == "--router-worker-startup-timeout-secs"
    assert data["server_spelling"]["--worker-urls"] == "--worker-urls"
    assert "--host" not in data["server_spelling"]
    json.dumps(data)  # plain JSON


def test_tool_skips_a_wheel_without_a_command_line(tool, tmp_path: Path) -> None:
    api_only = _wheel(tmp_path / "sglang_router-0.0.4-py3-none-any.whl",
                      {"sglang_router/__init__.py": "", "sglang_router/router.py": "class Router: pass\n"})
    with pytest.raises(ValueError, match="no command-line launcher"):
        tool.read_release(api_only, "0.0.4")
    rust_only = _wheel(tmp_path / "sglang_router-0.0.2-py3-none-any.whl", {"sglang_router_rs.so": "\0"})
    with pytest.raises(ValueError, match="sglang_router_rs.so"):
        tool.read_release(rust_only, "0.0.2")
