"""SGLang's real argument parser, per release, in cached test venvs.

`sglang_parse(version, argv)` answers whether SGLang `version` would accept `argv` as the arguments
of `python -m sglang.launch_server`: it runs `argparse.ArgumentParser()` +
`ServerArgs.add_cli_args(parser)` + `parser.parse_args(argv)` inside a venv that holds the real
`sglang==version` wheel (installed --no-deps) and the few packages its server_args module imports.
`ServerArgs.from_cli_args` is NOT called: it runs `__post_init__`, which probes the GPU and loads
the model's config from disk or the Hub — neither exists here.

The venv is built once per release and harness key under
`$SGLANG_DOCTOR_TEST_CACHE` (default `~/.cache/sglang-doctor-tests`)`/sglang-parser/<key>/`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

HERE = Path(__file__).resolve().parent
ENVS_FILE = HERE / "envs.yaml"
STUBS_DIR = HERE / "stubs"
RUNNER = HERE / "runner.py"
# The host interpreter builds the venvs; the releases checked ship cp311 wheels (0.5.14+), so the
# venvs must be CPython 3.11 like the machine's python3.
BASE_PYTHON = os.environ.get("SGLANG_PARSER_PYTHON", "python3")


@dataclass(frozen=True)
class ParseResult:
    ok: bool
    error: str = ""
    # unknown-flag, missing-value, bad-choice, bad-value, ambiguous, switch-with-value,
    # required, not-allowed-with, duplicate, action-error ("" when ok)
    category: str = ""


def load_envs() -> dict:
    return yaml.safe_load(ENVS_FILE.read_text())


def releases() -> list[str]:
    return list(load_envs()["releases"])


def cache_root() -> Path:
    base = os.environ.get("SGLANG_DOCTOR_TEST_CACHE") or Path.home() / ".cache" / "sglang-doctor-tests"
    return Path(base) / "sglang-parser"


def harness_key(version: str) -> str:
    """<release>-h<harness>-<digest>: the digest covers envs.yaml and stubs/, so editing them rebuilds."""
    h = hashlib.sha256(ENVS_FILE.read_bytes())
    for p in sorted(STUBS_DIR.rglob("*.py")):
        h.update(p.relative_to(STUBS_DIR).as_posix().encode())
        h.update(p.read_bytes())
    return f"{version}-h{load_envs()['harness']}-{h.hexdigest()[:10]}"


def _registry_order() -> list[str]:
    """SGLang's releases in order: the product's flag registry lists every one since 0.4.0."""
    flags = HERE.parents[1] / "sglang_doctor" / "data" / "flags.json"
    try:
        listed = json.loads(flags.read_text())["releases"]
    except (OSError, ValueError, KeyError):
        listed = []
    return sorted(set(listed) | set(releases()), key=Version)


def nearest_release(detected: str | None) -> str:
    """The covered release to parse a command for release `detected` with: the covered one fewest
    releases away (ties: the older), so a flag added or removed in between is least likely to
    matter; a release outside the registry goes by version order; none or unparsable → newest."""
    covered = sorted(releases(), key=Version)
    try:
        v = Version(detected or "")
    except Exception:
        return covered[-1]
    order = _registry_order()
    if detected not in order:
        order = sorted(set(order) | {detected}, key=Version)
    pos = order.index(detected)
    return min(covered, key=lambda r: (abs(order.index(r) - pos), Version(r)))


def releases_for(detected: str | None) -> list[str]:
    """The covered releases to parse a command with, for the release the report detected: one
    version → its nearest covered release; a range ("0.4.0-0.5.19", inferred from the server_args
    fields) → every covered release inside it, since the user may run any of them (none inside →
    the one nearest its newest end); nothing → the newest covered release."""
    if detected and "-" in detected:
        lo, _, hi = detected.partition("-")
        try:
            vlo, vhi = Version(lo), Version(hi)
        except Exception:
            return [nearest_release(None)]
        inside = [r for r in sorted(releases(), key=Version) if vlo <= Version(r) <= vhi]
        return inside or [nearest_release(hi)]
    return [nearest_release(detected)]


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    # pytest-xdist workers or two CI jobs may build the same venv at once.
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> None:
    with open(log, "a") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
        fh.write(f"# {time.monotonic() - t0:.1f} s, exit {r.returncode}\n")
    if r.returncode:
        raise RuntimeError(f"{cmd[0]} failed ({r.returncode}); see {log}")


def _uv(log: Path) -> list[str]:
    """uv, installed once into the cache with pip. Why uv: pip's resolver took ~3 min here for one
    release's ~80 packages (one index round trip at a time) and copies torch into every venv; uv
    resolves and downloads in parallel and hardlinks from one cache, so a venv takes seconds."""
    spec = load_envs()["uv"]
    tool = cache_root() / "tools" / spec.replace("==", "-")
    exe = tool / "bin" / "uv"
    if not exe.exists():
        with _lock(cache_root() / ".uv.lock"):
            if not exe.exists():
                tmp = Path(tempfile.mkdtemp(prefix="uv-", dir=cache_root()))
                _run([BASE_PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                      "--target", str(tmp), spec], log)
                tool.parent.mkdir(parents=True, exist_ok=True)
                tmp.rename(tool)
    return [str(exe)]


def _release_pins(metadata: str) -> dict[str, Requirement]:
    """The release's own requirement for each distribution: its base requirements first, then the
    extras that carried the runtime in 0.4.x ("runtime_common", "srt")."""
    base: dict[str, Requirement] = {}
    extra: dict[str, Requirement] = {}
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = Requirement(line.split(":", 1)[1].strip())
        name = canonicalize_name(req.name)
        marker = str(req.marker or "")
        if "extra" in marker:
            if any(f'"{e}"' in marker for e in ("runtime-common", "runtime_common", "srt")):
                extra.setdefault(name, req)
        elif req.marker is None or req.marker.evaluate():
            base.setdefault(name, req)
    return {**extra, **base}


def _spec(req: Requirement | None, name: str) -> str:
    if req is None or not str(req.specifier):
        return name
    return f"{name}{req.specifier}"


def build_env(version: str, dest: Path) -> None:
    """Create the venv for `version` at `dest` (a fresh directory)."""
    envs = load_envs()
    dest.mkdir(parents=True)
    log = dest / "build.log"
    t0 = time.monotonic()
    uv = _uv(log)
    # One uv cache beside the venvs: the releases' venvs share torch, triton … by hardlinks.
    env = {**os.environ, "UV_CACHE_DIR": str(cache_root() / "uv-cache"), "UV_NO_PROGRESS": "1"}
    venv = dest / "venv"
    _run(uv + ["venv", "-q", "-p", BASE_PYTHON, str(venv)], log, env)
    py = venv / "bin" / "python"
    install = uv + ["pip", "install", "-p", str(py)]
    # torch==2.13.0+cpu lies in /opt/wheels (pip finds it there by its config; uv must be told).
    links = [a for d in envs.get("find_links", []) if Path(d).is_dir() for a in ("--find-links", d)]
    # The wheel first, alone: its metadata gives the versions of what server_args imports.
    _run(install + ["--no-deps", f"sglang=={version}"], log, env)
    meta = next(venv.glob("lib/python3*/site-packages/sglang-*.dist-info/METADATA")).read_text()
    pins = _release_pins(meta)
    reqs = [envs["torch"]] + [_spec(pins.get(canonicalize_name(n)), n) for n in envs["needs"]]
    (dest / "requirements.txt").write_text("\n".join(reqs) + "\n")
    (dest / "constraints.txt").write_text("\n".join(envs["constraints"]) + "\n")
    _run(install + links + ["-c", str(dest / "constraints.txt"), "-r", str(dest / "requirements.txt")],
         log, env)
    shutil.copytree(STUBS_DIR, dest / "stubs")
    # No warm-up import here: the first parse compiles the imported modules' .pyc (see _runner_env)
    # and would pay it anyway; an import that fails shows there with the runner's traceback.
    (dest / "built.json").write_text(json.dumps({
        "version": version, "harness_key": dest.name, "seconds": round(time.monotonic() - t0, 1),
        "requirements": reqs,
    }, indent=1))


def ensure_env(version: str) -> Path:
    """The venv's python for `version`, building it on first use."""
    final = cache_root() / harness_key(version)
    py = final / "venv" / "bin" / "python"
    if (final / "built.json").exists():
        return py
    with _lock(cache_root() / f".{version}.lock"):
        if (final / "built.json").exists():
            return py
        # Built in place (a venv records its own path); built.json, written last, marks it complete,
        # so a half-built directory from an interrupted run is removed and built again.
        if final.exists():
            shutil.rmtree(final)
        try:
            build_env(version, final)
        except BaseException:
            if (final / "build.log").exists():  # keep the log to read, drop the half venv
                shutil.copy(final / "build.log", cache_root() / f"failed-{final.name}.log")
            shutil.rmtree(final, ignore_errors=True)
            raise
    return py


