"""Real failure logs (tests/data/real): regression data, scored the way the shared evaluation scores.

Not unseen logs: most were added together with the rules that diagnose them (tests/data/holdout measures
new ones). The scoring is tests/scoring.py's, the rules of shared/eval/score.py restated here because the
product's tests must not read ../shared. STRICT: the ROOT finding (first error, else first warning)
carries, among its first two non-note fixes, an expected fix with its direction and value; catch-alls
count only when listed first. LENIENT: any fix of any error/warning finding, directions loosely compared.

Each case must pass strictly, except the KNOWN_STRICT_MISSES below (each says what the root finding
gives instead), which must still carry an expected fix in their first error/warning finding (lenient,
root cause first) and fail the test if they start passing strictly (then move them out of the list).
The strict and lenient figures, overall and over the verbatim + excerpt cases, are printed at the end
of the run (conftest.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from helpers_cli import run

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (tools/ load this module by path)
import scoring  # noqa: E402

REAL = Path(__file__).resolve().parent / "data" / "real"
CASES = yaml.safe_load((REAL / "cases.yaml").read_text())

# What each case's root finding gives where the label asks for more (a version, a value, another fix).
KNOWN_STRICT_MISSES = {
    '1017-llama4-scout-quantized-no-image-processor-config.log':
        "processor-files-missing (flag --tokenizer-path set, no value) names the labeller's remedy, the original repository that has the processor files, but a 'set' label needs a fix with a value, and which repository is not in the log",
    '996-lora-adapter-q-proj-only-missing-v-proj.log':
        "lora-adapter-missing-v-proj (flag --lora-paths set, no value) names the right remedy, another adapter trained with v_proj beside q_proj, but a 'set' label needs a fix with a value, and which adapter is not in the log",
    '992-nccl-unhandled-cuda-error-tp4-cu126.log':
        "nccl-error (env NCCL_P2P_DISABLE set 1; package nvidia-nccl-cu12 set) names nvidia-nccl-cu12 without the version the labeller's label (fix_known: false) asks: which NCCL build works is not in the log",
    '977-ptxas-sm120-rlinf-ray.log':
        "toolchain-gpu-arch-unsupported (package torch set: a cu128 build, which brings a Triton whose ptxas knows sm_120) where the labeller's label (fix_known: false) names Triton itself; a Triton upgrade alone breaks torch's exact triton pin, so the torch fix stays first",
    '006-eagle-illegal-memory-ray.log':
        "cuda-illegal-memory-access (package sglang raise; flag --disable-cuda-graph add) the label's fix is not among its first two: --speculative-algorithm: remove, package sglang: raise",
    '007-fused-moe-triton-shared-memory.log':
        "triton-shared-memory-exceeded (flag --attention-backend set flashinfer; system gpu raise 144+ KB shared memory per block (A100/H100 class)) the label's fix is not among its first two: package sglang: raise, system gpu: raise",
    '019-sgl-kernel-torch-abi-symbol.log':
        'extension-torch-abi-mismatch (package torch set; package sgl-kernel set) names torch without the version or value the label asks',
    '021-sgl-kernel-libnvrtc-missing.log':
        'sgl-kernel-load-failed (package sgl-kernel set; package torch set) names sgl-kernel without the version or value the label asks',
    '023-transformers-config-already-used.log':
        'transformers-config-already-registered (package transformers set; package sglang raise) names transformers without the version or value the label asks',
    '029-hip-invalid-device-function-mi100.log':
        'rocm-gpu-arch-unsupported (system rocm set; system gpu raise MI300-class (gfx942/gfx950)) names rocm without the version or value the label asks',
    '035-tp-divide-assert-numerator.log':
        'tp-not-divisible (flag --tp-size set; flag --pp-size set) names --tp-size without the version or value the label asks',
    '041-sgl-kernel-not-installed.log':
        'sgl-kernel-version-mismatch (package sgl-kernel raise; package sglang set) names sgl-kernel without the version or value the label asks',
    '103-warmup-502-http-server.log':
        'warmup-proxy-error (env no_proxy set 127.0.0.1,localhost,0.0.0.0; env NO_PROXY set 127.0.0.1,localhost,0.0.0.0) no_proxy=127.0.0.1,localhost,0.0.0.0, the label asks 127.0.0.1,localhost',
    '104-dist-init-tcpstore-retry-slurm.log':
        'dist-init-connect-failed (flag --dist-init-addr set) names --dist-init-addr without the version or value the label asks',
    '501-sgl-kernel-undefined-setdevice-launch.log':
        'extension-torch-abi-mismatch (package torch set; package sgl-kernel set) names torch without the version or value the label asks',
    '700-no-kernel-image-rmsnorm-rtx5090.log':
        'no-kernel-image (package sgl-kernel set; package flashinfer-python set) names sgl-kernel without the version or value the label asks',
    '701-no-kernel-image-gemmarmsnorm-rtx2080.log':
        'no-kernel-image (package sgl-kernel set; package flashinfer-python set) names sgl-kernel without the version or value the label asks',
    '702-no-kernel-image-rope-cache-t4.log':
        'no-kernel-image (package sgl-kernel set; package torch set) names torch without the version or value the label asks',
    '703-cuda-home-not-set-docker.log':
        "flashinfer-jit-build-failed (system cuda-toolkit set; env CUDA_HOME set <CUDA toolkit root>): torch raises this only when /usr/local/cuda does not exist, so a toolkit comes first; the label's fix is env CUDA_HOME=/usr/local/cuda",
    '704-no-kernel-image-flashinfer-handler-t4.log':
        'no-kernel-image (flag --attention-backend set triton; package flashinfer-python set) names flashinfer-python without the version or value the label asks',
    '800-flashinfer-api-mismatch-page-size.log':
        'flashinfer-import-error (package flashinfer-python set; flag --attention-backend set triton) names flashinfer-python without the version or value the label asks',
    '045-transformers-import-backends-mapping.log':
        'dependency-import-failed (package transformers set) names transformers without the version or value the label asks',
    '047-transformers-mllama-import-qwen25vl.log':
        'transformers-import-error (package transformers set; package sglang raise) names transformers without the version or value the label asks',
    '048-transformers-base-image-processor-old.log':
        'transformers-import-error (package transformers set; package sglang raise) names transformers without the version or value the label asks',
    '071-flash-attn-undefined-symbol-torch.log':
        'extension-torch-abi-mismatch (package torch set; package flash-attn set) names flash-attn without the version or value the label asks',
    '072-jit-qknorm-no-kernel-image-3090.log':
        "no-kernel-image (env TVM_FFI_CUDA_ARCH_LIST set; package sglang raise >=0.5.9) the label's fix is not among its first two: env TVM_FFI_CUDA_ARCH_LIST=8.6, package sglang: raise",
    '075-zmq-bind-dist-init-addr-multinode-dp.log':
        'dist-init-addr-not-local (flag --node-rank set; flag --dist-init-addr set) names --dist-init-addr without the version or value the label asks',
}

RESULTS: dict[str, tuple[bool, bool]] = {}  # file -> (strict, lenient), filled as the cases run


def diagnosed(case: dict, finding: dict) -> bool:
    """One finding carries an expected fix (lenient), or cites a key line of an 'evidence' case."""
    return scoring.carries_expected_fix(case, finding)


def case_problem(case: dict, findings: list[dict]) -> str | None:
    """Why the report's findings fail the case (None: it passes as this file expects)."""
    strict, lenient = scoring.strict_ok(case, findings), scoring.lenient_ok(case, findings)
    RESULTS[case["file"]] = (strict, lenient)
    known = KNOWN_STRICT_MISSES.get(case["file"])
    if known is None:
        if strict:
            return None
        return (f"root finding {(scoring.root_finding(findings) or {}).get('rule')} gives "
                f"{scoring.root_fixes(findings) or 'no fix'}, the label wants {case['expected_fix']}")
    if strict:
        return "now diagnosed strictly: remove it from KNOWN_STRICT_MISSES"
    serious = scoring.serious(findings)
    if not serious:
        return "no error or warning finding"
    # 'evidence' cases (a peer failed first): citing the key line anywhere is the diagnosis; otherwise
    # the first error/warning finding must carry an expected fix.
    if "evidence" in case.get("expected_fix", []):
        return None if lenient else f"no finding cites {case['key_lines']}"
    return None if diagnosed(case, serious[0]) else f"{serious[0]['rule']} leads without an expected fix"


