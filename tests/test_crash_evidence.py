"""A failed launch is never clean: each sign of failure (facts/crash.py) fires the crash net (SGD739) when no
rule names the cause, and its near miss does not. Messages are SGLang's, PyTorch's, docker's and the shell's."""

from __future__ import annotations

import pytest

from sglang_doctor.pipeline.run import Options, diagnose

HEAD = ("[2025-10-01 10:00:00] server_args=ServerArgs(model_path='/models/Qwen3-8B', tp_size=1, "
        "attention_backend='flashinfer', disable_cuda_graph=False, enable_torch_compile=False)\n"
        "[2025-10-01 10:00:02] sglang==0.5.5\n"
        "[2025-10-01 10:00:05 TP0] Load weight begin. avail mem=23.20 GB\n")
READY = ("[2025-10-01 10:00:40 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=7.10 GB, "
         "mem usage=16.10 GB.\n[2025-10-01 10:01:00] The server is fired up and ready to roll!\n")
SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


def _report(text: str, pasted: bool = False):
    name = "x.log"
    return diagnose([name], RULES, Options(), texts={name: text}).report if pasted else _check(text)


def _check(text: str):
    import io

    from sglang_doctor.engine.analyze import Matcher, analyze_chunks
    from sglang_doctor.read.reader import iter_chunks

    return analyze_chunks(iter_chunks(io.BytesIO(text.encode())), Matcher(RULES))


RULES: list = []


@pytest.fixture(autouse=True)
def _rules(rules):
    RULES[:] = rules


def _errors(text: str) -> list[str]:
    return [f.rule for f in _check(text).findings if f.severity == "error"]


def _net(text: str):
    found = [f for f in _check(text).findings if f.rule == "crash-unrecognized"]
    return found[0] if found else None


CUT = (HEAD + "[2025-10-01 10:00:50 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
       f'  File "{SITE}/managers/scheduler.py", line 2313, in run_scheduler_process\n'
       "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
       f'  File "{SITE}/model_executor/cuda_graph_runner.py", line 385, in capture\n'
       "    ) = self.capture_one_batch_size(bs, forward)\n")


def test_a_cut_scheduler_traceback_is_an_error_naming_where_it_stops():
    f = _net(CUT)
    assert f is not None and f.severity == "error"
    assert "cut after frame capture in sglang/srt/model_executor/cuda_graph_runner.py:385" in f.explanation
    assert "paste the rest" in f.explanation
    assert "CUDA graph capture and replay" in f.explanation
    assert [x.flag for x in f.fixes if x.kind == "flag"] == ["--disable-cuda-graph"]  # 0.5.5 spelling
    assert "SGLang 0.5.5" in f.explanation and "model /models/Qwen3-8B" in f.explanation


def test_the_switch_is_spelled_for_the_release():
    f = _net(CUT.replace("sglang==0.5.5", "sglang==0.5.14"))
    got = [(x.flag, x.value) for x in f.fixes if x.kind == "flag"]
    assert got == [("--cuda-graph-backend-decode", "disabled"), ("--cuda-graph-backend-prefill", "disabled")]


def _chained(first: str) -> str:
    return (HEAD + "Traceback (most recent call last):\n"
            f'  File "{SITE}/model_executor/model_runner.py", line 190, in init_torch_distributed\n'
            "    torch.cuda.synchronize()\n"
            f"{first}\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n"
            f'  File "{SITE}/model_executor/model_runner.py", line 210, in __init__\n')


def test_a_chained_traceback_cut_in_its_second_part_quotes_the_first_exception():
    f = _net(_chained("RuntimeError: the first part of an error no rule knows"))
    assert f is not None and "the first part of an error no rule knows" in f.explanation
    assert "cut after frame __init__ in sglang/srt/model_executor/model_runner.py:210" in f.explanation
    # A CUDA code there is explained by the catalog recogniser (SGD761); the crash net gives way to it.
    assert _errors(_chained("RuntimeError: CUDA error code=35(b'cudaErrorInsufficientDriver')")) == \
        ["cuda-code-recognised"]


