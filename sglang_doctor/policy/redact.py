"""Secrets never leave the tool: every report is redacted before any reporter sees it.

Logs carry `api_key='…'` in server_args, `--api-key` in commands, Hugging Face tokens,
bearer tokens and credentials inside URLs. Host masking is optional (--redact-hosts): IP
addresses, names under common domains, and every host name the log gives in a host field
(`--host`, `--dist-init-addr`, `dist_init_addr='node-3:5000'`, `MASTER_ADDR=…`) wherever
that name appears again.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Iterable, Iterator

from sglang_doctor.launch.command import Arg, LaunchCommand
from sglang_doctor.launch.shell import VAR_REF_RE
from sglang_doctor.model import Report, from_json

PLACEHOLDER = "<redacted>"

_SECRET_FIELDS = r"(?:admin_)?api[_-]?key|ssl_keyfile_password|hf_token|access_token|secret|password|token"
# Unquoted values (`api_key=abc`) only for names that are never anything but a secret.
_BARE_SECRET_FIELDS = r"(?:admin_)?api[_-]?key|ssl_keyfile_password|hf_token|access_token|password"
# A flag named in prose ("--api-key is sent, but …") is followed by a word, not a value.
_PROSE = r"(?!(?:is|are|was|were|and|or|to|the|a|an|of|for|in|on|with|not|must|should|can|if|when|that|flag|option)\b)"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # server_args repr / dict / env: api_key='x', 'api_key': 'x' (also cut before the closing quote)
    (re.compile(rf"(?i)(['\"]?\b(?:{_SECRET_FIELDS})['\"]?\s*[:=]\s*)(['\"])(?!None\2)[^'\"\n]+(\2?)"),
     r"\1\2" + PLACEHOLDER + r"\3"),
    (re.compile(rf"(?i)(\b(?:{_BARE_SECRET_FIELDS})\s*[:=]\s*)(?!None\b|['\"$<\s]){_PROSE}[^\s,;)'\"]+"),
     r"\1" + PLACEHOLDER),
    # NAME=value of a secret-named variable (HF_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWD):
    # a prefix, export, `env`, `-e`; the value bare or quoted, a $REFERENCE left alone
    (re.compile(r"(\b(?:[A-Z0-9]+_)*(?:[A-Z0-9]*(?:TOKEN|SECRET|PASSWORD|PASSWD)|API_KEY)(?:_[A-Z0-9]+)*=)"
                r"(?:'(?!\$)[^'\n]*'|\"(?!\$)[^\"\n]*\"|(?![$'\"])[^\s'\"]+)"),
     lambda m: m.group(1) + _requote(m.group(0)[len(m.group(1)):])),
    # CLI flags: --api-key X, --admin-api-key=X, --hf-token X
    (re.compile(rf"(--(?:admin-)?api-key|--ssl-keyfile-password|--hf-token|--token)(=|\s+)(?![$<]){_PROSE}(['\"]?)[^\s'\"]+\3"),
     r"\1\2\3" + PLACEHOLDER + r"\3"),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}\b"), "hf_" + PLACEHOLDER),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + PLACEHOLDER),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{12,}\b"), "sk-" + PLACEHOLDER),
    # scheme://user:password@host
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"), r"\1" + PLACEHOLDER + "@"),
]
def _requote(value: str) -> str:
    q = value[:1] if value[:1] in "'\"" else ""
    return q + PLACEHOLDER + q


# Every pattern above needs one of these: a string without any is left as it is, unscanned.
_SECRET_HINT = re.compile(r"(?i)api|passw|token|secret|hf_|bearer|sk-|://")
_HOSTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b"), "<ip>"),
    (re.compile(r"(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:internal|local|lan|corp|com|net|org|io|cloud|ai)\b", re.I), "<host>"),
]
_SECRET_KEYS = re.compile(rf"(?i)^(?:{_SECRET_FIELDS})$")
_SAFE_HOSTS = {"127.0.0.1", "0.0.0.0", "localhost", "::", "::1"}

# Fields and flags whose value names a host (SGLang launch flags, torch.distributed env).
_HOST_FIELDS = (r"host|dist[_-]init[_-]addr|master[_-]addr|pdlb[_-]url|encoder[_-](?:register[_-])?urls|"
                r"o[lt][tl]p[_-]traces[_-]endpoint|load[_-]publish[_-]endpoint|decoupled[_-]spec[_-]\w*endpoints?|"
                r"remote[_-]instance[_-]weight[_-]loader[_-]seed[_-]instance[_-]ip")
_HOST_KEYS = re.compile(rf"(?i)^(?:{_HOST_FIELDS})$")
_HOST_VALUES = [
    re.compile(rf"(?i)['\"]?\b(?:{_HOST_FIELDS})['\"]?\s*[:=]\s*['\"]?([^'\"\s,)]+(?:,[^'\"\s,)]+)*)"),
    re.compile(rf"(?i)--(?:{_HOST_FIELDS})(?:=|\s+)['\"]?([^'\"\s]+)"),
]
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


def _names_in_value(value: str) -> Iterator[str]:
    """Host names in a host field's value: `node-3:5000`, `http://a:80,http://b:80`, `[::1]:5`."""
    for part in value.split(","):
        part = part.strip().strip("'\"[]")
        part = part.split("://", 1)[-1].rsplit("@", 1)[-1]  # scheme, user info
        m = _HOST_NAME.match(part)
        if not m:
            continue
        name = m.group(0)
        if name in _SAFE_HOSTS or name.isdigit() or name.lower() in ("none", "null", "auto") or len(name) < 2:
            continue
        yield name
        short = name.split(".", 1)[0]
        if short != name and len(short) >= 3 and any(c.isdigit() or c == "-" for c in short):
            yield short  # node-3.cluster.internal is often called node-3 in the same log