def figures() -> str:
    """The strict and lenient figures of the cases run so far, overall and over verbatim + excerpt."""
    shape = {c["file"]: c["shape"] for c in CASES}
    lines = []
    for name, keep in (("all", lambda f: True), ("verbatim+excerpt", lambda f: shape[f] != "reconstructed")):
        got = [v for f, v in RESULTS.items() if keep(f)]
        lines.append(f"real logs ({name}): strict {sum(s for s, _ in got)}/{len(got)}, "
                     f"lenient {sum(x for _, x in got)}/{len(got)}")
    return "; ".join(lines)


def test_cases_are_unique_real_issue_threads():
    files = sorted(p.name for p in REAL.glob("*.log"))
    assert files == sorted(c["file"] for c in CASES)
    # SGLang's own threads, those of the frameworks that run it (verl, slime, RLinf), and run journals the
    # code-search index names by file id only (hold-out round 4)
    assert all(c["source"].startswith(("https://github.com/", "github file, code-index id ")) for c in CASES)


def test_labels_follow_the_schema():
    assert scoring.validate(CASES, REAL, real_set=True) == []
    assert set(KNOWN_STRICT_MISSES) <= {c["file"] for c in CASES}


def test_schema_rejects_a_label_that_can_never_match(tmp_path):
    """A YAML dict where a string was meant (`- system gpu: set` unquoted) fails, instead of never matching."""
    case = dict(next(c for c in CASES if c["file"].startswith("207-")))
    (tmp_path / case["file"]).write_text((REAL / case["file"]).read_text())
    case["expected_fix"] = [{"system gpu": "set"}]
    errors = scoring.validate([case], tmp_path, real_set=True)
    assert "is a dict, not a string" in errors[0], errors
    case.update(expected_fix=["system gpu: set"], shape="whole")
    assert "shape 'whole'" in scoring.validate([case], tmp_path, real_set=True)[0]