def sglang_parse_many(version: str, argvs: Sequence[Sequence[str]]) -> list[ParseResult]:
    """Parse every argv with release `version`'s parser in one subprocess (import costs seconds)."""
    if not argvs:
        return []
    py = ensure_env(version)
    return [ParseResult(**o) for o in _run_runner(py, [list(a) for a in argvs])]


def _runner_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # Importing server_args reads ~2,000 modules of torch, transformers and sglang: without their
    # .pyc (PYTHONDONTWRITEBYTECODE is set on these machines) every run compiles them again, ~1 min.
    # The first run writes them into the venv; later runs import in seconds.
    env.update(PYTHONWARNINGS="ignore", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1")
    return env


def _run_runner(py: Path, argvs: list[list[str]]) -> list[dict]:
    stubs = py.parent.parent.parent / "stubs"
    r = subprocess.run([str(py), str(RUNNER), str(stubs)], input=json.dumps(argvs),
                       capture_output=True, text=True, timeout=900, env=_runner_env())
    if r.returncode:
        raise RuntimeError(f"parser runner in {py} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def sglang_parse_releases(batches: dict[str, Sequence[Sequence[str]]], jobs: int = 2) -> dict[str, list[ParseResult]]:
    """sglang_parse_many for several releases at once (each import is seconds of CPU)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        futs = {rel: pool.submit(sglang_parse_many, rel, argvs) for rel, argvs in batches.items()}
        return {rel: f.result() for rel, f in futs.items()}


def sglang_parse(version: str, argv: Sequence[str]) -> ParseResult:
    return sglang_parse_many(version, [argv])[0]


if __name__ == "__main__":
    # python -m tests.realparser.harness 0.5.14 -- --model-path m --tp 2
    ver, rest = sys.argv[1], sys.argv[2:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    print(sglang_parse(ver, rest))
