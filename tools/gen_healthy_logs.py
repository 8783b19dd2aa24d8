"""Regenerates the synthetic healthy logs in tests/data/healthy/ (one per release format; seeded, so stable)."""
import datetime as dt
import gzip
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "healthy"
OUT.mkdir(parents=True, exist_ok=True)


class Log:
    def __init__(self, start, ms=False):
        self.t = dt.datetime.fromisoformat(start)
        self.lines = []
        self.ms = ms

    def tick(self, s=0.0):
        self.t += dt.timedelta(seconds=s)

    def ts(self):
        s = self.t.strftime("%Y-%m-%d %H:%M:%S")
        if self.ms:
            s += ".%03d" % (self.t.microsecond // 1000)
        return s

    def l(self, msg, pre="", dt_s=0.0):
        self.tick(dt_s)
        self.lines.append(f"[{self.ts()}{pre}] {msg}")

    def raw(self, text):
        self.lines.extend(text.split("\n"))

    def uv(self, msg, dt_s=0.0):
        self.tick(dt_s)
        self.lines.append(f"[{self.ts()}] INFO:     {msg}")

    def text(self):
        return "\n".join(self.lines) + "\n"


def bar(desc, n, unit_s, fmt="{desc}: {p:3d}% Completed | {k}/{n} [{el}<{rem}, {rate}]"):
    parts = []
    for k in range(n + 1):
        p = int(100 * k / n)
        el = "%02d:%02d" % divmod(int(k * unit_s), 60)
        rem = "?" if k == 0 else "%02d:%02d" % divmod(int((n - k) * unit_s), 60)
        rate = "?it/s" if k == 0 else "%.2fs/it" % unit_s
        parts.append(fmt.format(desc=desc, p=p, k=k, n=n, el=el, rem=rem, rate=rate))
    return "\r".join(parts)


def capture_bar(n, mem0, mem1, with_bs=True, bs_list=None):
    parts = []
    for k in range(n + 1):
        mem = mem0 - (mem0 - mem1) * k / n
        blocks = "█" * int(40 * k / n) + " " * (40 - int(40 * k / n))
        if with_bs:
            bs = bs_list[max(0, n - k - 1)] if bs_list else 1
            desc = f"Capturing batches (bs={bs} avail_mem={mem:.2f} GB)"
        else:
            desc = f"Capturing batches (avail_mem={mem:.2f} GB)"
        rate = "?it/s" if k == 0 else "%.2fit/s" % (3.1 + k * 0.01)
        parts.append(f"{desc}: {int(100*k/n):3d}%|{blocks}| {k}/{n} [00:{k//4:02d}<00:{(n-k)//4:02d}, {rate}]")
    return "\r".join(parts)


def traffic(log, rnd, hours, pre, fmt, kv_total, decode_every=40, client="10.0.0.7",
            mamba=False, spec=False, graph_max=None, retract_burst_at=None, ctx_errors=()):
    """Hours of steady traffic. fmt: '0.4.6' | '0.4.10' | '0.5.5' | '0.5.10' | '0.5.14' | '0.5.23'."""
    end = log.t + dt.timedelta(hours=hours)
    running = 0
    step = 0
    errors = list(ctx_errors)
    while log.t < end:
        step += 1
        gap = rnd.expovariate(1 / 9.0)
        log.tick(gap)
        # a burst of requests
        nnew = rnd.randint(1, 6)
        if step % 23 == 0:
            log.uv(f'10.0.0.3:{rnd.randint(30000, 65000)} - "GET /health HTTP/1.1" 200 OK', dt_s=0.01)
        if step % 61 == 0:
            log.uv(f'10.0.0.3:{rnd.randint(30000, 65000)} - "GET /metrics HTTP/1.1" 200 OK', dt_s=0.01)
        if step == 50:
            log.uv(f'10.0.0.8:{rnd.randint(30000, 65000)} - "GET /favicon.ico HTTP/1.1" 404 Not Found', dt_s=0.01)
            log.tick(0.2)
            log.lines.append(f"[{log.ts()}] WARNING:  Invalid HTTP request received.")
        if step == 120:
            log.raw("Token indices sequence length is longer than the specified maximum sequence length for this model (33817 > 32768). Running this sequence through the model will result in indexing errors")
        for _ in range(nnew):
            port = rnd.randint(30000, 65000)
            log.uv(f'{client}:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK', dt_s=rnd.random() * 0.3)
        running = min(running + nnew, graph_max or 64)
        newtok = rnd.randint(40, 3800)
        cached = rnd.choice([0, 0, rnd.randint(10, 2000)])
        usage = min(0.93, 0.01 + running * 0.004 + rnd.random() * 0.05)
        if fmt == "0.4.6":
            msg = (f"Prefill batch. #new-seq: {nnew}, #new-token: {newtok}, #cached-token: {cached}, "
                   f"token usage: {usage:.2f}, #running-req: {running - nnew}, #queue-req: 0")
        elif fmt == "0.4.10":
            msg = (f"Prefill batch. #new-seq: {nnew}, #new-token: {newtok}, #cached-token: {cached}, "
                   f"token usage: {usage:.2f}, #running-req: {running - nnew}, #queue-req: 0, ")
        elif fmt == "0.5.5":
            msg = (f"Prefill batch, #new-seq: {nnew}, #new-token: {newtok}, #cached-token: {cached}, "
                   f"token usage: {usage:.2f}, #running-req: {running - nnew}, #queue-req: 0, ")
        elif fmt == "0.5.10":
            msg = (f"Prefill batch, #new-seq: {nnew}, #new-token: {newtok}, #cached-token: {cached}, "
                   f"token usage: {usage:.2f}, #running-req: {running - nnew}, #queue-req: 0, "
                   f"cuda graph: False, input throughput (token/s): {rnd.uniform(800, 9000):.2f}")
        else:
            tok = (f"full token usage: {usage:.2f}, mamba usage: {min(0.9, running/ 8):.2f}, "
                   if mamba else f"token usage: {usage:.2f}, ")
            rep = "#replay-token: 0, " if fmt == "0.5.23" else ""
            msg = (f"Prefill batch, #new-seq: {nnew}, #new-token: {newtok}, #cached-token: {cached}, {tok}"
                   f"#running-req: {running - nnew}, #queue-req: 0, #pending-token: 0, {rep}"
                   f"cuda graph: False, input throughput (token/s): {rnd.uniform(800, 9000):.2f}")
        log.l(msg, pre, dt_s=0.05)
        if errors and step % 97 == 0:
            inp, ctx = errors.pop(0)
            log.l(f"Error in request: The input ({inp} tokens) is longer than the model's context length ({ctx} tokens).",
                  dt_s=0.2)
            log.uv(f'{client}:{rnd.randint(30000, 65000)} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')
        if retract_burst_at is not None and step == retract_burst_at:
            tok_used = int(kv_total * 0.99)
            for i in range(3):
                log.l(_decode(fmt, running + 10, tok_used, 0.99, rnd, mamba, spec, queue=4 + i), pre, dt_s=0.9)
            log.l("KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_tokens_gained: 6144, "
                  "#new_token_ratio: 0.4512 -> 0.6078", pre, dt_s=0.3)
            log.l(_decode(fmt, running + 8, int(kv_total * 0.93), 0.93, rnd, mamba, spec, queue=6), pre, dt_s=0.9)
            log.l(_decode(fmt, running + 6, int(kv_total * 0.81), 0.81, rnd, mamba, spec, queue=0), pre, dt_s=0.9)
        for _ in range(rnd.randint(1, 5)):
            used = int(kv_total * usage)
            log.l(_decode(fmt, running, used, usage, rnd, mamba, spec), pre, dt_s=rnd.uniform(0.8, 2.5))
        running = max(0, running - rnd.randint(0, nnew + 1))
    return log


def _decode(fmt, running, used, usage, rnd, mamba, spec, queue=0):
    thr = running * rnd.uniform(28, 45)
    acc = f"accept len: {rnd.uniform(2.6, 3.4):.2f}, " if spec and fmt in ("0.4.6",) else ""
    if spec and fmt not in ("0.4.6",):
        acc = f"accept len: {rnd.uniform(2.6, 3.4):.2f}, accept rate: {rnd.uniform(0.62, 0.81):.2f}, "
    if fmt == "0.4.6":
        return (f"Decode batch. #running-req: {running}, #token: {used}, token usage: {usage:.2f}, {acc}"
                f"gen throughput (token/s): {thr:.2f}, #queue-req: {queue}")
    if fmt == "0.4.10":
        return (f"Decode batch. #running-req: {running}, #token: {used}, token usage: {usage:.2f}, {acc}"
                f"cuda graph: True, gen throughput (token/s): {thr:.2f}, #queue-req: {queue}, ")
    if fmt == "0.5.5":
        return (f"Decode batch, #running-req: {running}, #token: {used}, token usage: {usage:.2f}, {acc}"
                f"cuda graph: True, gen throughput (token/s): {thr:.2f}, #queue-req: {queue}, ")
    tok = (f"#full token: {used}, full token usage: {usage:.2f}, mamba num: {running}, mamba usage: {min(0.9, running/8):.2f}, "
           if mamba else f"#token: {used}, token usage: {usage:.2f}, ")
    return (f"Decode batch, #running-req: {running}, {tok}{acc}"
            f"cuda graph: True, gen throughput (token/s): {thr:.2f}, #queue-req: {queue}")


def uvicorn_start(log, port=30000, pid=1):
    log.uv(f"Started server process [{pid}]", dt_s=0.4)
    log.uv("Waiting for application startup.")
    log.uv("Application startup complete.")
    log.uv(f"Uvicorn running on http://0.0.0.0:{port} (Press CTRL+C to quit)")


def uvicorn_stop(log, pid=1):
    log.uv("Shutting down", dt_s=3)
    log.uv("Waiting for application shutdown.")
    log.uv("Application shutdown complete.")
    log.uv(f"Finished server process [{pid}]")


NCCL = """host-a:{pid}:{pid} [{r}] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>
host-a:{pid}:{pid} [{r}] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)
host-a:{pid}:{pid} [{r}] NCCL INFO NET/IB : No device found.
host-a:{pid}:{pid} [{r}] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>
host-a:{pid}:{pid} [{r}] NCCL INFO Using network Socket
host-a:{pid}:{pid} [{r}] NCCL INFO comm 0x5581c2a3f0a0 rank {r} nranks 2 cudaDev {r} nvmlDev {r} busId {bus}000 commId 0x7a1f3c09d2e4b6a1 - Init START
host-a:{pid}:{pid} [{r}] NCCL INFO Channel 00/0 : {r}[{r}] -> {o}[{o}] via P2P/CUMEM/read
host-a:{pid}:{pid} [{r}] NCCL INFO Connected all rings
host-a:{pid}:{pid} [{r}] NCCL INFO ncclCommInitRank comm 0x5581c2a3f0a0 rank {r} nranks 2 cudaDev {r} nvmlDev {r} busId {bus}000 commId 0x7a1f3c09d2e4b6a1 - Init COMPLETE"""


def nccl(log, pid, version="2.21.5+cuda12.4"):
    log.raw(f"NCCL version {version}")
    for r in (0, 1):
        log.raw(NCCL.format(pid=pid + r, r=r, o=1 - r, bus=("18", "2a")[r]))


# --------------------------------------------------------------------------- 0.4.6, 1 GPU, Llama-3.1-8B
def h_046():
    rnd = random.Random(46)
    log = Log("2025-05-12 08:01:13")
    log.raw("# cmd: docker run --gpus all --shm-size 32g -p 30000:30000 -v /models:/models lmsysorg/sglang:v0.4.6.post2-cu124 python3 -m sglang.launch_server --model-path /models/Llama-3.1-8B-Instruct --host 0.0.0.0 --port 30000")
    log.l("server_args=ServerArgs(model_path='/models/Llama-3.1-8B-Instruct', tokenizer_path='/models/Llama-3.1-8B-Instruct', tokenizer_mode='auto', skip_tokenizer_init=False, enable_tokenizer_batch_encode=False, load_format='auto', trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', quantization=None, quantization_param_path=None, context_length=None, device='cuda', served_model_name='/models/Llama-3.1-8B-Instruct', chat_template=None, completion_template=None, is_embedding=False, revision=None, host='0.0.0.0', port=30000, mem_fraction_static=0.88, max_running_requests=None, max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', schedule_conservativeness=1.0, cpu_offload_gb=0, page_size=1, tp_size=1, stream_interval=1, stream_output=False, random_seed=771214367, constrained_json_whitespace_pattern=None, watchdog_timeout=300, dist_timeout=None, download_dir=None, base_gpu_id=0, gpu_id_step=1, log_level='info', log_level_http=None, log_requests=False, log_requests_level=0, show_time_cost=False, enable_metrics=False, decode_log_interval=40, api_key=None, file_storage_path='sglang_storage', enable_cache_report=False, reasoning_parser=None, dp_size=1, load_balance_method='round_robin', ep_size=1, dist_init_addr=None, nnodes=1, node_rank=0, json_model_override_args='{}', lora_paths=None, max_loras_per_batch=8, lora_backend='triton', attention_backend=None, sampling_backend='flashinfer', grammar_backend='xgrammar', speculative_algorithm=None, speculative_draft_model_path=None, speculative_num_steps=None, speculative_eagle_topk=None, speculative_num_draft_tokens=None, speculative_accept_threshold_single=1.0, speculative_accept_threshold_acc=1.0, speculative_token_map=None, enable_double_sparsity=False, disable_radix_cache=False, disable_cuda_graph=False, disable_cuda_graph_padding=False, enable_nccl_nvls=False, disable_outlines_disk_cache=False, disable_custom_all_reduce=False, enable_multimodal=None, disable_overlap_schedule=False, enable_mixed_chunk=False, enable_dp_attention=False, enable_ep_moe=False, enable_deepep_moe=False, deepep_mode='auto', enable_torch_compile=False, torch_compile_max_bs=32, cuda_graph_max_bs=160, cuda_graph_bs=None, torchao_config='', enable_nan_detection=False, enable_p2p_check=False, triton_attention_reduce_in_fp32=False, triton_attention_num_kv_splits=8, num_continuous_decode_steps=1, delete_ckpt_after_loading=False, enable_memory_saver=False, allow_auto_truncate=False, enable_custom_logit_processor=False, tool_call_parser=None, enable_hierarchical_cache=False, hicache_ratio=2.0, enable_flashinfer_mla=False, enable_flashmla=False, flashinfer_mla_disable_ragged=False, warmups=None, n_share_experts_fusion=0, disable_chunked_prefix_cache=False, disable_fast_image_processor=False, debug_tensor_dump_output_folder=None, debug_tensor_dump_input_file=None, debug_tensor_dump_inject=False, disaggregation_mode='null', disaggregation_bootstrap_port=8998, disaggregation_transfer_backend='mooncake', disaggregation_ib_device=None)")
    log.l("Attention backend not set. Use flashinfer backend by default.", " TP0", dt_s=4.1)
    log.l("Init torch distributed begin.", " TP0")
    log.l("Init torch distributed ends. mem usage=0.00 GB", " TP0", dt_s=0.3)
    log.l("Load weight begin. avail mem=78.58 GB", " TP0", dt_s=0.2)
    log.raw(bar("Loading safetensors checkpoint shards", 4, 1.21))
    log.raw("")
    log.l("Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.48 GB, mem usage=15.10 GB.", " TP0", dt_s=5.2)
    log.l("KV Cache is allocated. #tokens: 433018, K size: 26.43 GB, V size: 26.43 GB", " TP0", dt_s=0.2)
    log.l("Memory pool end. avail mem=9.21 GB", " TP0")
    log.raw("2025-05-12 08:01:24,117 - INFO - flashinfer.jit: Prebuilt kernels not found, using JIT backend")
    log.l("Capture cuda graph begin. This can take up to several minutes. avail mem=8.58 GB", " TP0", dt_s=0.5)
    log.raw(capture_bar(23, 8.58, 8.03, with_bs=False)
            + "2025-05-12 08:01:25,021 - INFO - flashinfer.jit: Loading JIT ops: batch_decode_with_kv_cache_dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_qk_128_head_dim_vo_128_posenc_0_use_swa_False_use_logits_cap_False")
    log.raw("2025-05-12 08:01:25,044 - INFO - flashinfer.jit: Finished loading JIT ops: batch_decode_with_kv_cache_dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_qk_128_head_dim_vo_128_posenc_0_use_swa_False_use_logits_cap_False")
    log.l("Capture cuda graph end. Time elapsed: 7.11 s. avail mem=8.01 GB. mem usage=0.57 GB.", " TP0", dt_s=7.2)
    log.l("max_total_num_tokens=433018, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072", " TP0", dt_s=0.4)
    uvicorn_start(log)
    log.uv('127.0.0.1:41238 - "GET /get_model_info HTTP/1.1" 200 OK', dt_s=1.0)
    log.l("Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0", " TP0", dt_s=0.1)
    log.uv('127.0.0.1:41250 - "POST /generate HTTP/1.1" 200 OK', dt_s=0.4)
    log.l("The server is fired up and ready to roll!")
    traffic(log, rnd, 2.0, " TP0", "0.4.6", 433018, ctx_errors=[(140213, 131072)])
    uvicorn_stop(log)
    return log


# --------------------------------------------------------------------------- 0.4.10, TP2, GPTQ-Int4 72B, retractions
def h_0410():
    rnd = random.Random(410)
    log = Log("2025-08-04 13:22:40")
    log.raw("# cmd: python3 -m sglang.launch_server --model-path /models/Qwen2.5-72B-Instruct-GPTQ-Int4 --tp 2 --host 0.0.0.0 --port 30000 --mem-fraction-static 0.85 --context-length 32768")
    log.raw("/usr/local/lib/python3.10/dist-packages/transformers/utils/hub.py:105: FutureWarning: Using `TRANSFORMERS_CACHE` is deprecated and will be removed in v5 of Transformers. Use `HF_HOME` instead.\n  warnings.warn(")
    log.l("server_args=ServerArgs(model_path='/models/Qwen2.5-72B-Instruct-GPTQ-Int4', tokenizer_path='/models/Qwen2.5-72B-Instruct-GPTQ-Int4', tokenizer_mode='auto', skip_tokenizer_init=False, load_format='auto', model_loader_extra_config='{}', trust_remote_code=False, context_length=32768, is_embedding=False, enable_multimodal=None, revision=None, model_impl='auto', host='0.0.0.0', port=30000, skip_server_warmup=False, warmups=None, nccl_port=None, dtype='auto', quantization=None, quantization_param_path=None, kv_cache_dtype='auto', mem_fraction_static=0.85, max_running_requests=None, max_queued_requests=9223372036854775807, max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', schedule_conservativeness=1.0, page_size=1, hybrid_kvcache_ratio=None, swa_full_tokens_ratio=0.8, disable_hybrid_swa_memory=False, device='cuda', tp_size=2, pp_size=1, max_micro_batch_size=None, stream_interval=1, stream_output=False, random_seed=588213301, constrained_json_whitespace_pattern=None, watchdog_timeout=300, dist_timeout=None, download_dir=None, base_gpu_id=0, gpu_id_step=1, sleep_on_idle=False, log_level='info', log_level_http=None, log_requests=False, log_requests_level=2, crash_dump_folder=None, show_time_cost=False, enable_metrics=False, enable_metrics_for_all_schedulers=False, bucket_time_to_first_token=None, bucket_inter_token_latency=None, bucket_e2e_request_latency=None, collect_tokens_histogram=False, decode_log_interval=40, enable_request_time_stats_logging=False, kv_events_config=None, api_key=None, served_model_name='/models/Qwen2.5-72B-Instruct-GPTQ-Int4', chat_template=None, completion_template=None, file_storage_path='sglang_storage', enable_cache_report=False, reasoning_parser=None, tool_call_parser=None, dp_size=1, load_balance_method='round_robin', dist_init_addr=None, nnodes=1, node_rank=0, json_model_override_args='{}', preferred_sampling_params=None, enable_lora=None, max_lora_rank=None, lora_target_modules=None, lora_paths=None, max_loras_per_batch=8, lora_backend='triton', attention_backend=None, decode_attention_backend=None, prefill_attention_backend=None, sampling_backend='flashinfer', grammar_backend='xgrammar', mm_attention_backend=None, speculative_algorithm=None, speculative_draft_model_path=None, speculative_num_steps=None, speculative_eagle_topk=None, speculative_num_draft_tokens=None, ep_size=1, enable_ep_moe=False, enable_deepep_moe=False, enable_flashinfer_cutlass_moe=False, enable_flashinfer_trtllm_moe=False, enable_flashinfer_allreduce_fusion=False, deepep_mode='auto', enable_hierarchical_cache=False, hicache_ratio=2.0, hicache_size=0, hicache_write_policy='write_through_selective', hicache_io_backend='', hicache_storage_backend=None, enable_double_sparsity=False, disable_radix_cache=False, cuda_graph_max_bs=160, cuda_graph_bs=None, disable_cuda_graph=False, disable_cuda_graph_padding=False, enable_profile_cuda_graph=False, enable_nccl_nvls=False, enable_tokenizer_batch_encode=False, disable_outlines_disk_cache=False, disable_custom_all_reduce=False, enable_mscclpp=False, disable_overlap_schedule=False, enable_mixed_chunk=False, enable_dp_attention=False, enable_dp_lm_head=False, enable_two_batch_overlap=False, enable_torch_compile=False, torch_compile_max_bs=32, torchao_config='', enable_nan_detection=False, enable_p2p_check=False, triton_attention_reduce_in_fp32=False, triton_attention_num_kv_splits=8, num_continuous_decode_steps=1, delete_ckpt_after_loading=False, enable_memory_saver=False, allow_auto_truncate=False, enable_custom_logit_processor=False, flashinfer_mla_disable_ragged=False, disable_shared_experts_fusion=False, disable_chunked_prefix_cache=False, disable_fast_image_processor=False, enable_return_hidden_states=False, enable_triton_kernel_moe=False, debug_tensor_dump_output_folder=None, debug_tensor_dump_input_file=None, debug_tensor_dump_inject=False, debug_tensor_dump_prefill_only=False, disaggregation_mode='null', disaggregation_transfer_backend='mooncake', disaggregation_bootstrap_port=8998, disaggregation_decode_tp=None, disaggregation_decode_dp=None, disaggregation_prefill_pp=1, disaggregation_ib_device=None, num_reserved_decode_tokens=512, pdlb_url=None, custom_weight_loader=[], weight_loader_disable_mmap=False, enable_pdmux=False, sm_group_num=3)")
    log.l("Using default HuggingFace chat template with detected content format: string", dt_s=3.2)
    log.l("The model is convertible to gptq_marlin during runtime. Using gptq_marlin kernel.", " TP1", dt_s=1.4)
    log.l("The model is convertible to gptq_marlin during runtime. Using gptq_marlin kernel.", " TP0")
    log.l("Attention backend not explicitly specified. Use flashinfer backend by default.", " TP0", dt_s=0.1)
    log.l("Init torch distributed begin.", " TP0")
    log.l("Init torch distributed begin.", " TP1")
    log.raw("[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n[Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1")
    nccl(log, 415)
    log.raw("[rank0]:[W804 13:22:49.219771042 ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0 as device used by this process is currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect. You can pecify device_id in init_process_group() to force use of a particular device.")
    log.raw("[rank1]:[W804 13:22:49.220108116 ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 Rank 1]  using GPU 1 as device used by this process is currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect. You can pecify device_id in init_process_group() to force use of a particular device.")
    log.l("Ignore import error when loading sglang.srt.models.glm4v_moe: No module named 'transformers.models.glm4v_moe'", " TP0")
    log.l("Ignore import error when loading sglang.srt.models.glm4v_moe: No module named 'transformers.models.glm4v_moe'", " TP1")
    log.l("sglang is using nccl==2.21.5", " TP0", dt_s=0.6)
    log.l("Init torch distributed ends. mem usage=0.58 GB", " TP0", dt_s=1.1)
    log.l("Load weight begin. avail mem=78.30 GB", " TP0", dt_s=0.3)
    log.raw(bar("Loading safetensors checkpoint shards", 11, 2.9))
    log.raw("")
    log.l("Load weight end. type=Qwen2ForCausalLM, dtype=torch.float16, avail mem=58.91 GB, mem usage=19.39 GB.", " TP0", dt_s=33.0)
    log.l("KV Cache is allocated. #tokens: 384125, K size: 23.45 GB, V size: 23.45 GB", " TP0", dt_s=0.3)
    log.l("Memory pool end. avail mem=10.84 GB", " TP0")
    log.l("Capture cuda graph begin. This can take up to several minutes. avail mem=10.21 GB", " TP0", dt_s=0.6)
    bs = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160]
    log.l(f"Capture cuda graph bs {bs}", " TP0")
    log.raw(capture_bar(24, 10.21, 8.77, bs_list=bs))
    log.l("Registering 4512 cuda graph addresses", " TP0", dt_s=19.1)
    log.l("Capture cuda graph end. Time elapsed: 19.62 s. mem usage=1.44 GB. avail mem=8.77 GB.", " TP1", dt_s=0.2)
    log.l("Capture cuda graph end. Time elapsed: 19.65 s. mem usage=1.44 GB. avail mem=8.77 GB.", " TP0")
    log.l("max_total_num_tokens=384125, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=32768, available_gpu_mem=8.77 GB", " TP0", dt_s=0.4)
    uvicorn_start(log, pid=1)
    log.uv('127.0.0.1:51422 - "GET /get_model_info HTTP/1.1" 200 OK', dt_s=1.0)
    log.l("Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ", " TP0", dt_s=0.1)
    log.uv('127.0.0.1:51430 - "POST /generate HTTP/1.1" 200 OK', dt_s=0.5)
    log.l("The server is fired up and ready to roll!")
    log.raw("huggingface/tokenizers: The current process just got forked, after parallelism has already been used. Disabling parallelism to avoid deadlocks...\nTo disable this warning, you can either:\n\t- Avoid using `tokenizers` before the fork if possible\n\t- Explicitly set the environment variable TOKENIZERS_PARALLELISM=(true | false)")
    traffic(log, rnd, 3.0, " TP0", "0.4.10", 384125, retract_burst_at=180, graph_max=160)
    uvicorn_stop(log)
    log.raw("[rank0]:[W804 16:31:07.118023115 ProcessGroupNCCL.cpp:1479] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())")
    log.raw("[rank1]:[W804 16:31:07.118502347 ProcessGroupNCCL.cpp:1479] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())")
    return log