def test_strict_scoring_compares_directions_values_and_catch_alls():
    case = {"expected_fix": ["--mem-fraction-static: raise", "package sglang: raise"], "key_lines": []}
    finding = {"severity": "error", "fixes": [{"kind": "flag", "flag": "--mem-fraction-static", "action": "set",
                                               "from": "0.9", "value": "0.85"}], "evidence": []}
    assert not scoring.strict_ok(case, [finding])  # set below `from` is no raise
    finding["fixes"][0]["value"] = "0.93"
    assert scoring.strict_ok(case, [finding])
    upgrade = {"severity": "error", "fixes": [{"kind": "package", "name": "sglang", "action": "raise"}]}
    assert not scoring.strict_ok(case, [upgrade])  # the catch-all counts only when the label lists it first
    env = {"expected_fix": ["env NCCL_P2P_DISABLE=1"], "key_lines": []}
    fix = {"kind": "env", "name": "NCCL_P2P_DISABLE", "action": "set", "value": "0"}
    assert not scoring.strict_ok(env, [{"severity": "error", "fixes": [fix]}])
    fix["value"] = "1"
    assert scoring.strict_ok(env, [{"severity": "warning", "fixes": [fix]}])
    assert not scoring.strict_ok(env, [{"severity": "error", "fixes": []}, {"severity": "error", "fixes": [fix]}])


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_real_failure_is_diagnosed(case):
    res = run(["--format", "json", "--no-baseline", REAL / case["file"]])
    assert res.exit_code in (0, 1), res.output
    problem = case_problem(case, json.loads(res.stdout)["findings"])
    assert problem is None, problem