@pytest.mark.parametrize("line", [
    "[2025-10-01 10:00:50] Received sigquit from a child process. It usually means the child failed.",
    "[2025-10-01 10:00:50] kill_process_tree called: parent_pid=1, include_parent=True, pid=1",
    "[2025-10-01 10:00:50] Rank 0 scheduler died during initialization (exit code: -6). ",
    "[2025-10-01 10:00:50] Subprocess scheduler_0 (pid=412) crashed with exit code -11. Triggering SIGQUIT for cleanup...",
    "sglang-1 exited with code 139",
    "Segmentation fault (core dumped)",
    "[2025-10-01 10:00:50 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
    "[2025-10-01 10:00:50 TP0] Scheduler debug info:",
    "[2025-10-01 10:00:50] Initialization failed. warmup error: ",
    '[2025-10-01 10:00:50] http://proxy-host:3138 "GET http://0.0.0.0:25600/get_model_info HTTP/1.1" 403 1234',
    "[2025-10-01 10:00:50 TP0] RuntimeError: an error no rule knows",
    "Fatal Python error: Aborted",
    "Process Process-1:",
    "CUDA Error: no kernel image is available for execution on the device (209) /tmp/flashinfer/handler.cuh: line 130",
], ids=["sigquit", "kill-tree", "died-init", "watchdog-exit", "compose-exit", "shell-segv", "watchdog-timeout",
        "debug-dump", "warmup-error", "warmup-proxy-403", "exception-line", "faulthandler", "multiprocessing-child",
        "native-error-line"])
def test_each_sign_of_failure_makes_an_error(line):
    errors = _errors(HEAD + line + "\n")
    assert errors, line


@pytest.mark.parametrize("line", [
    "[2025-10-01 10:01:10] kill_process_tree called: parent_pid=412, include_parent=False, pid=412",
    "[2025-10-01 10:01:10] Exit code: 0",
    "[2025-10-01 10:01:10 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=True)",
    '[2025-10-01 10:01:10] 127.0.0.1:5000 - "GET /get_model_info HTTP/1.1" 200 OK',
    "[2025-10-01 10:01:10] Receive: obj=GenerateReqInput(text='RuntimeError: in a prompt')",
    "[2025-10-01 10:01:10] Process group ready: 8 ranks",
], ids=["kill-tree-cleanup", "exit-0", "soft-watchdog", "warmup-200", "request-echo", "process-word"])
def test_near_misses_after_ready_stay_clean(line):
    assert _errors(HEAD + READY + line + "\n") == []


def test_a_request_traceback_after_ready_is_not_a_failed_launch():
    tb = ("Traceback (most recent call last):\n"
          f'  File "{SITE}/entrypoints/openai/serving_chat.py", line 10, in create\n'
          "    raise ValueError('bad request')\nValueError: bad request\n")
    assert _errors(HEAD + READY + tb) == []
    assert _errors(HEAD + tb) == ["crash-unrecognized"]  # before ready it is


def test_ctrl_c_and_the_shutdown_after_it_are_not_a_failure():
    text = (HEAD + READY + "Traceback (most recent call last):\n  File \"/x/sglang/launch_server.py\", line 1, in <module>\n"
            "KeyboardInterrupt\n[2025-10-01 10:05:00] kill_process_tree called: parent_pid=1, include_parent=True, pid=1\n")
    assert _errors(text) == []


def test_a_stall_in_capture_at_a_jit_build_is_a_hang():
    text = (HEAD + READY.split("\n")[0] + "\n"
            "[2025-10-01 10:00:45 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=7.00 GB\n"
            "2025-10-01 10:00:46,120 - INFO - flashinfer.jit: Loading JIT ops: batch_decode_with_kv_cache_dtype_q_bf16\n")
    f = _net(text)
    assert f is not None and "hung in CUDA graph capture" in f.explanation
    assert "Capture cuda graph begin" in f.evidence[0].text


def test_a_stall_measured_in_minutes_is_a_hang():
    text = (HEAD + "[2025-10-01 11:30:00 TP0] Using model weights format ['*.safetensors']\n")
    f = _net(text)
    assert f is not None and "minutes after weight loading began" in f.explanation


def test_an_excerpt_cut_at_the_capture_line_is_not_a_hang():
    text = (HEAD + READY.split("\n")[0] + "\n"
            "[2025-10-01 10:00:45 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=7.00 GB\n")
    assert _errors(text) == []


def test_a_warning_does_not_hide_a_crash():
    """A warning finding beside a crash leaves the launch an error (a last resort gives way to errors only)."""
    text = (HEAD + "[2025-10-01 10:00:40 TP0] max_total_num_tokens=1000, chunked_prefill_size=2048, "
            "max_prefill_tokens=16384, max_running_requests=1, context_len=32768, available_gpu_mem=1.29 GB\n"
            + "[2025-10-01 10:00:45 TP0] Capture cuda graph bs [1, 2, 4]\n" * 10
            + "[2025-10-01 10:00:50 TP0] RuntimeError: an error no rule knows\n")
    rep = _check(text)
    assert [f.rule for f in rep.findings if f.severity == "error"] == ["crash-unrecognized"]


def test_an_exception_no_rule_knows_leads_its_symptoms():
    """SIGQUIT and 'Initialization failed' are consequences: the crash net, quoting an exception, is the root
    and they follow from it."""
    text = (HEAD + "[2025-10-01 10:00:50 TP0] RuntimeError: an error no rule knows\n"
            "[2025-10-01 10:00:51] Received sigquit from a child process. It usually means the child failed.\n"
            "RuntimeError: Initialization failed. Please see the error messages above.\n")
    rep = _check(text)
    roots = [f for f in rep.findings if f.severity == "error" and not f.consequence_of]
    assert [f.rule for f in roots] == ["crash-unrecognized"]


