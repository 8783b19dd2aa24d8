"""A launch command rebuilt from the server_args line, when the log shows no command.

server_args holds resolved values, so the rebuilt command spells out every field that
differs from the release's default (values SGLang chose itself included): it launches the
same server, and the corrected command then changes only what the fixes say.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

# Fields that are bookkeeping or derived from others, not something a user passes.
_SKIP = {"tokenizer_path", "served_model_name", "nccl_port", "base_gpu_id", "gpu_id_step", "random_seed",
         "cuda_graph_config", "enable_dp_attention_local_control_broadcast"}


def _as_arg(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (dict, list)):
        return json.dumps(value) if isinstance(value, dict) else None
    return str(value)


def rebuild_command(server_args: dict[str, Any], release: str | None) -> str | None:
    return rebuild(server_args, release)[0]


def rebuild(server_args: dict[str, Any], release: str | None) -> tuple[str | None, list[str]]:
    """The rebuilt command, and the flags it leaves out because the log shows them at `release`'s
    default (the command relies on those defaults: another release may change them)."""
    from sglang_doctor.registry import flags

    if not server_args.get("model_path"):
        return None, []
    try:
        table = flags.flags_for(release)
    except (KeyError, ValueError):
        table = flags.flags_for(None)
    parts = ["python3", "-m", "sglang.launch_server", "--model-path", shlex.quote(str(server_args["model_path"]))]
    defaults: list[str] = []
    for field, value in server_args.items():
        if field in _SKIP or field == "model_path" or field.startswith("__"):
            continue
        name = "--" + field.replace("_", "-")
        if name not in table:
            continue
        spec = table[name]
        if value == spec.default or (value in (None, "", [], {}) and spec.default in (None, "", [], {})):
            defaults.append(spec.name)
            continue
        if not spec.takes_value:
            if value is True:
                parts.append(spec.name)
            continue
        if isinstance(value, list) and spec.type == "list":
            if not value:
                continue
            parts.append(spec.name)
            parts.extend(shlex.quote(str(v)) for v in value)
            continue
        arg = _as_arg(value)
        if arg is None or (isinstance(value, str) and value == str(spec.default)):
            if arg is not None:
                defaults.append(spec.name)
            continue
        parts.extend([spec.name, shlex.quote(arg)])
    return " ".join(parts), defaults