# --------------------------------------------------------------------------- 0.5.5, DP2 Qwen3-8B
def h_055():
    rnd = random.Random(55)
    log = Log("2025-11-20 02:10:05")
    log.raw("# cmd: docker run --gpus all --ipc=host -p 30000:30000 -v /models:/models lmsysorg/sglang:v0.5.5 python3 -m sglang.launch_server --model-path /models/Qwen3-8B --dp-size 2 --host 0.0.0.0 --port 30000 --reasoning-parser qwen3")
    log.l("server_args=ServerArgs(model_path='/models/Qwen3-8B', tokenizer_path='/models/Qwen3-8B', tokenizer_mode='auto', tokenizer_worker_num=1, skip_tokenizer_init=False, load_format='auto', model_loader_extra_config='{}', rl_quant_profile=None, trust_remote_code=False, context_length=None, is_embedding=False, enable_multimodal=None, revision=None, model_impl='auto', host='0.0.0.0', port=30000, grpc_mode=False, skip_server_warmup=False, warmups=None, nccl_port=None, checkpoint_engine_wait_weights_before_ready=False, dtype='auto', quantization=None, quantization_param_path=None, kv_cache_dtype='auto', enable_fp32_lm_head=False, modelopt_quant=None, modelopt_checkpoint_restore_path=None, modelopt_checkpoint_save_path=None, modelopt_export_path=None, quantize_and_serve=False, mem_fraction_static=0.871, max_running_requests=None, max_queued_requests=None, max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', enable_priority_scheduling=False, schedule_low_priority_values_first=False, priority_scheduling_preemption_threshold=10, schedule_conservativeness=1.0, page_size=1, hybrid_kvcache_ratio=None, swa_full_tokens_ratio=0.8, disable_hybrid_swa_memory=False, radix_eviction_policy='lru', device='cuda', tp_size=1, pp_size=1, pp_max_micro_batch_size=None, stream_interval=1, stream_output=False, random_seed=40871552, constrained_json_whitespace_pattern=None, constrained_json_disable_any_whitespace=False, watchdog_timeout=300, dist_timeout=None, download_dir=None, base_gpu_id=0, gpu_id_step=1, sleep_on_idle=False, log_level='info', log_level_http=None, log_requests=False, log_requests_level=2, crash_dump_folder=None, show_time_cost=False, enable_metrics=False, decode_log_interval=40, api_key=None, served_model_name='/models/Qwen3-8B', weight_version='default', chat_template=None, completion_template=None, file_storage_path='sglang_storage', enable_cache_report=False, reasoning_parser='qwen3', tool_call_parser=None, tool_server=None, sampling_defaults='model', dp_size=2, load_balance_method='round_robin', load_watch_interval=0.1, prefill_round_robin_balance=False, dist_init_addr=None, nnodes=1, node_rank=0, json_model_override_args='{}', preferred_sampling_params=None, enable_lora=None, max_lora_rank=None, lora_target_modules=None, lora_paths=None, max_loaded_loras=None, max_loras_per_batch=8, lora_eviction_policy='lru', lora_backend='csgmv', max_lora_chunk_size=16, attention_backend='flashinfer', decode_attention_backend=None, prefill_attention_backend=None, sampling_backend='flashinfer', grammar_backend='xgrammar', mm_attention_backend=None, speculative_algorithm=None, ep_size=1, moe_a2a_backend='none', moe_runner_backend='auto', enable_hierarchical_cache=False, enable_double_sparsity=False, mamba_ssm_dtype='float32', max_mamba_cache_size=None, mamba_full_memory_ratio=0.9, disable_radix_cache=False, cuda_graph_max_bs=256, cuda_graph_bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256], disable_cuda_graph=False, disable_cuda_graph_padding=False, enable_profile_cuda_graph=False, enable_cudagraph_gc=False, enable_nccl_nvls=False, enable_symm_mem=False, disable_flashinfer_cutlass_moe_fp4_allgather=False, enable_tokenizer_batch_encode=False, disable_outlines_disk_cache=False, disable_custom_all_reduce=False, enable_mscclpp=False, enable_torch_symm_mem=False, disable_overlap_schedule=False, enable_mixed_chunk=False, enable_dp_attention=False, enable_dp_lm_head=False, enable_two_batch_overlap=False, enable_single_batch_overlap=False, tbo_token_distribution_threshold=0.48, enable_torch_compile=False, enable_piecewise_cuda_graph=False, torch_compile_max_bs=32, allow_auto_truncate=False, disaggregation_mode='null')")
    log.l("Using default HuggingFace chat template with detected content format: string", dt_s=2.8)
    for d in (0, 1):
        log.l("Init torch distributed begin.", f" DP{d}", dt_s=1.9)
    for d in (0, 1):
        log.l("Init torch distributed ends. mem usage=0.00 GB", f" DP{d}", dt_s=0.4)
    for d in (0, 1):
        log.l("Load weight begin. avail mem=78.68 GB", f" DP{d}", dt_s=0.2)
    log.raw(bar("Loading safetensors checkpoint shards", 5, 0.83))
    log.raw("")
    for d in (0, 1):
        log.l("Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=63.31 GB, mem usage=15.37 GB.", f" DP{d}", dt_s=4.4)
    for d in (0, 1):
        log.l("Using KV cache dtype: torch.bfloat16", f" DP{d}", dt_s=0.1)
        log.l("KV Cache is allocated. #tokens: 395214, K size: 27.14 GB, V size: 27.14 GB", f" DP{d}", dt_s=0.1)
        log.l("Memory pool end. avail mem=8.04 GB", f" DP{d}")
    log.raw("2025-11-20 02:10:23,412 - INFO - flashinfer.jit: Loading JIT ops: batch_prefill_with_kv_cache_dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_qk_128_head_dim_vo_128_posenc_0_use_swa_False_use_logits_cap_False_f16qk_False")
    log.raw("2025-11-20 02:10:23,475 - INFO - flashinfer.jit: Finished loading JIT ops: batch_prefill_with_kv_cache_dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_qk_128_head_dim_vo_128_posenc_0_use_swa_False_use_logits_cap_False_f16qk_False")
    for d in (0, 1):
        log.l("Capture cuda graph begin. This can take up to several minutes. avail mem=7.41 GB", f" DP{d}", dt_s=0.3)
    log.raw(capture_bar(36, 7.41, 6.52, bs_list=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256]))
    for d in (0, 1):
        log.l("Capture cuda graph end. Time elapsed: 12.03 s. mem usage=0.89 GB. avail mem=6.52 GB.", f" DP{d}", dt_s=12.1)
    for d in (0, 1):
        log.l("max_total_num_tokens=395214, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=40960, available_gpu_mem=6.52 GB", f" DP{d}", dt_s=0.2)
    uvicorn_start(log, pid=1)
    log.uv('127.0.0.1:58852 - "GET /get_model_info HTTP/1.1" 200 OK', dt_s=1.0)
    log.l("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ", " DP0", dt_s=0.1)
    log.uv('127.0.0.1:58860 - "POST /generate HTTP/1.1" 200 OK', dt_s=0.4)
    log.l("The server is fired up and ready to roll!")
    t0 = log.t
    traffic(log, rnd, 1.5, " DP0", "0.5.5", 395214)
    a = log.lines
    log2 = Log(t0.isoformat(sep=" "))
    traffic(log2, random.Random(56), 1.5, " DP1", "0.5.5", 395214)
    # interleave the two replicas' traffic by time
    body_a = [x for x in a if x.startswith("[") and x[1:20] >= t0.strftime("%Y-%m-%d %H:%M:%S")]
    head = a[:len(a) - len(body_a)]
    body = sorted(body_a + log2.lines, key=lambda s: s[1:20])
    log.lines = head + body
    log.t = max(log.t, log2.t)
    uvicorn_stop(log)
    return log


