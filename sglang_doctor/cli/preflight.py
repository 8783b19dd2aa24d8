"""`sglang-doctor preflight`: SGLang's memory plan for a launch, before it runs.

Options and exit codes only; the prediction is pipeline/preflight.py, the output report/.
Exit status: 1 when a finding is at or above --fail-on (a predicted failure is an error),
0 otherwise, 2 for usage and input errors (one line on stderr).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from sglang_doctor.model import FAIL_ON, FORMATS, fails

_NO_GPU = ("no GPU memory to plan with: nvidia-smi is not available here (or lists no GPU); pass --gpu-mem GIB "
           "(the card's memory, e.g. 24), or --gpu NAME (e.g. 'RTX 4090', 'H100'), and --gpu-free GIB for "
           "what is free on it now")
# launchers a command may start with when only the flags are given
_BARE_FLAGS_LAUNCHER = "python3 -m sglang.launch_server "


def _die(msg: str) -> NoReturn:
    click.echo(f"sglang-doctor: {msg}", err=True)
    sys.exit(2)


def _command(command: str | None, cmd_file: str | None) -> tuple[str | None, str]:
    """The launch command to plan (None: SGLang's defaults) and the input's name."""
    from sglang_doctor.launch.command import extract_command, parse_command

    if command is not None and cmd_file is not None:
        _die("give the launch command once: --cmd or --cmd-file")
    name = "<command>"
    if cmd_file is not None:
        try:
            command = Path(cmd_file).read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            _die(f"{cmd_file}: {e.strerror or e}")
        name = cmd_file
        command = extract_command(command, cmd_file) or ""
    if command is None:
        return None, name
    text = command.strip()
    if text.startswith("--"):
        text = _BARE_FLAGS_LAUNCHER + text
    cmd = parse_command(text) if text else None
    if cmd is None or not cmd.takes_server_flags:
        shown = (command.strip().splitlines() or [""])[0][:80]
        _die(f"{name}: no SGLang server launch in {shown!r} (python -m sglang.launch_server …, sglang serve …, "
             "docker run … lmsysorg/sglang … python3 -m sglang.launch_server …, or just its flags)")
    return text, name


@click.command()
@click.option("--cmd", "command", default=None, metavar="COMMAND",
              help="The launch command (docker run … / python -m sglang.launch_server … / sglang serve …, or just its flags).")
@click.option("--cmd-file", default=None, type=click.Path(), metavar="FILE",
              help="Read the launch command from a shell script or a compose / Kubernetes file.")
@click.option("--model-dir", default=None, type=click.Path(), metavar="DIR",
              help="The model's directory (config.json, *.safetensors; a Hugging Face cache snapshot or repository "
                   "folder works). Default: the command's --model-path, as a directory or an id in the HF cache.")
@click.option("--gpu-mem", type=click.FloatRange(min=0, min_open=True), default=None, metavar="GIB",
              help="Memory of one GPU in GiB (nvidia-smi's total / 1024). Default: nvidia-smi.")
@click.option("--gpu", "gpu_name", default=None, metavar="NAME",
              help="The GPU by name ('RTX 4090', 'H100', 'A100 40GB'): its nominal memory and compute capability.")
@click.option("--gpu-free", type=click.FloatRange(min=0, min_open=True), default=None, metavar="GIB",
              help="Memory free on the GPU now, in GiB (another process holding some). Default: nvidia-smi.")
@click.option("--gpus", type=click.IntRange(min=1), default=None, metavar="N",
              help="GPUs the launch may use (a larger --tp-size is proposed only within them).")
@click.option("--sglang", "sglang_version", default=None, metavar="VERSION",
              help="The SGLang release to plan for. Default: the image tag in the command, else the installed sglang.")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="text", show_default=True,
              help="Output format.")
@click.option("--fail-on", type=click.Choice(list(FAIL_ON)), default="error", show_default=True,
              help="Exit 1 when a finding has at least this severity (a predicted failure is an error).")
@click.option("--redact-hosts", is_flag=True, help="Also mask IP addresses and host names.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors and warnings.")
@click.option("--color/--no-color", default=None, help="Force colour on or off (default: auto, NO_COLOR).")
def preflight(command: str | None, cmd_file: str | None, model_dir: str | None, gpu_mem: float | None,
              gpu_name: str | None, gpu_free: float | None, gpus: int | None, sglang_version: str | None,
              fmt: str, fail_on: str, redact_hosts: bool, quiet: bool, color: bool | None) -> None:
    """Predict a launch's memory plan before running it: the fraction, weights, KV pool, mamba
    slots and running requests SGLang will get, the failure it would raise, and the fix.

    \b
      sglang-doctor preflight --cmd "python -m sglang.launch_server --model-path Qwen/Qwen3-8B"
      sglang-doctor preflight --cmd-file run.sh --gpu 'RTX 4090'
      sglang-doctor preflight --model-dir ./Qwen3-14B --gpu-mem 24 --cmd "--tp-size 2 --context-length 32768"
    """
    from sglang_doctor.launch.gpu import lookup_gpu
    from sglang_doctor.pipeline.preflight import preflight_report, run_preflight
    from sglang_doctor.report import write_report

    text, name = _command(command, cmd_file)
    if gpu_name is not None and gpu_mem is None and lookup_gpu(gpu_name) is None:
        _die(f"--gpu {gpu_name!r}: not a GPU this tool knows by name; pass --gpu-mem GIB (and --gpu-free GIB)")
    try:
        result = run_preflight(text, model_dir, gpu_mem, gpu_free, gpus, sglang_version, gpu_name=gpu_name)
    except (OSError, ValueError) as e:
        _die(str(e) if not isinstance(e, OSError) or not e.filename else f"{e.filename}: {e.strerror or e}")
    if result.pool is None and result.unpredicted is not None:
        _die(_NO_GPU if result.gpu is None else f"{result.model_dir or 'the model'}: {result.unpredicted}")
    report = preflight_report(result, name, text, redact_hosts)
    rules = None
    if fmt == "sarif":  # the rule descriptors (docs, help) of the findings
        from sglang_doctor.engine.rules import load_rules

        rules = load_rules()
    try:
        write_report(report, fmt, sys.stdout, quiet=quiet, color=color, fail_on=fail_on, rules=rules)
        sys.stdout.flush()
    except BrokenPipeError:  # `… | head -1`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    sys.exit(1 if any(n and fails(sev, fail_on) for sev, n in report.summary.items()) else 0)

