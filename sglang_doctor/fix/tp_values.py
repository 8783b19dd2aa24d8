"""Values, not directions, for a `--tp-size` fix (issue 16, item 7).

A TP size below the one that failed that splits the model: its attention heads, KV heads (or
replicates them), intermediate size and linear-attention heads when its config.json is known (a
`--model-dir`, or the launch's model path on disk or in the Hugging Face cache, as preflight
reads it); otherwise one that divides the dimension the error message names. The size that
failed is never suggested.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sglang_doctor.model import Finding, FixOut

if TYPE_CHECKING:  # (the model reader is imported where a config is read: not on every run)
    from sglang_doctor.launch.model_dir import ModelInfo

_TP_FLAGS = {"--tp-size", "--tp", "--tensor-parallel-size"}
_SHOWN = 4  # the largest few sizes; smaller ones always work when these do not


def tp_ok(model: ModelInfo, tp: int) -> bool:
    """Whether `tp` splits the shapes SGLang's layers divide by it: heads, KV heads (or tp a multiple
    of them: replicated), the MLP's intermediate size, linear-attention heads and their conv state."""
    if model.num_heads % tp:
        return False
    kv = model.num_kv_heads
    if not model.use_mla and ((kv >= tp and kv % tp) or (kv < tp and tp % kv)):
        return False
    if model.intermediate_size and model.intermediate_size % tp:
        return False
    st = model.linear
    if st is not None:
        groups = st.n_groups if st.n_groups % tp == 0 else tp
        if st.num_heads % tp or (st.intermediate_size + 2 * groups * st.state_size) % tp:
            return False
    return True


def launch_model(model_dir: str | None, model_path: str | None, search: bool) -> ModelInfo | None:
    """The launch's model config: `model_dir`, else (`search`) the model path on disk or in the HF cache."""
    from sglang_doctor.launch.model_dir import read_model_dir, resolve_model_dir

    path = resolve_model_dir(model_dir, dict(os.environ)) if model_dir else (
        resolve_model_dir(model_path, dict(os.environ)) if search and model_path else None)
    if path is None:
        return None
    try:
        return read_model_dir(path)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # an unreadable config: fall back to the numbers in the message


def tp_choices(failed: int, model: ModelInfo | None, dims: list[int]) -> tuple[list[int], str]:
    """The TP sizes below `failed` that split the model (largest first), and what they split."""
    below = range(failed - 1, 0, -1)
    if model is not None:
        kv = "" if model.use_mla else f" and {model.num_kv_heads} KV heads"
        return [t for t in below if tp_ok(model, t)], f"split {model.name or 'the model'}'s {model.num_heads} heads{kv}"
    if dims:
        return [t for t in below if all(d % t == 0 for d in dims)], "divide " + " and ".join(map(str, dims))
    return [], ""


def _int(v: Any) -> int | None:
    try:
        n = int(str(v))
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def tp_values(findings: list[Finding], server_args: Mapping[str, Any], model_dir: str | None,
              search: bool) -> list[Finding]:
    """with_tp_values, reading the model's config only when a finding has a --tp-size fix to value."""
    if not any(_sizes_tp(fx) for f in findings for fx in f.fixes):
        return findings
    path = server_args.get("model_path")
    return with_tp_values(findings, server_args, launch_model(model_dir, str(path) if path else None, search))


def _sizes_tp(fix: FixOut) -> bool:
    return fix.kind == "flag" and fix.flag in _TP_FLAGS and fix.action in ("set", "lower")


def with_tp_values(findings: list[Finding], server_args: Mapping[str, Any], model: ModelInfo | None) -> list[Finding]:
    """Each `--tp-size` fix that sets or lowers the size given a value that splits the model (the
    rule's own when it does, which may know more, such as a quantization block), and the sizes
    that would do; a value equal to the size that failed is replaced."""
    out = []
    for f in findings:
        fixes = [_valued(fx, f.captures, server_args, model) for fx in f.fixes]
        out.append(replace(f, fixes=fixes) if fixes != f.fixes else f)
    return out


def _valued(fix: FixOut, captures: Mapping[str, Any], server_args: Mapping[str, Any],
            model: ModelInfo | None) -> FixOut:
    if not _sizes_tp(fix):
        return fix
    failed = _int(server_args.get("tp_size")) or _int(fix.from_) or _int(captures.get("denominator"))
    denominator = _int(captures.get("denominator"))
    if failed is None or failed < 2 or (denominator is not None and denominator != failed):
        return fix  # the message divides by another size (attention TP under DP attention): not --tp-size's value
    dims = [n for n in (_int(captures.get("numerator")),) if n is not None]
    choices, what = tp_choices(failed, model, dims)
    if not what:
        return fix
    value = _int(fix.value)
    keep = value is not None and value in choices
    new_value = fix.value if keep else (str(choices[0]) if choices else None)
    sizes = ", ".join(map(str, choices[:_SHOWN])) + (", …" if len(choices) > _SHOWN else "")
    note = (f"sizes below {failed} that {what}: {sizes}" if choices else
            f"no size below {failed} {what.replace('split', 'splits', 1).replace('divide', 'divides', 1)}")
    return replace(fix, value=new_value, from_=fix.from_ or str(failed),
                   text=f"{fix.text} ({note})" if fix.text else note)