# --------------------------------------------------------------------------- 0.5.10, AWQ on RTX 4090
def h_0510():
    rnd = random.Random(510)
    log = Log("2026-02-09 19:44:02", ms=True)
    log.raw("# cmd: SGLANG_LOG_MS=1 python3 -m sglang.launch_server --model-path /models/Qwen2.5-14B-Instruct-AWQ --host 0.0.0.0 --port 30000 --context-length 16384 --mem-fraction-static 0.88")
    log.raw("/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is deprecated. Please install nvidia-ml-py instead. If you did not install pynvml directly, please report this to the maintainers of the package that installed pynvml for you.\n  import pynvml  # type: ignore[import]")
    log.l("server_args=ServerArgs(model_path='/models/Qwen2.5-14B-Instruct-AWQ', tokenizer_path='/models/Qwen2.5-14B-Instruct-AWQ', tokenizer_mode='auto', tokenizer_worker_num=1, skip_tokenizer_init=False, load_format='auto', model_loader_extra_config='{}', trust_remote_code=False, context_length=16384, is_embedding=False, enable_multimodal=None, revision=None, model_impl='auto', host='0.0.0.0', port=30000, skip_server_warmup=False, warmups=None, nccl_port=None, dtype='auto', quantization=None, quantization_param_path=None, kv_cache_dtype='auto', enable_fp32_lm_head=False, mem_fraction_static=0.88, max_running_requests=None, max_queued_requests=None, max_total_tokens=None, chunked_prefill_size=2048, max_prefill_tokens=16384, schedule_policy='fcfs', schedule_conservativeness=1.0, page_size=1, device='cuda', tp_size=1, pp_size=1, stream_interval=1, stream_output=False, random_seed=93120044, watchdog_timeout=300, dist_timeout=None, download_dir=None, base_gpu_id=0, gpu_id_step=1, log_level='info', log_requests=False, decode_log_interval=40, api_key=None, served_model_name='/models/Qwen2.5-14B-Instruct-AWQ', chat_template=None, reasoning_parser=None, tool_call_parser=None, dp_size=1, load_balance_method='round_robin', dist_init_addr=None, nnodes=1, node_rank=0, json_model_override_args='{}', enable_lora=None, attention_backend='flashinfer', decode_attention_backend=None, prefill_attention_backend=None, sampling_backend='flashinfer', grammar_backend='xgrammar', speculative_algorithm=None, ep_size=1, disable_radix_cache=False, cuda_graph_max_bs=24, cuda_graph_bs=[1, 2, 4, 8, 12, 16, 24], disable_cuda_graph=False, disable_cuda_graph_padding=False, enable_piecewise_cuda_graph=False, disable_custom_all_reduce=False, disable_overlap_schedule=False, enable_mixed_chunk=False, enable_dp_attention=False, enable_torch_compile=False, allow_auto_truncate=False, disaggregation_mode='null')")
    log.l("Using default HuggingFace chat template with detected content format: string", dt_s=2.6)
    log.l("The model is convertible to awq_marlin during runtime. Using awq_marlin kernel.", dt_s=1.2)
    log.l("Init torch distributed begin.", dt_s=0.2)
    log.l("Init torch distributed ends. elapsed=0.41 s, mem usage=0.00 GB", dt_s=0.4)
    log.l("Load weight begin. avail mem=23.12 GB", dt_s=0.3)
    log.raw(bar("Loading safetensors checkpoint shards", 3, 1.9))
    log.raw("")
    log.l("Load weight end. elapsed=6.02 s, type=Qwen2ForCausalLM, quant=awq, bits=4, avail mem=13.41 GB, mem usage=9.71 GB.", dt_s=6.0)
    log.l("Using KV cache dtype: torch.float16", dt_s=0.1)
    log.l("KV Cache is allocated. #tokens: 58720, K size: 5.38 GB, V size: 5.38 GB", dt_s=0.1)
    log.l("Memory pool end. avail mem=2.37 GB")
    log.l("Capture cuda graph begin. This can take up to several minutes. avail mem=2.31 GB", dt_s=0.4)
    log.l("Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24]")
    log.raw(capture_bar(7, 2.31, 2.02, bs_list=[1, 2, 4, 8, 12, 16, 24]))
    log.l("Capture cuda graph end. Time elapsed: 3.12 s. mem usage=0.29 GB. avail mem=2.02 GB.", dt_s=3.2)
    log.l("max_total_num_tokens=58720, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=24, context_len=16384, available_gpu_mem=2.02 GB", dt_s=0.3)
    uvicorn_start(log, pid=2211)
    log.uv('127.0.0.1:33180 - "GET /model_info HTTP/1.1" 200 OK', dt_s=1.0)
    log.l("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, cuda graph: False, input throughput (token/s): 0.00", dt_s=0.1)
    log.uv('127.0.0.1:33190 - "POST /generate HTTP/1.1" 200 OK', dt_s=0.3)
    log.l("The server is fired up and ready to roll!")
    traffic(log, rnd, 1.0, "", "0.5.10", 58720, graph_max=24, client="127.0.0.1",
            ctx_errors=[(17210, 16384), (23988, 16384)])
    return log


