"""The subsystem map (data/subsystems.yaml): its patterns name files that exist in real release wheels, its
switches are flags of those releases, and a traceback is placed and isolated as SGLang's code is laid out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sglang_doctor.registry import flags
from sglang_doctor.registry.subsystems import classify, subsystems

FILES = json.loads((Path(__file__).parent / "data" / "subsystem-files.json").read_text())
SITE = "/usr/local/lib/python3.10/dist-packages/sglang/srt"


def _frame(rel: str, func: str = "f", line: int = 10) -> str:
    path = rel if rel.startswith("/") else f"{SITE}/{rel}"
    return f'File "{path}", line {line}, in {func}'


def test_every_sglang_pattern_matches_a_file_of_a_real_release():
    """tools/check_subsystems.py recorded, per pattern, the files it matched in the unpacked wheels; a pattern
    edited since then (or matching nothing) fails here."""
    seen = 0
    for s in subsystems():
        for i, p in enumerate(s.frames):
            if p.sglang is None:
                continue
            rec = FILES["patterns"].get(f"{s.id}#{i}")
            assert rec is not None and rec["pattern"] == p.sglang.pattern, \
                f"{s.id} frames[{i}]: run tools/check_subsystems.py"
            hits = {rel: fs for rel, fs in rec.items() if rel != "pattern"}
            assert hits, f"{s.id} frames[{i}] matches no file of {FILES['releases']}"
            assert all(p.sglang.match(f) for fs in hits.values() for f in fs)
            seen += 1
    assert seen >= 40


def test_every_switch_is_a_flag_of_some_release_with_a_value_it_accepts():
    for s in subsystems():
        for sw in s.isolate:
            if sw.env:
                assert re.fullmatch(r"[A-Z_]+", sw.env) and sw.values
                continue
            rels = flags.releases_with(sw.flag)
            assert rels, f"{s.id}: {sw.flag} is no release's flag"
            for v in sw.values:
                assert any(flags.resolve(sw.flag, r).choices in (None, ()) or v in flags.resolve(sw.flag, r).choices
                           for r in rels), f"{s.id}: {sw.flag} {v}"


def test_every_subsystem_says_why():
    for s in subsystems():
        assert s.name and len(s.why) > 20 and s.frames, s.id


def _ids(frames, excs=("RuntimeError: x",)):
    return [f.subsystem.id for f in classify(frames, list(excs))]


def test_innermost_frame_first_then_the_modes_outside_it():
    frames = [_frame("managers/scheduler.py", "event_loop_overlap"), _frame("model_executor/cuda_graph_runner.py", "capture"),
              _frame("models/deepseek_v2.py", "forward_absorb"),
              _frame("layers/attention/triton_backend.py", "init_forward_metadata")]
    assert _ids(frames) == ["attention-backend", "cuda-graph", "overlap-scheduler"]


def test_a_wrapper_exception_names_the_subsystem_first():
    frames = [_frame("model_executor/model_runner.py", "forward"), _frame("layers/attention/triton_backend.py", "fwd")]
    assert _ids(frames, ["torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:"])[:2] == \
        ["torch-compile", "attention-backend"]


@pytest.mark.parametrize("frame, want", [
    (_frame("/usr/local/lib/python3.10/dist-packages/deep_gemm/jit_kernels/impls.py"), "deepgemm"),
    (_frame("layers/moe/token_dispatcher/deepep.py", "dispatch"), "moe-a2a"),
    (_frame("distributed/device_communicators/custom_all_reduce.py", "all_reduce"), "custom-all-reduce"),
    (_frame("constrained/xgrammar_backend.py", "fill_vocab_mask"), "grammar"),
    (_frame("mem_cache/hiradix_cache.py", "write_backup"), "hicache"),
    (_frame("mem_cache/radix_cache.py", "match_prefix"), "radix-cache"),
    (_frame("disaggregation/mooncake/conn.py", "transfer_worker"), "pd-transfer"),
    (_frame("lora/lora_manager.py", "load_lora_adapter"), "lora"),
    (_frame("speculative/eagle_worker.py", "forward_draft_extend"), "speculative"),
    (_frame("managers/mm_utils.py", "embed_mm_inputs"), "multimodal"),
    (_frame("managers/scheduler_update_weights_mixin.py", "update_weights_from_tensor"), "weight-update"),
    (_frame("layers/attention/mamba/mamba.py", "forward"), "mamba-state"),
    (_frame("models/qwen2_5_vl.py", "forward"), "model-code"),
    (_frame("managers/tp_worker_overlap_thread.py", "__init__"), None),  # construction is not the overlap loop
    (_frame("/usr/lib/python3.10/threading.py", "run"), None),
])
def test_frames_belong_to_their_subsystem(frame, want):
    assert (_ids([frame]) or [None])[0] == want


def _isolating(version: str | None, server_args: str = "", frames: list[str] | None = None) -> list[tuple]:
    from sglang_doctor.engine.analyze import Matcher, analyze_lines
    from sglang_doctor.engine.rules import load_rules
    from sglang_doctor.read.reader import iter_lines_from_text

    frames = frames or [_frame("model_executor/cuda_graph_runner.py", "capture"),
                        _frame("layers/attention/flashinfer_backend.py", "init_forward_metadata")]
    text = (f"[2025-10-01 10:00:00] server_args=ServerArgs(model_path='/m', {server_args})\n" if server_args else "")
    text += f"[2025-10-01 10:00:01] sglang=={version}\n" if version else ""
    text += "Traceback (most recent call last):\n" + "".join(f"  {f}\n    x()\n" for f in frames) + "RuntimeError: new\n"
    from sglang_doctor.engine.isolate import isolating_fixes

    res = analyze_lines(iter_lines_from_text(text), Matcher(_isolating.rules))
    return [(x.kind, x.flag or x.name, x.value) for x in isolating_fixes(res.context)]


@pytest.fixture(autouse=True)
def _rules(rules):
    _isolating.rules = rules


def test_switches_follow_the_release_and_the_launch():
    assert _isolating("0.4.6") == [("flag", "--attention-backend", "triton"), ("flag", "--disable-cuda-graph", None)]
    assert _isolating("0.5.14") == [("flag", "--attention-backend", "triton"),
                                    ("flag", "--cuda-graph-backend-decode", "disabled"),
                                    ("flag", "--cuda-graph-backend-prefill", "disabled")]
    # the launch already runs triton: another backend; CUDA graphs already off: not proposed again
    got = _isolating("0.5.5", "attention_backend='triton', disable_cuda_graph=True")
    assert got == [("flag", "--attention-backend", "flashinfer")]


def test_an_env_switch_for_its_releases_only():
    frames = [_frame("layers/quantization/deep_gemm.py", "gemm_nt_f8f8bf16")]
    assert _isolating("0.4.6.post5", frames=frames) == [("env", "SGL_ENABLE_JIT_DEEPGEMM", "0")]
    assert _isolating("0.5.5", frames=frames)[0] == ("env", "SGLANG_ENABLE_JIT_DEEPGEMM", "0")


def test_a_remove_switch_only_when_the_launch_uses_it():
    frames = [_frame("/usr/lib/python3/dist-packages/torch/_dynamo/eval_frame.py", "_fn")]
    assert _isolating("0.5.5", "enable_torch_compile=True", frames) == [("flag", "--enable-torch-compile", None)]
    assert _isolating("0.5.5", "enable_torch_compile=False", frames) == []
