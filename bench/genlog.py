"""Generate a realistic long-running SGLang log: a startup, weeks of serving, a crash.

The serving part is what real `docker logs` of a busy server are made of: Prefill/Decode
batch lines from several DP ranks, uvicorn access lines, the odd benign warning. The crash
at the very end is the bundled demo's (the dtype mismatch), so the findings on the big
log must equal those on the demo log.
"""

from __future__ import annotations

import argparse
import random
from importlib import resources
from pathlib import Path


def demo_text(name: str = "qwen3.6-27b-awq-dtype-crash.log") -> str:
    return (Path(str(resources.files("sglang_doctor") / "fixtures" / "demo")) / name).read_text()


def serving_lines(rng: random.Random, n: int, graphs: bool = True) -> list[str]:
    out = []
    for i in range(n):
        sec = i // 20
        ts = f"2026-05-{2 + sec // 86400 % 27:02d} {sec // 3600 % 24:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
        dp = rng.randrange(4)
        r = rng.random()
        if r < 0.55:
            # SGLang's decode line as its own log_parser reads it (a comma after #queue-req); throughput
            # around 450 token/s with the odd stall, so that the statistics have ~100k distinct values.
            run = rng.randrange(1, 64)
            usage = rng.uniform(0.05, 0.9)
            tp = rng.lognormvariate(6.1, 0.5) if rng.random() > 0.01 else rng.uniform(0.01, 5)
            queue = 0 if rng.random() < 0.9 else rng.randrange(1, 40)
            out.append(f"[{ts} DP{dp} TP{dp}] Decode batch, #running-req: {run}, #token: {int(usage * 21482)}, "
                       f"token usage: {usage:.2f}, cuda graph: {graphs}, "
                       f"gen throughput (token/s): {tp:.2f}, #queue-req: {queue}, ")
        elif r < 0.8:
            out.append(f"[{ts} DP{dp} TP{dp}] Prefill batch, #new-seq: 1, #new-token: {rng.randrange(10, 4000)}, "
                       f"#cached-token: {rng.randrange(0, 2000)}, full token usage: {rng.uniform(0, 0.9):.2f}, "
                       f"mamba usage: 0.10, #running-req: {rng.randrange(0, 8)}, #queue-req: 0, #pending-token: 0, "
                       f"cuda graph: False, input throughput (token/s): {rng.uniform(100, 9000):.2f}")
        elif r < 0.999:
            out.append(f"[{ts}] INFO:     172.17.0.{rng.randrange(2, 250)}:{rng.randrange(30000, 60000)} - "
                       f"\"POST /v1/chat/completions HTTP/1.1\" 200 OK")
        else:
            out.append(f"[{ts}] Using default HuggingFace chat template with detected content format: string")
    return out


def write_log(path: Path, size_bytes: int, seed: int = 0, graphs: bool = True) -> None:
    """`graphs`=False: a server without CUDA graphs (every decode line says `cuda graph: False`)."""
    rng = random.Random(seed)
    demo = demo_text().splitlines(keepends=True)
    crash_at = next(i for i, ln in enumerate(demo) if "Scheduler hit an exception" in ln)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(demo[:crash_at - 1])
        written = fh.tell()
        while written < size_bytes:
            n = max(100, min(20000, (size_bytes - written) // 200))  # ~200 bytes a line: stop near the size
            block = "\n".join(serving_lines(rng, n, graphs)) + "\n"
            fh.write(block)
            written += len(block)
        fh.writelines(demo[crash_at - 1:])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--mb", type=float, default=100)
    a = ap.parse_args()
    write_log(Path(a.path), int(a.mb * 1e6))