# --------------------------------------------------------------------------- 0.5.14, hybrid Qwen3.6-27B AWQ on 24 GB
def h_0514_hybrid():
    rnd = random.Random(5141)
    log = Log("2026-05-03 10:02:11")
    log.raw("# cmd: docker run --gpus all --shm-size 16g -p 30000:30000 -v /models:/models lmsysorg/sglang:v0.5.14 python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B-AWQ-INT4 --host 0.0.0.0 --port 30000 --mem-fraction-static 0.92 --context-length 16384 --cuda-graph-max-bs-decode 8 --dtype bfloat16")
    log.l("Attention backend not specified. Use flashinfer backend by default.")
    log.l("server_args=ServerArgs(model_path='/models/Qwen3.6-27B-AWQ-INT4', tokenizer_path='/models/Qwen3.6-27B-AWQ-INT4', tokenizer_mode='auto', skip_tokenizer_init=False, load_format='auto', trust_remote_code=False, context_length=16384, is_embedding=False, revision=None, dtype='bfloat16', quantization=None, kv_cache_dtype='auto', host='0.0.0.0', port=30000, mem_fraction_static=0.92, max_running_requests=None, max_total_tokens=None, chunked_prefill_size=2048, max_prefill_tokens=16384, schedule_policy='fcfs', page_size=1, tp_size=1, pp_size=1, dp_size=1, ep_size=1, attention_backend='flashinfer', sampling_backend='flashinfer', grammar_backend='xgrammar', speculative_algorithm=None, disable_radix_cache=False, max_mamba_cache_size=None, mamba_full_memory_ratio=0.9, mamba_ssm_dtype='float32', mamba_radix_cache_strategy='auto', disable_overlap_schedule=False, cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=8, bs=[1, 2, 4, 8], tc_compiler='eager'), prefill=PhaseConfig(backend='disabled', max_bs=None, bs=None, tc_compiler='eager')), enable_torch_compile=False, watchdog_timeout=300, decode_log_interval=40, log_level='info', api_key=None, served_model_name='/models/Qwen3.6-27B-AWQ-INT4', reasoning_parser=None, tool_call_parser=None, allow_auto_truncate=False)", dt_s=0.3)
    log.l("Disable prefill CUDA graph because cuda_graph_config resolved prefill.backend='disabled'.", dt_s=5.8)
    log.l("Init torch distributed begin.", dt_s=0.3)
    log.l("Init torch distributed ends. elapsed=0.58 s, mem usage=0.09 GB", dt_s=0.6)
    log.l("Load weight begin. avail mem=23.21 GB", dt_s=0.4)
    log.l("Acceleration for non-quantized schemes is not supported by Compressed Tensors. Falling back to UnquantizedLinearMethod")
    log.raw(bar("Loading safetensors checkpoint shards", 5, 2.45))
    log.raw("")
    log.l("Load weight end. elapsed=13.12 s, type=Qwen3_5ForConditionalGeneration, quant=compressed-tensors, avail mem=4.16 GB, mem usage=19.05 GB.", dt_s=13.1)
    log.l("Mamba Cache is allocated. max_mamba_cache_size: 7, conv_state size: 0.04GB, ssm_state size: 0.92GB ", dt_s=0.1)
    log.l("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 21482, K size: 0.66 GB, V size: 0.66 GB")
    log.l("Memory pool end. avail mem=1.56 GB")
    log.l("Capture target decode CUDA graph begin. backend=full, num_tokens_per_bs=1, bs=[1, 2, 4, 8], avail mem=1.50 GB", dt_s=0.6)
    log.raw(capture_bar(4, 1.50, 1.29, bs_list=[1, 2, 4, 8]))
    log.l("Capture target decode CUDA graph end. elapsed=4.86 s, mem usage=0.21 GB, avail mem=1.29 GB.", dt_s=4.9)
    log.l("max_total_num_tokens=21482, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=1, context_len=16384, available_gpu_mem=1.29 GB", dt_s=0.2)
    uvicorn_start(log)
    log.l("Using default HuggingFace chat template with detected content format: openai")
    log.uv('127.0.0.1:40522 - "GET /model_info HTTP/1.1" 200 OK', dt_s=1.0)
    log.l("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, full token usage: 0.00, mamba usage: 0.14, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00", dt_s=0.1)
    log.uv('127.0.0.1:40530 - "POST /generate HTTP/1.1" 200 OK', dt_s=0.4)
    log.l("The server is fired up and ready to roll!")
    traffic(log, rnd, 1.0, "", "0.5.14", 21482, mamba=True, graph_max=1, client="172.17.0.1")
    log.raw("^C")
    uvicorn_stop(log)
    log.l("kill_process_tree called: parent_pid=1, include_parent=False, pid=1")
    return log


