"""Fixtures that test something (ruledev/fixture_quality.py).

* Every rule fires on at least one fixture that is not a copy of a real log in tests/data/real (another
  release's wording, a rank-tagged copy, other numbers), so a pattern hard-wired to one log's numbers fails.
* Every rule that can have a near miss has a quiet fixture carrying its required literal: the same text
  from another subsystem, after ready, without the frames the rule needs. A rule that fires on any record
  carrying its literal (the literal alone matches, nothing narrows it) can have none and is not asked for one.
  `tools/near_misses.py --write` finds near misses in the text this repository already holds.
"""

from __future__ import annotations

from pathlib import Path

from sglang_doctor.ruledev.fixture_quality import (copied_from, has_near_miss, literal_suffices,
                                                   near_miss_literals, needs_near_miss, real_log_lines)

REAL = Path(__file__).resolve().parent / "data" / "real"

# Rules that could have a near miss but have none yet: the debt, which only shrinks (a rule that gains one
# must leave the list; a new rule may not join it).
KNOWN_WITHOUT_NEAR_MISS = {
    "architecture-failed-inspection", "argparse-ambiguous-option", "argparse-ignored-explicit-argument",
    "argparse-invalid-choice", "argparse-missing-required", "awq-gptq-auto-marlin",
    "awq-gptq-forced-non-marlin", "chat-template-not-found", "compressed-tensors-scheme-unsupported-gpu",
    "config-without-model-type", "cublas-error", "cuda-device-busy", "cuda-graph-disabled-torch-native",
    "deepgemm-unsupported-gpu", "deepseek-dsa-kv-dtype", "deprecated-flag-ignored",
    "dist-init-addr-not-local", "dist-init-timeout", "dp-attention-chunked-prefill-adjusted",
    "dtype-cast-bf16-fp16", "eagle-chunked-prefix-cache-assert", "fa3-requires-sm80-90",
    "fp8-block-quant-not-divisible", "fp8-per-tensor-scale-packed-split", "gloo-connect-full-mesh-failed",
    "gloo-socket-ifname-not-found", "hicache-host-memory-insufficient", "http-port-in-use",
    "hybrid-gdn-attention-backend-blackwell", "hybrid-mamba-cache-too-small",
    "hybrid-mamba-not-enough-gpu-memory", "index-put-dtype-mismatch", "kill-process-tree-called",
    "local-model-path-not-found", "lora-adapter-incompatible", "lora-max-loaded-lt-per-batch",
    "lora-paths-exceed-max-loaded", "lora-target-modules-missing", "lora-unsupported-spec",
    "mamba-cache-caps-max-running-requests", "max-running-requests-reduced", "memory-saver-not-installed",
    "mm-cuda-ipc-transport-failed", "model-files-missing", "model-module-import-skipped",
    "model-repo-not-found", "mooncake-rdma-transfer-failed", "mooncake-tcp-bad-address", "nan-in-logits",
    "nccl-ib-completion-error", "no-kernel-image", "nvshmem-ibgda-init-failed",
    "package-below-minimum-version", "pd-decode-radix-cache-incompatible", "peer-rank-failed-reported",
    "peer-rank-weight-loading-unfinished", "port-not-available", "pyspy-not-installed",
    "quantization-dtype-unsupported", "quantization-method-mismatch", "quantization-not-fully-optimized",
    "quantization-unsupported-gpu", "reasoning-parser-token-mismatch", "request-input-exceeds-kv-capacity",
    "request-total-tokens-exceed-context", "rocm-gpu-arch-unsupported", "rocm-triton-fp8-ocp-conversion",
    "safetensors-corrupt-shard", "shared-library-version-not-found", "spec-dp-attention-unsupported",
    "spec-draft-tokens-chain-mismatch", "spec-mamba-no-buffer-radix-cache", "spec-max-running-requests-48",
    "swa-pool-too-small", "tool-call-parser-unsupported", "torch-arch-not-supported", "tp-memory-unbalanced",
    "transformers-config-already-registered", "transformers-fallback", "triton-shared-memory-exceeded",
    "trtllm-gen-fmha-unsupported-gpu", "trtllm-mla-kv-dtype", "unknown-dtype", "unknown-quantization-method",
    "unsupported-kv-cache-dtype",
}


