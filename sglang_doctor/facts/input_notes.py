"""What a run says about an input as a whole: empty, not an SGLang log, a cut archive.

An empty input is an input error (exit status 2: there was nothing to diagnose, and a green
"no known problem" would say otherwise); text that shows no sign of SGLang and gave no finding
gets a warning, so a wrong file or a client's output is not taken for a healthy launch.
"""

from __future__ import annotations

from typing import Any

from sglang_doctor.read.decompress import stream_warning
from sglang_doctor.read.reader import display_name

# Facts only an SGLang launch (or its traceback) states.
_SGLANG_FACTS = ("sglang.version", "model.arch", "kv.tokens", "kv.max_total_num_tokens", "server.ready",
                 "cuda_graph.capture_started", "gpu.free_gb_before_load", "crash.sglang_frame")


def is_empty(result: Any) -> bool:
    """No text at all: zero bytes, or nothing but blank lines, NULs, CRs and byte-order marks."""
    return not result.context.text_lines


def sglang_seen(ctx: Any) -> bool:
    """Whether anything in the input is SGLang's: its name, its log facts, its launch command."""
    return bool(ctx.sglang_mentioned or ctx.server_args or ctx.command
                or any(ctx.get(k) is not None for k in _SGLANG_FACTS))


def input_warnings(name: str, stream: Any, result: Any) -> list[str]:
    """Warnings about the input itself, each naming it."""
    shown = display_name(name)
    out: list[str] = []
    cut = stream_warning(stream)
    if cut:
        out.append(f"{shown}: {cut}")
    if result.context.text_lines and not result.findings and not sglang_seen(result.context):
        out.append(f"{shown}: no SGLang launch found (no SGLang log line, launch command, server_args or "
                   "traceback through sglang): is this the server's log?")
    return out