# --------------------------------------------------------------------------- 0.5.14, EAGLE3 speculative on H100
def h_0514_eagle():
    rnd = random.Random(5142)
    log = Log("2026-04-11 06:30:52")
    log.raw("# cmd: python3 -m sglang.launch_server --model-path /models/Llama-3.1-8B-Instruct --speculative-algorithm EAGLE3 --speculative-draft-model-path /models/sglang-EAGLE3-LLaMA3.1-Instruct-8B --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --host 0.0.0.0 --port 30000")
    log.l("Attention backend not specified. Use fa3 backend by default.")
    log.l("Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.")
    log.l("server_args=ServerArgs(model_path='/models/Llama-3.1-8B-Instruct', tokenizer_path='/models/Llama-3.1-8B-Instruct', tokenizer_mode='auto', load_format='auto', trust_remote_code=False, context_length=None, dtype='auto', quantization=None, kv_cache_dtype='auto', host='0.0.0.0', port=30000, mem_fraction_static=0.79, max_running_requests=48, max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, page_size=1, tp_size=1, dp_size=1, attention_backend='fa3', sampling_backend='flashinfer', speculative_algorithm='EAGLE3', speculative_draft_model_path='/models/sglang-EAGLE3-LLaMA3.1-Instruct-8B', speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, disable_overlap_schedule=False, cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=48, bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48], tc_compiler='eager'), prefill=PhaseConfig(backend='disabled', max_bs=None, bs=None, tc_compiler='eager')), watchdog_timeout=300, decode_log_interval=40, log_level='info', api_key=None, allow_auto_truncate=False)", dt_s=0.2)
    log.l("Init torch distributed begin.", dt_s=5.1)
    log.l("Init torch distributed ends. elapsed=0.33 s, mem usage=0.00 GB", dt_s=0.3)
    log.l("Load weight begin. avail mem=78.69 GB", dt_s=0.2)
    log.raw(bar("Loading safetensors checkpoint shards", 4, 0.95))
    log.raw("")
    log.l("Load weight end. elapsed=4.11 s, type=LlamaForCausalLM, avail mem=63.58 GB, mem usage=15.11 GB.", dt_s=4.1)
    log.l("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 407891, K size: 24.90 GB, V size: 24.90 GB", dt_s=0.2)
    log.l("Memory pool end. avail mem=13.48 GB")
    log.l("Capture target verify CUDA graph begin. backend=full, num_tokens_per_bs=4, bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48], avail mem=13.40 GB", dt_s=0.5)
    log.raw(capture_bar(10, 13.40, 12.88, bs_list=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48]))
    log.l("Capture target verify CUDA graph end. elapsed=6.01 s, mem usage=0.52 GB, avail mem=12.88 GB.", dt_s=6.0)
    log.l("Load weight begin. avail mem=12.88 GB", dt_s=0.2)
    log.raw(bar("Loading pt checkpoint shards", 1, 0.8))
    log.raw("")
    log.l("Load weight end. elapsed=0.92 s, type=LlamaForCausalLMEagle3, avail mem=12.09 GB, mem usage=0.79 GB.", dt_s=0.9)
    log.l("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 407891, K size: 0.78 GB, V size: 0.78 GB", dt_s=0.1)
    log.l("Memory pool end. avail mem=10.51 GB")
    log.l("Capture draft decode CUDA graph begin. backend=full, num_tokens_per_bs=1, bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48], avail mem=10.48 GB", dt_s=0.3)
    log.l("Capture draft decode CUDA graph end. elapsed=3.88 s, mem usage=0.31 GB, avail mem=10.17 GB.", dt_s=3.9)
    log.l("Capture draft extend CUDA graph begin. backend=full, num_tokens_per_bs=4, bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48], avail mem=10.17 GB", dt_s=0.1)
    log.l("Capture draft extend CUDA graph end. elapsed=3.02 s, mem usage=0.22 GB, avail mem=9.95 GB.", dt_s=3.0)
    log.l("max_total_num_tokens=407891, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, context_len=131072, available_gpu_mem=9.95 GB", dt_s=0.2)
    uvicorn_start(log, pid=87)
    log.l("Using default HuggingFace chat template with detected content format: string")
    log.uv('127.0.0.1:35500 - "GET /model_info HTTP/1.1" 200 OK', dt_s=1.0)
    log.l("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00", dt_s=0.1)
    log.uv('127.0.0.1:35506 - "POST /generate HTTP/1.1" 200 OK', dt_s=0.2)
    log.l("The server is fired up and ready to roll!")
    traffic(log, rnd, 2.0, "", "0.5.14", 407891, spec=True, graph_max=48)
    return log


