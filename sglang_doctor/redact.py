"""Secrets never leave the tool: every report is redacted before any reporter sees it.

Logs carry `api_key='…'` in server_args, `--api-key` in commands, Hugging Face tokens,
bearer tokens and credentials inside URLs. Host masking is optional (--redact-hosts).
"""

from __future__ import annotations

from typing import Any

import regex

PLACEHOLDER = "<redacted>"

_SECRET_FIELDS = r"(?:admin_)?api[_-]?key|ssl_keyfile_password|hf_token|access_token|secret|password|token"
_PATTERNS: list[tuple[regex.Pattern[str], str]] = [
    # server_args repr / dict / env: api_key='x', 'api_key': 'x', API_KEY=x
    (regex.compile(rf"(?i)(['\"]?\b(?:{_SECRET_FIELDS})['\"]?\s*[:=]\s*)(['\"])(?!None\b)[^'\"]+\2"), r"\1\2" + PLACEHOLDER + r"\2"),
    (regex.compile(r"(\b[A-Z0-9_]*(?:TOKEN|API_KEY|SECRET|PASSWORD)=)(?!\$)[^\s'\"]+"), r"\1" + PLACEHOLDER),
    # CLI flags: --api-key X, --admin-api-key=X, --hf-token X
    (regex.compile(r"(--(?:admin-)?api-key|--ssl-keyfile-password|--hf-token|--token)(=|\s+)(?!\$)(['\"]?)[^\s'\"]+\3"), r"\1\2\3" + PLACEHOLDER + r"\3"),
    (regex.compile(r"\bhf_[A-Za-z0-9]{16,}\b"), "hf_" + PLACEHOLDER),
    (regex.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + PLACEHOLDER),
    (regex.compile(r"\bsk-[A-Za-z0-9_-]{12,}\b"), "sk-" + PLACEHOLDER),
    # scheme://user:password@host
    (regex.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"), r"\1" + PLACEHOLDER + "@"),
]
_HOSTS: list[tuple[regex.Pattern[str], str]] = [
    (regex.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b"), "<ip>"),
    (regex.compile(r"(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:internal|local|lan|corp|com|net|org|io|cloud|ai)\b", regex.I), "<host>"),
]
_SECRET_KEYS = regex.compile(rf"(?i)^(?:{_SECRET_FIELDS})$")
_SAFE_HOSTS = {"127.0.0.1", "0.0.0.0", "localhost"}


def redact_text(text: str, hosts: bool = False) -> str:
    for pat, repl in _PATTERNS:
        text = pat.sub(repl, text)
    if hosts:
        for pat, repl in _HOSTS:
            text = pat.sub(lambda m: m.group(0) if m.group(0) in _SAFE_HOSTS else repl, text)
    return text


def redact(obj: Any, hosts: bool = False) -> Any:
    """Redact every string in a JSON-like structure; values of secret-named keys go entirely."""
    if isinstance(obj, str):
        return redact_text(obj, hosts)
    if isinstance(obj, list):
        return [redact(x, hosts) for x in obj]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(k, str) and _SECRET_KEYS.match(k) and v not in (None, "", False):
                out[k] = PLACEHOLDER
            else:
                out[k] = redact(v, hosts)
        return out
    return obj
