"""The startup summary: how far the launch got and what it ended up with."""

from __future__ import annotations

from typing import Any

from sglang_doctor.facts.context import Context, _ts

PHASES = ("launch", "distributed init", "weights", "pools", "cuda graphs", "ready")


def startup_summary(ctx: Context) -> dict[str, Any] | None:
    g = ctx.get
    if not any(g(k) is not None for k in ("model.arch", "kv.tokens", "kv.max_total_num_tokens", "server.ready")):
        return None
    out: dict[str, Any] = {
        "ready": bool(g("server.ready")),
        "time_to_ready_s": g("server.time_to_ready_s"),
        "model": g("model.arch"),
        "quantization": g("model.quantization"),
        "weights_gb": g("model.weights_gb"),
        "kv_dtype": g("kv.dtype"),
        "kv_tokens": g("kv.max_total_num_tokens") or g("kv.tokens"),
        "context_len": g("model.context_len"),
        "mamba_slots": g("mamba.max_cache_size"),
        # captured (end line seen), started (begin only: cut log or crash), none (graphs off).
        "cuda_graph": "captured" if g("cuda_graph.captured") else ("started" if g("cuda_graph.capture_started") else "none"),
        "decode_throughput": None,
        "token_usage_peak": g("decode.token_usage_peak"),
        "queue_peak": g("decode.queue_peak"),
        "phases": phase_durations(ctx),
    }
    tokens, ctx_len = out["kv_tokens"], out["context_len"]
    if tokens and ctx_len:
        out["kv_over_context"] = round(tokens / ctx_len, 2)
    d = ctx.decode_summary
    if d is not None:
        # Over every decode line; `approximate` once weeks of distinct values made it a sketch
        # (relative error ≤ 0.5 %, facts/decode.py).
        out["decode_throughput"] = {"median": d["median"], "p10": d["p10"], "p90": d["p90"], "lines": d["lines"],
                                    **({"approximate": True} if d["approximate"] else {})}
        out["throughput_histogram"] = d["histogram"]
    return {k: v for k, v in out.items() if v is not None}


def phase_durations(ctx: Context) -> list[dict[str, Any]]:
    """Seconds spent in each phase, from the first line of one phase to the next."""
    marks = sorted(ctx.timeline, key=lambda m: m[2])
    out: list[dict[str, Any]] = []
    for i, (phase, ts, line) in enumerate(marks):
        nxt = marks[i + 1] if i + 1 < len(marks) else None
        secs = None
        if nxt is not None:
            try:
                secs = max(0.0, float(_ts(nxt[1]) - _ts(ts)))
            except ValueError:
                secs = None
        out.append({"phase": phase, "line": line, **({"seconds": secs} if secs is not None else {})})
    return out
