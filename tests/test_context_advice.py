"""Advice follows the launch's shape: a single-node launch never gets multi-node advice, and a consequence on one
node (an aborted NCCL communicator) is not a second root cause."""

from __future__ import annotations

import io

from sglang_doctor.engine.analyze import Matcher, analyze_chunks
from sglang_doctor.pipeline.run import Options, diagnose
from sglang_doctor.read.reader import iter_chunks

TIMEOUT = ("[2025-10-01 10:30:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/x/sglang/srt/model_executor/model_runner.py", line 500, in init_torch_distributed\n'
           "    init_distributed_environment(\n"
           "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/4 clients joined.\n")
OOM = ("[2025-10-01 10:00:30 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
       '  File "/x/sglang/srt/model_loader/loader.py", line 380, in load_model\n'
       "    model = _initialize_model(model_config, self.load_config)\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 2 has a total capacity of 39.39 GiB "
       "of which 0.50 GiB is free.\n")


def _findings(text: str, rules):
    return analyze_chunks(iter_chunks(io.BytesIO(text.encode())), Matcher(rules)).findings


def _flags(findings) -> set[str]:
    return {x.flag for f in findings for x in f.fixes if x.flag} | {x.text or "" for f in findings for x in f.fixes}


def _head(nnodes: int) -> str:
    return (f"[2025-10-01 10:00:00] server_args=ServerArgs(model_path='/models/big', tp_size=4, nnodes={nnodes}, "
            f"node_rank=0, dist_init_addr={'None' if nnodes == 1 else repr('10.0.0.1:5000')})\n")


def test_a_single_node_rendezvous_timeout_after_a_weight_oom_is_a_memory_problem(rules):
    found = _findings(_head(1) + OOM + TIMEOUT, rules)
    roots = [f for f in found if f.severity == "error" and not f.consequence_of]
    assert [f.rule for f in roots] == ["cuda-oom-weight-loading"]
    assert not any("--dist-init-addr" in s for s in _flags(found))


def test_a_single_node_rendezvous_timeout_alone_points_at_the_local_ranks(rules):
    found = _findings(_head(1) + TIMEOUT, rules)
    f = next(f for f in found if f.rule == "dist-init-timeout")
    assert "local" in f.explanation and "--dist-init-addr" not in f.explanation
    assert not any("--dist-init-addr" in s for s in _flags([f]))


def test_a_multi_node_rendezvous_timeout_gets_the_multi_node_advice(rules):
    found = _findings(_head(2) + TIMEOUT, rules)
    f = next(f for f in found if f.rule == "dist-init-timeout")
    assert "--dist-init-addr" in _flags([f])


def test_an_aborted_communicator_on_another_node_follows_the_first_error(rules, tmp_path):
    node0 = tmp_path / "node0.log"
    node1 = tmp_path / "node1.log"
    node0.write_text(OOM)
    node1.write_text("[2025-10-01 10:00:40 TP4] Scheduler hit an exception: Traceback (most recent call last):\n"
                     '  File "/x/sglang/srt/distributed/parallel_state.py", line 10, in all_reduce\n    x()\n'
                     "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 4. Original reason for "
                     "failure was: Watchdog caught collective operation timeout\n")
    rep = diagnose([str(node0), str(node1)], rules, Options()).report
    errors = [f.rule for f in rep.findings if f.severity == "error"]
    assert errors == ["cuda-oom-weight-loading"]
    assert any(f.rule == "nccl-communicator-aborted" and f.consequence_of for f in rep.findings)
    alone = diagnose([str(node1)], rules, Options()).report
    assert [f.rule for f in alone.findings if f.severity == "error"] == ["nccl-communicator-aborted"]