# --------------------------------------------------------------------------- 0.5.23, TP2 MoE, dict server_args
def h_0523_tp2():
    rnd = random.Random(523)
    log = Log("2026-09-02 11:58:30")
    log.raw("# cmd: docker run --gpus all --ipc=host -p 30000:30000 -v /models:/models lmsysorg/sglang:v0.5.23 sglang serve --model-path /models/Qwen3-30B-A3B-Instruct-2507 --tp-size 2 --host 0.0.0.0 --port 30000 --tool-call-parser qwen3_coder")
    log.l("Attention backend not specified. Use fa3 backend by default.")
    log.l("server_args={'model_path': '/models/Qwen3-30B-A3B-Instruct-2507', 'tokenizer_path': '/models/Qwen3-30B-A3B-Instruct-2507', 'tokenizer_mode': 'auto', 'tokenizer_backend': 'huggingface', 'tokenizer_worker_num': 1, 'detokenizer_worker_num': 1, 'skip_tokenizer_init': False, 'load_format': 'auto', 'model_loader_extra_config': '{}', 'trust_remote_code': False, 'context_length': None, 'is_embedding': False, 'enable_multimodal': None, 'revision': None, 'model_impl': 'auto', 'model_config_parser': 'auto', 'json_model_override_args': '{}', 'dtype': 'auto', 'quantization': None, 'quantization_param_path': None, 'kv_cache_dtype': 'auto', 'mem_fraction_static': 0.836, 'max_running_requests': None, 'max_queued_requests': None, 'max_total_tokens': None, 'chunked_prefill_size': 8192, 'max_prefill_tokens': 16384, 'schedule_policy': 'fcfs', 'page_size': 1, 'host': '0.0.0.0', 'port': 30000, 'tp_size': 2, 'pp_size': 1, 'dp_size': 1, 'attn_dp_size': 1, 'enable_dp_attention': False, 'ep_size': 1, 'nnodes': 1, 'node_rank': 0, 'dist_init_addr': None, 'attention_backend': 'fa3', 'sampling_backend': 'flashinfer', 'grammar_backend': 'xgrammar', 'speculative_algorithm': None, 'disable_radix_cache': False, 'disable_overlap_schedule': False, 'cuda_graph_config': {'decode': {'backend': 'full', 'max_bs': 256, 'bs': [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256], 'tc_compiler': 'eager'}, 'prefill': {'backend': 'disabled', 'max_bs': None, 'bs': None, 'tc_compiler': 'eager'}}, 'watchdog_timeout': 300, 'dist_timeout': None, 'log_level': 'info', 'decode_log_interval': 40, 'api_key': None, 'served_model_name': '/models/Qwen3-30B-A3B-Instruct-2507', 'reasoning_parser': None, 'tool_call_parser': 'qwen3_coder', 'allow_auto_truncate': False}", dt_s=0.4)
    log.raw("/usr/local/lib/python3.12/dist-packages/torch/backends/__init__.py:46: UserWarning: Please use the new API settings to control TF32 behavior, such as torch.backends.cudnn.conv.fp32_precision = 'tf32' or torch.backends.cuda.matmul.fp32_precision = 'ieee'. Old settings, e.g, torch.backends.cuda.matmul.allow_tf32 = True, torch.backends.cudnn.allow_tf32 = True, allowTF32CuDNN() and allowTF32CuBLAS() will be deprecated after Pytorch 2.9. Please see https://pytorch.org/docs/main/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices (Triggered internally at /pytorch/aten/src/ATen/Context.cpp:80.)\n  _C._set_float32_matmul_precision(precision)")
    for r in (0, 1):
        log.l("Init parallel begin.", f" TP{r}", dt_s=3.2)
    nccl(log, 302, version="2.27.7+cuda12.9")
    for r in (0, 1):
        log.l("Init parallel ends. elapsed=1.12 s", f" TP{r}", dt_s=1.1)
    log.l("Memory baseline taken. mem usage=0.71 GB", " TP0")
    log.l("Load weight begin. avail mem=78.04 GB", " TP0", dt_s=0.2)
    log.raw(bar("Loading safetensors checkpoint shards", 16, 0.61))
    log.raw("")
    log.l("Load weight end. elapsed=10.02 s, type=Qwen3MoeForCausalLM, avail mem=49.41 GB, mem usage=28.63 GB.", " TP0", dt_s=10.0)
    log.l("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1396284, K size: 31.96 GB, V size: 31.96 GB", " TP0", dt_s=0.2)
    log.l("Memory pool end. avail mem=10.22 GB", " TP0")
    log.l("Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=9.61 GB", " TP0", dt_s=0.6)
    bs = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256]
    log.raw(capture_bar(36, 9.61, 8.44, bs_list=bs))
    log.l(f"Capture target decode CUDA graph end. bs={bs}, elapsed=21.40 s, mem usage=1.17 GB, avail mem=8.44 GB.", " TP0", dt_s=21.4)
    log.l("max_total_num_tokens=1396284, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=262144, available_gpu_mem=8.44 GB", " TP0", dt_s=0.3)
    log.l("Engine startup timings (s): load_weight=10.02, kv_cache_allocation=0.31, scheduler_e2e=38.77, cuda_graph={decode=21.40}, tokenizer_e2e=2.05")
    uvicorn_start(log)
    log.l("Using default HuggingFace chat template with detected content format: string")
    log.uv('127.0.0.1:49812 - "GET /model_info HTTP/1.1" 200 OK', dt_s=1.0)
    log.l("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, #replay-token: 0, cuda graph: False, input throughput (token/s): 0.00", " TP0", dt_s=0.1)
    log.uv('127.0.0.1:49826 - "POST /generate HTTP/1.1" 200 OK', dt_s=0.3)
    log.l("The server is fired up and ready to roll!")
    traffic(log, rnd, 4.0, " TP0", "0.5.23", 1396284, graph_max=256, retract_burst_at=None)
    uvicorn_stop(log)
    log.l("kill_process_tree called: parent_pid=1, include_parent=False, pid=1")
    log.raw("[rank1]:[W902 16:02:11.502118364 ProcessGroupNCCL.cpp:1538] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())")
    return log