def test_without_an_exception_the_crash_net_gives_way_to_a_symptom_rule():
    """A cut traceback says less than a rule naming where the cause is (another rank, the error above)."""
    text = CUT + "RuntimeError: Initialization failed. Please see the error messages above.\n"
    errors = _errors(text)
    assert errors and "crash-unrecognized" not in errors


def test_a_known_cause_takes_over_from_the_crash_net():
    text = HEAD + ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                   "capacity of 23.54 GiB of which 1.00 GiB is free.\n")
    assert "crash-unrecognized" not in [f.rule for f in _check(text).findings]


def test_a_traceback_header_behind_an_unknown_prefix_still_counts():
    text = HEAD + "worker-7 | 10:00:50.123 Traceback (most recent call last):\n"
    assert _errors(text) == ["crash-unrecognized"]


# libstdc++'s terminate handler and Rust's panic report (the router): the message line after the header is
# the exception the catalogs read.
TERMINATE = ("terminate called after throwing an instance of 'c10::AcceleratorError'\n"
             "  what():  CUDA error: uncorrectable ECC error encountered\n"
             "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
             "might be incorrect.\n")
PANIC_NEW = ("thread 'tokio-runtime-worker' panicked at src/routers/http/router.rs:118:14:\n"
             "called `Result::unwrap()` on an `Err` value: Os { code: 98, kind: AddrInUse, message: \"Address already "
             "in use\" }\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n")
PANIC_OLD = "thread 'main' panicked at 'failed to bind 0.0.0.0:30000', src/server.rs:301:10\n"


@pytest.mark.parametrize("text, exception", [
    (TERMINATE, "CUDA error: uncorrectable ECC error encountered"),
    (PANIC_NEW, "called `Result::unwrap()` on an `Err` value"),
    (PANIC_OLD, "failed to bind 0.0.0.0:30000"),
], ids=["cxx-terminate", "rust-panic", "rust-panic-before-1.73"])
def test_a_native_abort_is_a_failure_and_its_message_is_the_exception(text, exception):
    assert [f.rule for f in _check(HEAD + text).findings if f.severity == "error"], text
    signs = _signs(HEAD + text)
    assert [s.kind for s in signs][:1] == ["native"]
    assert any(s.kind == "exception" and s.text.startswith(exception) for s in signs), signs


def _signs(text: str) -> list:
    from sglang_doctor.facts.crash import CrashWatch
    from sglang_doctor.read.reader import iter_lines_from_text
    from sglang_doctor.read.records import segment

    watch = CrashWatch()
    for rec in segment(iter_lines_from_text(text)):
        watch.observe(rec, False)
    return watch.signs


def test_a_terminate_names_its_cuda_code():
    found = [f for f in _check(HEAD + TERMINATE).findings if f.rule in ("cuda-code-recognised", "gpu-hardware-error")]
    assert found and found[0].evidence[0].line in (4, 5)  # the terminate or its what() line


@pytest.mark.parametrize("line", [
    "  what():  CUDA error: uncorrectable ECC error encountered",  # a what() with no terminate before it
    "[2025-10-01 10:00:50] the thread 'worker' panicked at nothing, it says in a prompt",
], ids=["what-alone", "panic-words"])
def test_native_abort_near_misses_are_not_signs(line):
    assert _signs(line + "\n") == []


def test_the_block_path_sees_a_native_abort_in_a_big_log(tmp_path, rules):
    """The stage-one scanner carries the crash watch's patterns: a panic far into a big log still counts."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from genlog import serving_lines

    import random

    body = "".join(line + "\n" for line in serving_lines(random.Random(1), 40_000))
    log = tmp_path / "big.log"
    log.write_text(HEAD + READY + body + PANIC_NEW)
    fast = diagnose([str(log)], rules, Options(fast=True)).report
    slow = diagnose([str(log)], rules, Options(fast=False)).report
    errors = lambda r: [(f.rule, f.evidence[0].line) for f in r.findings if f.severity == "error"]
    assert errors(fast) == errors(slow) and errors(fast)


def test_a_driver_api_result_a_native_library_prints_is_a_sign():
    """torch_memory_saver.cpp prints the CUresult it aborts on; the crash watch counts it (and the
    catalog reads `result=2` as CUDA_ERROR_OUT_OF_MEMORY) whether or not a rule knows the library."""
    line = "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103"
    assert [s.kind for s in _signs(line + "\n")] == ["exception"]
    assert _signs("[2025-10-01 10:00:50] CUresult errors are logged at debug level\n") == []
