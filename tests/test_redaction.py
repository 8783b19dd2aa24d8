"""Secrets never reach any output format; --redact-hosts masks IPs and host names in each.

The log carries every shape of secret SGLang logs and launch commands have: `api_key='…'`
and `admin_api_key='…'` in the server_args repr, the 0.5.23 dict form `'api_key': '…'`,
`--api-key …` / `--admin-api-key=…` on the command line, an `hf_…` token, a bearer
token, a password in a URL; and hosts: IPs, a domain name, a bare node name given in
`dist_init_addr`, `--host`, `MASTER_ADDR`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_doctor.policy.redact import PLACEHOLDER, redact, redact_text
from sglang_doctor.report import FORMATS
from helpers_cli import run

DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"

SK = "sk-live-9f8e7d6c5b4a3210ZZyy"
ADMIN = "adm1nS3cretValue77"
DICT_KEY = "dictKey0123456789"
BARE = "bareKeyQwErTy42"
HF = "hf_AbCdEfGhIjKlMnOpQrStUv"
BEARER = "eyJhbGciOiJIUzI1NiJ9.cGF5bG9hZA.c2ln"
PASSWORD = "hunter2pass"
SECRETS = [SK, ADMIN, DICT_KEY, BARE, HF, BEARER, PASSWORD, "9f8e7d6c5b4a3210", "AbCdEfGhIjKl"]
HOSTS = ["10.1.2.3", "192.168.7.9", "gpu-node-17", "cluster.internal", "hub.example.com", "172.31.5.6"]


def cli(args, env=None):
    return run(args, env=env)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(var, raising=False)


def hostile_log(tmp_path: Path) -> Path:
    lines = (DEMO / "qwen3.6-27b-awq-dtype-crash.log").read_text().splitlines()
    lines[0] = (lines[0]
                .replace("docker run", f"docker run -e HF_TOKEN={HF} -e MASTER_ADDR=gpu-node-17")
                .replace("--port 30000", f"--port 30000 --api-key {SK} --admin-api-key={ADMIN} "
                                         "--dist-init-addr gpu-node-17.cluster.internal:5000"))
    lines[1] = lines[1].replace("host='0.0.0.0'", f"host='10.1.2.3', api_key='{SK}', admin_api_key='{ADMIN}', "
                                                  "dist_init_addr='gpu-node-17:5000'")
    extra = (f" server_args={{'api_key': '{DICT_KEY}', 'dist_init_addr': '192.168.7.9:5000'}}"
             f" api_key={BARE} token={HF} Authorization: Bearer {BEARER}"
             f" https://user:{PASSWORD}@hub.example.com/models on gpu-node-17 (10.1.2.3) via 172.31.5.6"
             f" api_key='{SK}")  # cut before its closing quote
    lines = [ln + extra if ln.startswith("RuntimeError: Index put") else ln for ln in lines]
    p = tmp_path / "hostile.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def outputs(tmp_path: Path, fmt: str, *flags: str) -> tuple[str, list[str]]:
    summary = tmp_path / "summary.md"
    summary.unlink(missing_ok=True)
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    log = hostile_log(tmp_path)
    r = cli(["--format", fmt, "--why", "--write-baseline", "b.json", *flags, log.name], env=env)
    r2 = cli(["--format", fmt, "--no-baseline", *flags, log.name], env=env)
    assert r2.exit_code == 1, r2.stderr  # (the first run hides what it wrote to the baseline)
    texts = [r.stdout, r.stderr, r2.stdout, r2.stderr, (tmp_path / "b.json").read_text()]
    if summary.exists():
        texts.append(summary.read_text())
    return r2.stdout, texts


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_secret_in_any_format(tmp_path, fmt):
    out, texts = outputs(tmp_path, fmt)
    assert "SGD401" in out
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, (secret, text[text.find(secret) - 200:text.find(secret) + 50])


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_corrected_command_has_placeholders_not_secrets(tmp_path, fmt):
    out, _ = outputs(tmp_path, fmt)
    cmd = json.loads(out)["corrected_command"] if fmt == "json" else out
    assert "--api-key $SGLANG_API_KEY" in cmd and "--admin-api-key=$SGLANG_ADMIN_API_KEY" in cmd
    assert "HF_TOKEN=$HF_TOKEN" in cmd and "--dtype bfloat16" in cmd


@pytest.mark.parametrize("fmt", FORMATS)
def test_redact_hosts_masks_ips_and_host_names_in_every_format(tmp_path, fmt):
    plain, _ = outputs(tmp_path, fmt)
    assert any(host in plain for host in HOSTS)  # without the flag they are shown
    out, texts = outputs(tmp_path, fmt, "--redact-hosts")
    assert "SGD401" in out
    for text in texts[:4] + texts[5:]:  # (the baseline fingerprints never hold hosts either way)
        for host in HOSTS:
            assert host not in text, (host, text[text.find(host) - 200:text.find(host) + 50])
    if fmt in ("text", "json", "markdown"):
        assert "<ip>" in out and "<host>" in out


def test_safe_hosts_stay():
    assert redact_text("--host 0.0.0.0 --port 30000 localhost 127.0.0.1", hosts=True) == \
        "--host 0.0.0.0 --port 30000 localhost 127.0.0.1"


@pytest.mark.parametrize("text, gone", [
    (f"server_args=ServerArgs(api_key='{SK}', tp_size=1)", SK),
    (f"server_args=ServerArgs(admin_api_key='{ADMIN}')", ADMIN),
    (f"server_args={{'api_key': '{DICT_KEY}', 'tp_size': 1}}", DICT_KEY),
    (f"server_args=ServerArgs(model_path='m', api_key='{SK}", SK),  # cut mid-value
    (f"api_key={BARE}, next=1", BARE),
    (f"--api-key {SK}", SK), (f"--api-key='{SK}'", SK), (f"--admin-api-key={ADMIN}", ADMIN),
    (f"HF_TOKEN={HF}", HF), (f"token {HF}.", HF), (f"Authorization: Bearer {BEARER}", BEARER),
    (f"git+https://bob:{PASSWORD}@example.org/x.git", PASSWORD),
    (f"SGLANG_API_KEY={BARE}", BARE), (f"ssl_keyfile_password='{PASSWORD}'", PASSWORD),
])
def test_redact_text_shapes(text, gone):
    out = redact_text(text)
    assert gone not in out and PLACEHOLDER in out, out


@pytest.mark.parametrize("text", [
    "server_args=ServerArgs(api_key=None, tp_size=1)", "{'api_key': None}", "--api-key $SGLANG_API_KEY",
    "HF_TOKEN=$HF_TOKEN", "max_new_tokens=128", "tokenizer_path='/models/x'", "hf_token_path=None",
    "A 401: --api-key is sent, but a proxy asks for more", "use --token to pass it",
])
def test_redact_text_leaves_non_secrets(text):
    assert redact_text(text) == text


def test_redact_structure_masks_secret_keys_and_host_fields():
    data = {"server_args": {"api_key": "plain", "admin_api_key": "x", "dist_init_addr": "node-a7:5000",
                            "host": "10.0.0.8", "tp_size": 2},
            "findings": [{"text": "connect to node-a7 port 5000 from 10.0.0.8"}]}
    out = redact(data, hosts=True)
    assert out["server_args"]["api_key"] == out["server_args"]["admin_api_key"] == PLACEHOLDER
    assert out["server_args"]["dist_init_addr"] == "<host>:5000" and out["server_args"]["host"] == "<ip>"
    assert out["findings"][0]["text"] == "connect to <host> port 5000 from <ip>"
    assert redact(data)["server_args"]["dist_init_addr"] == "node-a7:5000"  # hosts only when asked


# --- the one secret vocabulary (policy/redact.py): names, shapes, and every format ---------------

from sglang_doctor.policy.redact import secret_name, secret_value  # noqa: E402


@pytest.mark.parametrize("name", [
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWD", "GITHUB_TOKEN",
    "MY_PASSWORD", "MY_SERVICE_KEY", "CLIENT_SECRET", "PGPASSWORD", "api_key", "admin_api_key", "--api-key",
    "--ssl-keyfile-password", "--hf-token", "apiKey", "AccountKey", "x-api-key", "Authorization", "passwd", "secret",
    "env.MY_SERVICE_KEY", "'api_key'",
])
def test_secret_names(name):
    assert secret_name(name)


@pytest.mark.parametrize("name", [
    "TOKENIZERS_PARALLELISM", "MAX_TOKENS", "NCCL_IB_PKEY", "SGLANG_ENABLE_JIT_DEEPGEMM", "HF_HOME", "KEY_VALUE_CACHE",
    "--tokenizer-path", "tokenizer_path", "max_prefill_tokens", "--hf-token-file", "HF_TOKEN_PATH", "key", "kv_cache_dtype",
    "ssl_keyfile", "skip_tokenizer_init", "token_usage",
])
def test_names_that_are_not_secret(name):
    assert not secret_name(name)


def test_a_secret_name_with_a_value_that_cannot_be_a_secret_is_shown():
    # SGLang's own switches whose names end like secrets (SGLANG_LOG_DECODE_GRAPH_KEY, --bucket-inter-token)
    for name, value in [("SGLANG_LOG_DECODE_GRAPH_KEY", "1"), ("SGLANG_USE_AITER_FP8_PER_TOKEN", "true"),
                        ("--bucket-inter-token", "0.1,0.5"), ("HF_TOKEN", "$HF_TOKEN"), ("--tls-key", "/etc/tls.key"),
                        ("api_key", "None"), ("eos_token", "<|im_end|>")]:
        assert not secret_value(name, value), (name, value)
    assert secret_value("MY_SERVICE_KEY", "s3cr3tvalue123") and secret_value("passwd", "1hunter2")


AWS_ID = "AKIA" + "Q3EGRZ7XVB5NMW2T"
NEW_SECRETS = {
    "redis": ("redis://:r3disPassw0rd@cache:6379/0", "r3disPassw0rd"),
    "url-token": ("https://ghToken9xYz@github.com/org/repo.git", "ghToken9xYz"),
    "passwd": ("passwd: yamlPass77", "yamlPass77"),
    "secret=": ("secret=plainSecret55", "plainSecret55"),
    "basic": ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw"),
    "aws": (f"aws id {AWS_ID} used", AWS_ID),
    "github": ("token ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    "github-pat": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "11ABCDEFG0123456789_abcdef"),
    "slack": ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
    "openai": ("sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"),
    "anthropic": ("sk-ant-api03-Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9Pp0-AA", "Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9Pp0"),
    "hf": ("hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa", "ZyXwVuTsRqPoNmLkJiHgFeDcBa"),
    "jwt": ("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.SflKxwRJSMeKKF2QT4fwpMeJf36", "SflKxwRJSMeKKF2QT4fwpMeJf36"),
    "private-key": ("-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\\n-----END OPENSSH PRIVATE KEY-----",
                    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"),
    "env-key": ("MY_SERVICE_KEY=s3cr3tvalue123", "s3cr3tvalue123"),
}


@pytest.mark.parametrize("kind", list(NEW_SECRETS))
def test_redact_text_masks_each_kind(kind):
    text, secret = NEW_SECRETS[kind]
    out = redact_text(f"[2026-05-02 09:14:30] connecting with {text} now")
    assert secret not in out and PLACEHOLDER in out, out


@pytest.mark.parametrize("text", [
    "TOKENIZERS_PARALLELISM=false", "--tokenizer-path /models/x", "KEY_VALUE_CACHE=enabled",
    "Prefill batch. #new-seq: 1, #new-token: 2048, #cached-token: 0, token usage: 0.01, #running-req: 0",
    "SGLANG_LOG_DECODE_GRAPH_KEY=1 SGLANG_USE_AITER_FP8_PER_TOKEN=1", "'qwen3_5' is already used by a Transformers config",
    "http://0.0.0.0:30000/generate", "max_total_num_tokens=21482, chunked_prefill_size=2048",
])
def test_redact_text_leaves_sglang_lines_alone(text):
    assert redact_text(text) == text


def _secret_log(tmp_path: Path) -> Path:
    """The demo crash with every new kind of secret in its `# cmd:` line and its log lines."""
    lines = (DEMO / "qwen3.6-27b-awq-dtype-crash.log").read_text().splitlines()
    lines[0] = lines[0].replace("docker run", "docker run -e MY_SERVICE_KEY=s3cr3tvalue123 "
                                              "-e REDIS_URL=redis://:r3disPassw0rd@cache:6379 "
                                              f"-e AWS_ACCESS_KEY_ID={AWS_ID}")
    body = " ".join(text for text, _ in NEW_SECRETS.values())
    lines = [ln + " " + body if ln.startswith("RuntimeError: Index put") else ln for ln in lines]
    lines.insert(3, f"[2026-05-02 09:14:04] {body}")
    p = tmp_path / "secrets.log"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("source", ["cmd-line", "option"])
def test_every_kind_of_secret_is_gone_from_every_format(tmp_path, fmt, source):
    log = _secret_log(tmp_path)
    args = ["--format", fmt, "--why", log.name]
    if source == "option":  # the same command given with --cmd: context.command and env facts come from it
        cmd = log.read_text().splitlines()[0][len("# cmd: "):]
        args = ["--cmd", cmd, *args]
    summary = tmp_path / "summary.md"
    r = cli(args, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.exit_code == 1 and "SGD401" in r.stdout, r.stderr
    texts = [r.stdout, r.stderr] + ([summary.read_text()] if summary.exists() else [])
    for text in texts:
        for kind, (_, secret) in NEW_SECRETS.items():
            assert secret not in text, (kind, text[text.find(secret) - 200:text.find(secret) + 50])
    if fmt == "json":
        rep = json.loads(r.stdout)
        assert rep["context"]["env"]["MY_SERVICE_KEY"] == PLACEHOLDER
        assert "MY_SERVICE_KEY=" in rep["context"]["command"]
        assert "-e MY_SERVICE_KEY=$MY_SERVICE_KEY" in rep["corrected_command"]


def test_explain_lists_the_facts_of_an_unknown_error_without_secrets(tmp_path):
    r = cli(["explain", "--cmd", "docker run -e MY_SERVICE_KEY=s3cr3tvalue123 img python3 -m sglang.launch_server "
             "--model-path x", "FooBarError: something odd"])
    assert "env.MY_SERVICE_KEY: <redacted>" in r.stderr and "s3cr3tvalue123" not in r.stdout + r.stderr
