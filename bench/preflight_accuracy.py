"""How close preflight's memory model comes to real launches whose logs state the numbers.

Each case under bench/preflight_cases/<name>/ holds the model's real config.json and a
case.yaml with the command, the GPU, the release and what the log says (free memory before
and after the weights, weights, KV tokens, mamba slots, max_running_requests, the failure).
Two predictions per case:

  free given   SGLang's own readings (pre/post) fed in: tests the pool arithmetic
               (target: KV tokens within 5 %, mamba slots within 1, the failure predicted)
  GPU total    only nvidia-smi's total and the checkpoint size from config.json: tests the
               defaults and the free-memory/weights estimates (KV within 10 %, weights within 10 %)

Then the speed of preflight on a 60-shard model directory (headers only, sparse files), each figure
beside a reference measured in the same run: in process against reading the same headers with
plain open() + json.loads, and the whole command against `python -c "import json"`.

Run: python bench/preflight_accuracy.py [--no-perf] [--json]
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from sglang_doctor.fix import memory_model as mm  # noqa: E402
from sglang_doctor.launch.model_dir import read_model_dir  # noqa: E402
from sglang_doctor.pipeline.preflight import _parse, launch_from_flags, run_preflight  # noqa: E402

CASES = ROOT / "preflight_cases"


def _pct(pred: float | None, real: float | None) -> float | None:
    if pred is None or real is None or real == 0:
        return None
    return (pred - real) / abs(real) * 100


def _fmt(x: Any, width: int = 9) -> str:
    if x is None:
        return "-".rjust(width)
    if isinstance(x, float):
        return f"{x:.2f}".rjust(width)
    return str(x).rjust(width)


def _fmt_pct(x: float | None) -> str:
    return "      -" if x is None else f"{x:+6.1f}%"


def run_case(d: Path) -> dict[str, Any]:
    case = yaml.safe_load((d / "case.yaml").read_text())
    logged = case.get("logged") or {}
    gpu = case.get("gpu") or {}
    total = gpu.get("total_mib")
    out: dict[str, Any] = {"name": d.name, "version": str(case.get("sglang_version")), "logged": logged}
    if logged.get("pre_gib") is not None and logged.get("post_gib") is not None:
        r = run_preflight(case["command"], model_dir=d, gpu_mem_gib=total / 1024 if total else 24.0,
                          gpus=case.get("gpus"), sglang_version=out["version"], pre_gib=logged["pre_gib"],
                          post_gib=logged["post_gib"], query_gpu=False, env={})
        out["given"] = r.to_json()
    if case.get("weights_from_config", True):
        cmd, flags = _parse(case["command"])
        out["weights_pred"] = mm.weights_per_gpu_gib(read_model_dir(d), launch_from_flags(flags))
    if total and case.get("gpu_total_mode", True):
        r = run_preflight(case["command"], model_dir=d, gpu_mem_gib=total / 1024, gpus=case.get("gpus"),
                          sglang_version=out["version"], query_gpu=False, env={})
        out["total"] = r.to_json()
    return out


def _failure_ok(pred: dict[str, Any] | None, logged: dict[str, Any]) -> bool | None:
    if pred is None:
        return None
    want = logged.get("failure")
    got = pred.get("failure") or ""
    return (want in got) if want else pred.get("outcome") == "ok"


def report(results: list[dict[str, Any]]) -> int:
    head = (f"{'case':34} {'rel':>8} | {'KV log':>9} {'KV given':>9} {'err':>7} | {'KV total':>9} {'err':>7} | "
            f"{'W log':>6} {'W pred':>6} {'err':>7} | {'slots':>5} {'pred':>5} | failure")
    print(head)
    print("-" * len(head))
    kv_given, kv_total, w_err, slots_ok, fail_ok = [], [], [], [], []
    for r in results:
        lg = r["logged"]
        g, t = r.get("given"), r.get("total")
        e_given = _pct(g and g["kv_tokens"], lg.get("kv_tokens"))
        e_total = _pct(t and t["kv_tokens"], lg.get("kv_tokens"))
        w_pred = r.get("weights_pred")
        e_w = _pct(w_pred, lg.get("weights_gib"))
        slots_pred = (g or t or {}).get("mamba_slots")
        f_ok = _failure_ok(g or t, lg)
        for lst, v in ((kv_given, e_given), (kv_total, e_total), (w_err, e_w)):
            if v is not None:
                lst.append(v)
        if lg.get("mamba_slots") is not None and slots_pred is not None:
            slots_ok.append(abs(slots_pred - lg["mamba_slots"]) <= 1)
        if f_ok is not None:
            fail_ok.append(f_ok)
        fail = lg.get("failure") or "starts"
        print(f"{r['name'][:34]:34} {r['version'][:8]:>8} | {_fmt(lg.get('kv_tokens'))} {_fmt(g and g['kv_tokens'])} "
              f"{_fmt_pct(e_given)} | {_fmt(t and t['kv_tokens'])} {_fmt_pct(e_total)} | "
              f"{_fmt(lg.get('weights_gib'), 6)} {_fmt(w_pred, 6)} {_fmt_pct(e_w)} | "
              f"{_fmt(lg.get('mamba_slots'), 5)} {_fmt(slots_pred, 5)} | {fail[:28]}: {'ok' if f_ok else 'MISSED'}")
    print()

    def summary(name: str, errs: list[float], limit: float) -> None:
        inside = sum(abs(e) <= limit for e in errs)
        worst = max(errs, key=abs) if errs else 0.0
        print(f"{name:42} {inside}/{len(errs)} within ±{limit:g} %  (worst {worst:+.1f} %)")

    summary("KV tokens, free memory given", kv_given, 5)
    summary("KV tokens, GPU total alone", kv_total, 10)
    summary("weights per GPU (from config.json)", w_err, 10)
    print(f"{'mamba slots within ±1':42} {sum(slots_ok)}/{len(slots_ok)}")
    print(f"{'logged outcome predicted (failure or start)':42} {sum(fail_ok)}/{len(fail_ok)}")
    return 0


def _sixty_shards(d: Path, shards: int = 60) -> None:
    """Qwen3-14B's config.json and its 40 layers over `shards` sparse safetensors files (headers only)."""
    cfg = json.loads((CASES / "qwen3-14b-tp4-rtx4090" / "config.json").read_text())
    (d / "config.json").write_text(json.dumps(cfg))
    per = 40 // shards + 1
    layer = 0
    for s in range(shards):
        header: dict[str, Any] = {}
        off = 0
        for _ in range(per):
            for name, shape in (("self_attn.q_proj.weight", [5120, 5120]), ("self_attn.k_proj.weight", [1024, 5120]),
                                ("self_attn.v_proj.weight", [1024, 5120]), ("self_attn.o_proj.weight", [5120, 5120]),
                                ("mlp.gate_proj.weight", [17408, 5120]), ("mlp.up_proj.weight", [17408, 5120]),
                                ("mlp.down_proj.weight", [5120, 17408]), ("input_layernorm.weight", [5120])):
                n = 2
                for x in shape:
                    n *= x
                header[f"model.layers.{layer}.{name}"] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
                off += n
            layer += 1
        raw = json.dumps(header).encode()
        path = d / f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(raw)) + raw)
            f.truncate(8 + len(raw) + off)  # sparse: the data is a hole, never written or read