def _host_names(texts: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for t in texts:
        if not t:
            continue
        for rx in _HOST_VALUES:
            for m in rx.finditer(t):
                out.update(_names_in_value(m.group(1)))
    return out


class _Masker:
    def __init__(self, hosts: bool, names: Iterable[str] = ()) -> None:
        self.hosts = hosts
        known = sorted({n for n in names if n not in _SAFE_HOSTS}, key=len, reverse=True)
        self.known = (re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in known) + r")(?![\w-])")
                      if known else None)
        self.done: dict[str, str] = {}  # logs of one deployment repeat their lines

    def __call__(self, text: str) -> str:
        out = self.done.get(text)
        if out is None:
            out = self._mask(text)
            if len(self.done) < 100_000:  # (bounded: a report of a huge log stays small anyway)
                self.done[text] = out
        return out

    def _mask(self, text: str) -> str:
        if _SECRET_HINT.search(text) is not None:
            for pat, repl in _PATTERNS:
                text = pat.sub(repl, text)
        if self.hosts:
            for pat, repl in _HOSTS:
                text = pat.sub(lambda m: m.group(0) if m.group(0) in _SAFE_HOSTS else repl, text)
            if self.known is not None:
                text = self.known.sub("<host>", text)
        return text


def redact_text(text: str, hosts: bool = False) -> str:
    names = _host_names([text]) if hosts else ()
    return _Masker(hosts, names)(text)


def _strings(obj: Any, key: str | None = None) -> Iterator[tuple[str | None, str]]:
    if isinstance(obj, str):
        yield key, obj
    elif isinstance(obj, list):
        for x in obj:
            yield from _strings(x, key)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(v, k if isinstance(k, str) else None)


def redact(obj: Any, hosts: bool = False) -> Any:
    """Redact every string in a JSON-like structure; values of secret-named keys go entirely.

    With `hosts`, the host names given anywhere in a host field (a key such as
    `dist_init_addr`, or `--dist-init-addr X` in a string) are masked everywhere.
    """
    names: set[str] = set()
    if hosts:
        found = list(_strings(obj))
        names = _host_names(s for _, s in found)
        for k, s in found:
            if k is not None and _HOST_KEYS.match(k):
                names.update(_names_in_value(s))
    return _redact(obj, _Masker(hosts, names))