# --------------------------------------------------------------------------- 0.5.23, 1 GPU, ms timestamps, deprecated flag, client 400s
def h_0523_single():
    rnd = random.Random(5231)
    log = Log("2026-09-14 21:03:07", ms=True)
    log.raw("# cmd: SGLANG_LOG_MS=1 sglang serve --model-path /models/Llama-3.2-3B-Instruct --host 0.0.0.0 --port 8000 --context-length 8192 --disable-cuda-graph-padding")
    log.raw("\x1b[1;33m'--disable-cuda-graph-padding' is deprecated and will be removed in a future release. Use '--cuda-graph-config' instead.\x1b[0m")
    log.l("Attention backend not specified. Use fa3 backend by default.")
    log.l("server_args={'model_path': '/models/Llama-3.2-3B-Instruct', 'tokenizer_path': '/models/Llama-3.2-3B-Instruct', 'tokenizer_mode': 'auto', 'skip_tokenizer_init': False, 'load_format': 'auto', 'trust_remote_code': False, 'context_length': 8192, 'is_embedding': False, 'dtype': 'auto', 'quantization': None, 'kv_cache_dtype': 'auto', 'mem_fraction_static': 0.846, 'max_running_requests': None, 'max_total_tokens': None, 'chunked_prefill_size': 4096, 'max_prefill_tokens': 16384, 'host': '0.0.0.0', 'port': 8000, 'tp_size': 1, 'pp_size': 1, 'dp_size': 1, 'attn_dp_size': 1, 'ep_size': 1, 'attention_backend': 'fa3', 'sampling_backend': 'flashinfer', 'speculative_algorithm': None, 'disable_radix_cache': False, 'cuda_graph_config': {'decode': {'backend': 'full', 'max_bs': 48, 'bs': [1, 2, 4, 8, 12, 16, 24, 32, 40, 48], 'tc_compiler': 'eager'}, 'prefill': {'backend': 'disabled', 'max_bs': None, 'bs': None, 'tc_compiler': 'eager'}}, 'watchdog_timeout': 300, 'log_level': 'info', 'decode_log_interval': 40, 'api_key': None, 'allow_auto_truncate': False}", dt_s=0.3)
    log.raw("`torch_dtype` is deprecated! Use `dtype` instead!")
    log.l("Init parallel begin.", dt_s=3.0)
    log.l("Init parallel ends. elapsed=0.21 s", dt_s=0.2)
    log.l("Memory baseline taken. mem usage=0.00 GB")
    log.l("Load weight begin. avail mem=21.72 GB", dt_s=0.1)
    log.raw(bar("Loading safetensors checkpoint shards", 2, 1.1))
    log.raw("")
    log.l("Load weight end. elapsed=2.38 s, type=LlamaForCausalLM, avail mem=15.55 GB, mem usage=6.17 GB.", dt_s=2.4)
    log.l("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 111232, K size: 5.94 GB, V size: 5.94 GB", dt_s=0.1)
    log.l("Memory pool end. avail mem=3.54 GB")
    log.l("Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=3.48 GB", dt_s=0.3)
    log.raw(capture_bar(10, 3.48, 3.21, bs_list=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48]))
    log.l("Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48], elapsed=4.10 s, mem usage=0.27 GB, avail mem=3.21 GB.", dt_s=4.1)
    log.l("max_total_num_tokens=111232, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=48, context_len=8192, available_gpu_mem=3.21 GB", dt_s=0.2)
    log.l("Engine startup timings (s): load_weight=2.38, kv_cache_allocation=0.12, scheduler_e2e=11.62, cuda_graph={decode=4.10}, tokenizer_e2e=1.31")
    uvicorn_start(log, port=8000, pid=412)
    log.l("Using default HuggingFace chat template with detected content format: string")
    log.uv('127.0.0.1:52210 - "GET /model_info HTTP/1.1" 200 OK', dt_s=1.0)
    log.l("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, #replay-token: 0, cuda graph: False, input throughput (token/s): 0.00", dt_s=0.1)
    log.uv('127.0.0.1:52214 - "POST /generate HTTP/1.1" 200 OK', dt_s=0.2)
    log.l("The server is fired up and ready to roll!")
    traffic(log, rnd, 1.5, "", "0.5.23", 111232, graph_max=48, client="10.0.0.9",
            ctx_errors=[(9012, 8192), (12890, 8192), (8231, 8192)])
    uvicorn_stop(log, pid=412)
    log.l("kill_process_tree called: parent_pid=412, include_parent=False, pid=412")
    return log


GEN = {
    "0.4.6-llama8b-1gpu.log": h_046,
    "0.4.10-qwen72b-gptq-tp2-retract.log.gz": h_0410,
    "0.5.5-qwen3-8b-dp2.log.gz": h_055,
    "0.5.10-qwen14b-awq-4090.log": h_0510,
    "0.5.14-qwen3.6-hybrid-24gb.log": h_0514_hybrid,
    "0.5.14-llama8b-eagle3.log": h_0514_eagle,
    "0.5.23-qwen3-moe-tp2.log.gz": h_0523_tp2,
    "0.5.23-llama3b-ms-client-errors.log": h_0523_single,
}

if __name__ == "__main__":
    for name, fn in GEN.items():
        text = fn().text()
        p = OUT / name
        if name.endswith(".gz"):
            with gzip.open(p, "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            p.write_text(text, encoding="utf-8")
        print(name, len(text.splitlines()), "lines", len(text) // 1024, "KB")
