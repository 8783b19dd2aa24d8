"""The generic rules on real logs with the specific rule for each turned off.

A generic rule's worth is the failure no specific rule knows; tools/holdout.py measures that
over every real case. These cases pin what the generic rules read today, so a change that
stops one of them from naming the fix fails here, in the suite, not only in the hold-out.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _holdout():
    spec = importlib.util.spec_from_file_location("holdout", ROOT / "tools" / "holdout.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["holdout"] = mod  # (its dataclasses look their module up there)
    spec.loader.exec_module(mod)
    mod.DOCTOR = Path(sys.executable).parent / "sglang-doctor"  # this environment's tool, wherever it is
    return mod


HOLDOUT = _holdout()
MATCHING = HOLDOUT.load_matching()
CASES = {c["file"]: c for c in MATCHING.CASES}

# case -> the generic rule that must then lead with an expected fix
LEADS = {
    "017-fp8-block-quant-tp-576.log": "tp-split-not-divisible",
    "019-sgl-kernel-torch-abi-symbol.log": "native-library-load-failed",
    "022-gemma3-transformers-unknown.log": "error-says-pip-install",
    "026-nccl-unhandled-system-error.log": "nccl-error",
    "107-oom-model-init-0.3.log": "cuda-out-of-memory",
    "202-flashinfer-min-version-blackwell.log": "error-says-pip-install",
    "003-kv-profiled-negative.log": "kv-pool-short",
    "012-not-enough-memory-router-0.1.log": "kv-pool-short",
    "030-not-enough-memory-speculative-0.4.3.log": "kv-pool-short",
    "304-prefill-oom-hybrid-mamba.log": "kv-pool-short",
    "128-gptoss-triton-kernels-ptxas-sm120a.log": "triton-kernel-compile-failed",
    "130-rocm-ep-moe-fp8-ocp-conversion.log": "triton-kernel-compile-failed",
    # a ServerArgs field quoted by name in the message
    "913-multi-layer-eagle-llama-draft-tokens-assert.log": "error-names-launch-flag",
    "932-gdn-flashinfer-backend-blackwell-b300.log": "error-names-launch-flag",
    # the environment variable the message names
    "160-triton-no-c-compiler-runtime-image.log": "error-names-env-var",
    "703-cuda-home-not-set-docker.log": "error-names-env-var",
    "176-pd-decode-kv-transfer-waiting-timeout.log": "error-names-env-var",
    # an optional feature's frames: custom all-reduce, LoRA, HiCache with a synchronous CUDA error
    "106-custom-allreduce-capture-invalid-argument.log": "crash-in-optional-feature",
    "600-lora-spec-cuda-graph-capture-typeerror.log": "crash-in-optional-feature",
    "910-hicache-pinned-host-alloc-invalid-argument.log": "crash-in-optional-feature",
    # custom all-reduce's own error texts (the CUDART wrapper, its kernel's CUDA check), without frames
    "123-custom-allreduce-peer-access-4090-tp2.log": "crash-in-optional-feature",
    "124-custom-allreduce-peer-access-2xt4-0.1.17.log": "crash-in-optional-feature",
    # read as the log was pasted: a frame without its line number; an exception line with the
    # kernel location under it (one record)
    "302-pdmux-unsupported-compute-capability.log": "crash-in-optional-feature",
    "402-custom-allreduce-ipc-meta-h20.log": "crash-in-optional-feature",
    # a name SGLang imports from an optional package (data/optional-imports.json): a NameError is the
    # package missing, a cut "cannot import name 'X'" the package without that name
    "308-gptq-check-marlin-supported-undefined.log": "python-module-not-found",
    "936-sgl-kernel-per-token-group-quant-fp8-import.log": "dependency-api-mismatch",
    # an exception line pasted indented under its frames; faulthandler's stacks read as frames
    "930-step35-fp8-block-quant-tp4.log": "tp-split-not-divisible",
    "034-xgrammar-recursion-abort.log": "crash-in-optional-feature",
    # a bare `Exception: Capture cuda graph failed: Runtime check failed at …/custom_all_reduce.cuh:37`
    "073-custom-allreduce-v2-memory-saver-capture.log": "crash-in-optional-feature",
}


@pytest.mark.parametrize("name", sorted(LEADS))
def test_generic_rule_names_the_fix_when_the_specific_rule_is_off(name, tmp_path):
    outcome = HOLDOUT.run_case(MATCHING, CASES[name], tmp_path)
    assert outcome.left_out, "the specific rule no longer diagnoses it"
    assert outcome.diagnosed and outcome.lead == LEADS[name], outcome


def test_generic_rules_leave_one_error_when_the_specific_rule_is_off(tmp_path):
    # Two generic rules reading the same message must not both stay errors (one follows the other): a
    # "Not enough memory ... increase --mem-fraction-static" is kv-pool-short's, not also the flag rule's.
    # "Capture cuda graph failed: Failed to find C compiler. Please specify via CC environment variable"
    # is the env-var rule's, not also the generic capture failure's.
    for name, lead in (("012-not-enough-memory-router-0.1.log", "kv-pool-short"),
                       ("304-prefill-oom-hybrid-mamba.log", "kv-pool-short"),
                       ("979-triton-no-c-compiler-kt-base-image.log", "error-names-env-var")):
        case = CASES[name]
        full = HOLDOUT.serious_findings(MATCHING.REAL / name, [], tmp_path)
        left_out = sorted({f["rule"] for f in full if MATCHING.diagnosed(case, f)})
        rest = HOLDOUT.serious_findings(MATCHING.REAL / name, left_out, tmp_path)
        assert [f["rule"] for f in rest if f["severity"] == "error"] == [lead], rest


def test_evidence_of_a_traceback_matched_by_its_frame_is_its_exception_line(tmp_path):
    # A generic rule reads 302's frame (`…pdmux_context.py", line 0, in get_arch_constraints`); the report
    # quotes what went wrong, the exception line, as the log has it.
    name = "302-pdmux-unsupported-compute-capability.log"
    serious = HOLDOUT.serious_findings(MATCHING.REAL / name, ["pdmux-unsupported-gpu"], tmp_path)
    evidence = serious[0]["evidence"][0]
    assert evidence["line"] == 4 and evidence["text"] == "ValueError: Unsupported compute capability: 12.0"