def _read_headers_plainly(d: Path) -> int:
    """The least any tool must do: config.json and every shard's header with open() + json.loads."""
    tensors = len(json.loads((d / "config.json").read_text()))
    for shard in sorted(d.glob("*.safetensors")):
        with open(shard, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            tensors += len(json.loads(f.read(n)))
    return tensors


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def perf(shards: int = 60, repeat: int = 7) -> list[tuple[str, float, str, float]]:
    """(what, seconds, reference, seconds) for preflight on a `shards`-file model directory, each beside a
    reference measured in the same run (best of `repeat`, the two alternating)."""
    cmd = "python -m sglang.launch_server --model-path x --tp-size 4 --mem-fraction-static 0.8"
    exe = [sys.executable, "-m", "sglang_doctor"]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        _sixty_shards(d, shards)
        run_preflight(cmd, model_dir=d, gpu_mem_gib=24.0, sglang_version="0.5.14", query_gpu=False, env={})  # warm
        inproc = ref_read = cli = ref_py = float("inf")
        for _ in range(repeat):
            inproc = min(inproc, _best(lambda: run_preflight(cmd, model_dir=d, gpu_mem_gib=24.0, sglang_version="0.5.14",
                                                             query_gpu=False, env={}), 1))
            ref_read = min(ref_read, _best(lambda: _read_headers_plainly(d), 1))
            cli = min(cli, _best(lambda: subprocess.run(
                [*exe, "preflight", "--model-dir", str(d), "--gpu-mem", "24", "--sglang", "0.5.14", "--cmd", cmd],
                capture_output=True, check=False), 1))
            ref_py = min(ref_py, _best(lambda: subprocess.run([sys.executable, "-c", "import json"],
                                                              capture_output=True, check=True), 1))
    return [(f"run_preflight(), {shards} shards", inproc, f"open() + json.loads of the same {shards} headers", ref_read),
            (f"`sglang-doctor preflight`, {shards} shards (process)", cli, '`python -c "import json"` (process)', ref_py)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-perf", action="store_true", help="skip timing preflight on a 60-shard model directory")
    ap.add_argument("--json", action="store_true", help="print the raw predictions as JSON")
    args = ap.parse_args()
    results = [run_case(d) for d in sorted(CASES.iterdir()) if (d / "case.yaml").is_file()]
    if args.json:
        print(json.dumps(results, indent=1))
    report(results)
    if not args.no_perf:
        print()
        for what, t, ref, r in perf():
            print(f"{what:48} {t * 1000:7.1f} ms | {ref:50} {r * 1000:7.1f} ms | ratio {t / r:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