def test_every_rule_fires_on_a_fixture_that_is_not_a_copy_of_a_real_log(rules):
    real = real_log_lines(REAL)
    copies = {r.id: sorted({copied_from(p, real) for p in r.fixtures()[0]}) for r in rules
              if r.fixtures()[0] and all(copied_from(p, real) for p in r.fixtures()[0])}
    assert not copies, copies


def test_every_rule_that_can_have_a_near_miss_has_one(rules):
    lacking = {r.id for r in rules if needs_near_miss(r) and not has_near_miss(r)}
    assert lacking - KNOWN_WITHOUT_NEAR_MISS == set(), "write a quiet fixture carrying the rule's literal"
    assert KNOWN_WITHOUT_NEAR_MISS - lacking == set(), "these have a near miss now: take them off the list"


def test_the_near_miss_criteria_tell_the_rules_apart(rules):
    by_id = {r.id: r for r in rules}
    # a message only this rule prints, matched as a whole: any record carrying it fires the rule
    assert literal_suffices(by_id["decode-kv-oom"]) and not needs_near_miss(by_id["decode-kv-oom"])
    # a bare TypeError is the chat-template failure only at startup: a near miss after ready exists
    chat = by_id["chat-template-dict-unsupported"]
    assert needs_near_miss(chat) and has_near_miss(chat)
    assert near_miss_literals(chat) and all(lit for lit in near_miss_literals(chat))


def _computed_fix_keys(rule):
    """(kind, flag or name) of the rule's fixes whose value is computed (a template)."""
    return {(fx.kind, fx.flag or fx.name) for fx in rule.fixes
            if fx.kind != "note" and fx.value and "{" in fx.value and "{" not in (fx.flag or fx.name or "")}


# Computed fix values no fixture makes the rule compute yet (the facts they need are not in any fires fixture).
VALUES_NOT_PINNED = {
    ("dist-collective-timeout", "--dist-timeout"),
    ("nccl-error", "--shm-size"), ("deprecated-flag-warning", "--attn-dp-size"),
    ("router-flag-unknown", "sglang-router"), ("no-kernel-image", "TVM_FFI_CUDA_ARCH_LIST"),
    ("toolchain-gpu-arch-unsupported", "TORCH_CUDA_ARCH_LIST"),
    ("cuda-oom-cuda-graph-capture", "--piecewise-cuda-graph-max-tokens"), ("cuda-out-of-memory", "--tp-size"),
    ("kv-pool-smaller-than-context", "--mem-fraction-static"), ("package-below-minimum-version", "sglang-kernel"),
    ("tp-split-not-divisible", "--ep-size"), ("crash-in-optional-feature", "--attention-backend"),
    ("spec-num-draft-tokens-adjusted", "--speculative-num-draft-tokens"),
    # mem_plan() caps the context only from a KV size the log gives (a pool it printed); these rules fire
    # on logs that stop before any: SGD104's error is raised while sizing the state cache, before the KV
    # pool is profiled (0.5.14 model_runner_kv_cache_mixin.py:209, 0.5.23 kv_cache_configurator.py:3394),
    # and SGD132 fires only when nothing after "Load weight end" was printed
    ("hybrid-mamba-not-enough-gpu-memory", "--context-length"),
    ("pools-predicted-to-fail", "--context-length"),
}


def test_every_computed_fix_value_is_pinned_by_a_snapshot(rules):
    """A value the rule computes is pinned (its `from`, `value` and printed line) only when some fires
    fixture's snapshot shows it."""
    import yaml

    from sglang_doctor.ruledev.snapshot import snapshot_path

    unpinned = set()
    for rule in rules:
        shown = set()
        for p in rule.fixtures()[0]:
            for fx in yaml.safe_load(snapshot_path(p).read_text()).get("fixes", []):
                if fx.get("value") is not None:
                    name = fx.get("flag") or fx.get("name")
                    shown |= {(fx["kind"], name), (fx["kind"], name.replace("-decode", ""))}
        # (a release's spelling of the same flag pins it too: -decode is 0.5.14+'s name of --cuda-graph-max-bs)
        unpinned |= {(rule.id, key) for kind, key in _computed_fix_keys(rule)
                     if (kind, key) not in shown and (kind, key.replace("-decode", "")) not in shown}
    assert unpinned - VALUES_NOT_PINNED == set(), "add a fires fixture whose facts let the rule compute it"
    assert VALUES_NOT_PINNED - unpinned == set(), "pinned now: take these off the list"