def redact_report(report: Report, hosts: bool = False) -> Report:
    """The report with every secret (and, with `hosts`, every host name) masked: the one place a
    report is redacted, before any reporter sees it."""
    return from_json(Report, redact(report.to_json_dict(), hosts=hosts))


def _redact(obj: Any, mask: _Masker) -> Any:
    if isinstance(obj, str):
        return mask(obj)
    if isinstance(obj, list):
        return [_redact(x, mask) for x in obj]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(k, str) and _SECRET_KEYS.match(k) and v not in (None, "", False) and not isinstance(v, bool):
                out[k] = PLACEHOLDER
            else:
                out[k] = _redact(v, mask)
        return out
    return obj


# --- a launch command: secrets become $NAME placeholders the user can export ---------------

_SECRET_FLAGS = {"--api-key", "--admin-api-key", "--ssl-keyfile-password"}
# whole name parts only: --tokenizer-path, --hf-token-file, TOKENIZERS_PARALLELISM are not secrets
_SECRET_FLAG_RE = re.compile(r"(?:^|-)(?:api-key|token|password|secret)$", re.I)
_SECRET_ENV_RE = re.compile(r"(?:^|_)[A-Z0-9]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD)(?:_|$)", re.I)
_HF_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{16,}")


def _scrub(s: str) -> str:
    return _HF_TOKEN_RE.sub("$HF_TOKEN", s)


def redact_command(cmd: LaunchCommand) -> LaunchCommand:
    """Copy of cmd with secrets replaced by ``$NAME`` placeholders the user can export.

    ``--api-key`` -> ``$SGLANG_API_KEY`` (likewise other secret flags), env vars named
    like TOKEN/KEY/SECRET/PASSWORD -> ``$NAME`` (prefix and docker -e), and any
    ``hf_...`` token anywhere -> ``$HF_TOKEN``.
    """
    new = copy.deepcopy(cmd)
    removed: set[str] = set()  # old values whose original text must not come back via the memo

    def secret_env(name: str, value: str) -> bool:
        # an existing $VAR reference leaks nothing
        return bool(_SECRET_ENV_RE.search(name)) and bool(value) and not VAR_REF_RE.match(value)

    def fix_arg(a: Arg, placeholder: str | None) -> None:
        if a.value is None:
            return
        vals = [placeholder] if placeholder else [_scrub(x) for x in a.values]
        if vals != a.values:
            removed.update(a.values)
            new.set_value(a, vals)

    env: list[tuple[str, str]] = []
    for k, v in new.env_prefix:
        nv = f"${k}" if secret_env(k, v) else _scrub(v)
        if nv != v:
            removed.update((v, f"{k}={v}"))
        env.append((k, nv))
    new.env_prefix = env
    if new.docker is not None:
        d = new.docker
        d.command = [_scrub(w) for w in d.command]
        d.image = _scrub(d.image)
        for o in d.options:
            name, _, val = (o.value or "").partition("=")
            fix_arg(o, f"{name}=${name}" if o.flag == "--env" and secret_env(name, val) else None)
    new.launcher = [_scrub(w) for w in new.launcher]
    for a in new.args:
        secret = a.flag in _SECRET_FLAGS or bool(a.flag and _SECRET_FLAG_RE.search(a.flag.lstrip("-")))
        if secret and a.value and not VAR_REF_RE.match(a.value):
            fix_arg(a, "$SGLANG_" + a.flag.lstrip("-").upper().replace("-", "_"))
        else:
            fix_arg(a, None)
    new.redirects = [_scrub(r) for r in new.redirects]
    new.quoting = {k: raw for k, raw in new.quoting.items() if k not in removed and _scrub(raw) == raw}
    return new
