"""Secrets never leave the tool: every report is redacted before any reporter sees it.

This module is the only definition of what is secret (`secret_name`, `secret_value`, the token
shapes): logs carry `api_key='…'` in server_args, `--api-key` in commands, tokens in the launch's
environment, Hugging Face / OpenAI / GitHub / AWS keys, bearer tokens and credentials inside
URLs. Facts hold raw values; the finished report is redacted as a whole. Host masking is
optional (--redact-hosts): IP addresses, names under common domains, and every host name the
log gives in a host field (`--host`, `--dist-init-addr`, `dist_init_addr='node-3:5000'`,
`MASTER_ADDR=…`) wherever that name appears again.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Iterable, Iterator

from sglang_doctor.launch.command import Arg, LaunchCommand
from sglang_doctor.model import Report, from_json

PLACEHOLDER = "<redacted>"

# --- what is secret: the one vocabulary -------------------------------------------------------
#
# A secret is recognised by its name (`api_key='…'`, `HF_TOKEN=…`, `--admin-api-key …`, `passwd: …`,
# a report key such as `env.MY_SERVICE_KEY`) or by its shape (the token formats below, which say
# what they are wherever they appear: AWS, GitHub, OpenAI, Hugging Face, a JWT, a private key).
# The kinds follow a maintained secret scanner's rule list (gitleaks' default config); the
# patterns are this project's own.

# The last word of a secret name (split at `_`, `-`, `.`, spaces and camelCase humps): HF_TOKEN,
# OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWD, PGPASSWORD, --ssl-keyfile-password, apiKey,
# `Authorization`. A word that only ends in `key` (NCCL_IB_PKEY) or is about tokens (MAX_TOKENS,
# TOKENIZERS_PARALLELISM, --tokenizer-path) is not one; nor is `key` alone (a config key).
_SECRET_WORD = re.compile(r"(?i)\w*(?:token|secret|password|passwd)|(?:api|access|secret|private|client|account|"
                          r"service|master|signing|encryption)?key|apikey|credentials?|auth|authorization")
_NAME_PARTS = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")
# Values that hold no secret whatever their name: numbers and lists of them, booleans, None, a
# $REFERENCE (Kubernetes: $(NAME)), an <angle-bracketed> placeholder or special token, a file path, the placeholder.
_PLAIN_VALUE = re.compile(r"(?i)[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*,\s*[-+]?\d+(?:\.\d+)?)*|true|false|none|null|"
                          r"yes|no|on|off|\$\{?[A-Za-z_]\w*\}?|\$\([A-Za-z_]\w*\)|<[^<>\n]*>|(?:~|\.{1,2})?/\S*")


def secret_name(name: str) -> bool:
    """A name (variable, field, flag, report key) whose value must not be shown."""
    parts = [p for p in _NAME_PARTS.split(name.strip("'\"-$")) if p]
    if len(parts) == 1 and parts[0].lower() == "key":
        return False
    return bool(parts) and _SECRET_WORD.fullmatch(parts[-1]) is not None


def secret_value(name: str, value: object) -> bool:
    """`name=value` shows a secret: a secret name with a value that could be one."""
    if not isinstance(value, str) or not secret_name(name):
        return False
    v = value.strip().strip("'\"")
    return bool(v) and v != PLACEHOLDER and _PLAIN_VALUE.fullmatch(v) is None


# A flag named in prose ("--api-key is sent, but …") is followed by a word, not a value.
_PROSE = frozenset("is are was were be and or to the a an of for in on with not must should can if when that "
                   "this flag option value set it".split())
# NAME=VALUE, NAME: VALUE, 'NAME': 'VALUE', "NAME": "VALUE", Authorization: Basic VALUE; the value bare
# or quoted (also cut before its closing quote).
_PAIR = re.compile(r"""(?P<q>['"]?)(?P<name>(?:(?<=--)|(?<![\w.$-]))[A-Za-z_][\w.-]{0,100})(?P=q)"""
                   r"""(?P<sep>\s*(?:=|:(?!//|\d))\s*(?:(?:Basic|Bearer|Token|Digest)\s+)?)"""
                   r"""(?P<value>'[^'\n]*'?|"[^"\n]*"?|[^\s,;&()'"\[\]{}=]+=*(?=[\s,;&)'"\]}]|$))""")
# --NAME VALUE: a flag and its value after a space.
_FLAG_VALUE = re.compile(r"""(?<![\w-])(?P<name>--[A-Za-z][\w-]{0,100})(?P<sep>\s+)"""
                         r"""(?P<value>'[^'\n]*'?|"[^"\n]*"?|(?!-)[^\s'"]+)""")


def _pair(m: re.Match[str]) -> str:
    name, sep, value = m["name"], m["sep"], m["value"]
    bare = value[:1] not in "'\""
    if (not secret_value(name, value) or (bare and value.lower() in _PROSE)
            or (bare and "=" in sep and sep[-1:].isspace())):  # `API_KEY= python …`: an empty value
        return m.group(0)
    q = value[:1] if not bare else ""
    return m.group(0)[:len(m.group(0)) - len(value)] + q + PLACEHOLDER + (q if value.endswith(q) and len(value) > 1 else "")


_HF_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{16,}\b")
# Secrets by their shape, anywhere in a text (kinds after gitleaks' rule list).
_SHAPES: list[tuple[re.Pattern[str], str]] = [
    # private key blocks: PEM / OpenSSH, on several lines or `\n`-escaped on one
    (re.compile(r"(-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----)(?:.*?(-----END[A-Z0-9 ]{0,40} PRIVATE KEY"
                r"(?: BLOCK)?-----)|.*)", re.S), r"\1" + PLACEHOLDER + r"\2"),
    (re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b"), PLACEHOLDER),  # AWS access key id
    (re.compile(r"\b(gh[pousr]_)[A-Za-z0-9]{30,}\b|\b(github_pat_)\w{30,}"), r"\1\2" + PLACEHOLDER),  # GitHub
    (re.compile(r"\b(glpat-)[\w-]{20,}"), r"\1" + PLACEHOLDER),  # GitLab
    (re.compile(r"\b(xox[abposr]-|xapp-)[A-Za-z0-9-]{10,}"), r"\1" + PLACEHOLDER),  # Slack tokens
    (re.compile(r"(hooks\.slack\.com/(?:services|workflows)/)[\w/+-]{20,}"), r"\1" + PLACEHOLDER),
    # OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-api03-…), DeepSeek and other sk- keys
    (re.compile(r"\bsk-[A-Za-z0-9_-]{12,}"), "sk-" + PLACEHOLDER),
    (re.compile(r"\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}"), PLACEHOLDER),  # Stripe
    (_HF_TOKEN_RE, "hf_" + PLACEHOLDER),  # Hugging Face
    (re.compile(r"\bapi_org_[A-Za-z0-9]{16,}\b"), "api_org_" + PLACEHOLDER),
    (re.compile(r"\bAIza[\w-]{35}\b"), PLACEHOLDER),  # Google API key
    (re.compile(r"\bdapi[a-f0-9]{32}\b"), PLACEHOLDER),  # Databricks
    (re.compile(r"\br8_[A-Za-z0-9]{30,}\b"), PLACEHOLDER),  # Replicate
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), PLACEHOLDER),  # npm
    (re.compile(r"\bpypi-AgE[\w-]{50,}"), PLACEHOLDER),  # PyPI upload token
    (re.compile(r"\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}"), PLACEHOLDER),  # JWT
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + PLACEHOLDER),
    # credentials in a URL: scheme://user:password@, scheme://:password@, scheme://token@
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s@'\"<>]+@"), r"\1" + PLACEHOLDER + "@"),
]
# Every pattern needs one of these: a string without any is left as it is, unscanned.
_SECRET_HINT = re.compile(r"(?i)key|token|secret|passw|auth|cred|bearer|://|-----BEGIN|A3T|AKIA|ASIA|ABIA|ACCA|"
                          r"gh[pousr]_|github_pat_|glpat-|xox|xapp-|sk-|[sr]k_|hf_|api_org_|AIza|eyJ|dapi|r8_|npm_|pypi-")


def _mask_secrets(text: str) -> str:
    if _SECRET_HINT.search(text) is None:
        return text
    text = _FLAG_VALUE.sub(_pair, text)
    text = _PAIR.sub(_pair, text)
    for pat, repl in _SHAPES:
        text = pat.sub(repl, text)
    return text


_HOSTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b"), "<ip>"),
    (re.compile(r"(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:internal|local|lan|corp|com|net|org|io|cloud|ai)\b", re.I), "<host>"),
]
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


def _secret_values(texts: Iterable[tuple[str | None, str]]) -> set[str]:
    """The values a secret name gives anywhere (`api_key='…'`, `--api-key …`, a key `env.HF_TOKEN`):
    masked wherever else they appear too (an explanation quoting one, a command rebuilt with it)."""
    out: set[str] = set()
    for key, text in texts:
        if key is not None and secret_value(key, text):
            out.add(text.strip().strip("'\""))
        if _SECRET_HINT.search(text) is None:
            continue
        for rx in (_FLAG_VALUE, _PAIR):
            for m in rx.finditer(text):
                if secret_value(m["name"], m["value"]):
                    out.add(m["value"].strip("'\""))
    return {v for v in out if len(v) >= MIN_KNOWN_SECRET}


MIN_KNOWN_SECRET = 8  # shorter values are masked where their name is, not everywhere (too many false hits)


def _alternation(words: Iterable[str], before: str, after: str) -> re.Pattern[str] | None:
    ordered = sorted(set(words), key=len, reverse=True)
    return re.compile(before + "(?:" + "|".join(re.escape(w) for w in ordered) + ")" + after) if ordered else None


class _Masker:
    def __init__(self, hosts: bool, names: Iterable[str] = (), secrets: Iterable[str] = ()) -> None:
        self.hosts = hosts
        self.known = _alternation((n for n in names if n not in _SAFE_HOSTS), r"(?<![\w.-])", r"(?![\w-])")
        self.secrets = _alternation(secrets, "", "")
        self.done: dict[str, str] = {}  # logs of one deployment repeat their lines

    def __call__(self, text: str) -> str:
        out = self.done.get(text)
        if out is None:
            out = self._mask(text)
            if len(self.done) < 100_000:  # (bounded: a report of a huge log stays small anyway)
                self.done[text] = out
        return out

    def _mask(self, text: str) -> str:
        text = _mask_secrets(text)
        if self.secrets is not None:
            text = self.secrets.sub(PLACEHOLDER, text)
        if self.hosts:
            for pat, repl in _HOSTS:
                text = pat.sub(lambda m: m.group(0) if m.group(0) in _SAFE_HOSTS else repl, text)
            if self.known is not None:
                text = self.known.sub("<host>", text)
        return text


def redact_text(text: str, hosts: bool = False) -> str:
    """`text` with every secret masked (and with `hosts`, IPs and host names)."""
    names = _host_names([text]) if hosts else ()
    return _Masker(hosts, names, _secret_values([(None, text)]))(text)


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
    """Redact every string in a JSON-like structure (a whole report): secrets by name and shape,
    the values of secret-named keys (`api_key`, `env.MY_SERVICE_KEY`) entirely, and any value a
    secret name gives wherever else it appears.

    With `hosts`, the host names given anywhere in a host field (a key such as
    `dist_init_addr`, or `--dist-init-addr X` in a string) are masked everywhere.
    """
    found = list(_strings(obj))
    names: set[str] = set()
    if hosts:
        names = _host_names(s for _, s in found)
        for k, s in found:
            if k is not None and _HOST_KEYS.match(k):
                names.update(_names_in_value(s))
    return _redact(obj, _Masker(hosts, names, _secret_values(found)))


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
            if isinstance(k, str) and secret_value(k, v):
                out[k] = PLACEHOLDER
            else:
                out[k] = _redact(v, mask)
        return out
    return obj


# --- a launch command: secrets become $NAME placeholders the user can export ---------------

def _scrub(s: str) -> str:
    return _HF_TOKEN_RE.sub("$HF_TOKEN", s)


def env_value(name: str, value: str) -> str:
    """An environment variable's value as a corrected command shows it: a secret becomes `$NAME`."""
    return f"${name}" if secret_value(name, value) else _scrub(value)


def redact_command(cmd: LaunchCommand) -> LaunchCommand:
    """Copy of cmd with secrets replaced by ``$NAME`` placeholders the user can export.

    ``--api-key`` -> ``$SGLANG_API_KEY`` (likewise other secret flags), secret env vars
    (`secret_value`) -> ``$NAME`` (prefix and docker -e), and any ``hf_...`` token anywhere ->
    ``$HF_TOKEN``. What else is secret in it is masked with the rest of the report.
    """
    new = copy.deepcopy(cmd)
    removed: set[str] = set()  # old values whose original text must not come back via the memo

    def fix_arg(a: Arg, placeholder: str | None) -> None:
        if a.value is None:
            return
        vals = [placeholder] if placeholder else [_scrub(x) for x in a.values]
        if vals != a.values:
            removed.update(a.values)
            new.set_value(a, vals)

    env: list[tuple[str, str]] = []
    for k, v in new.env_prefix:
        nv = env_value(k, v)
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
            fix_arg(o, f"{name}=${name}" if o.flag == "--env" and secret_value(name, val) else None)
    new.launcher = [_scrub(w) for w in new.launcher]
    for a in new.args:
        if a.flag and a.value and secret_value(a.flag, a.value):
            fix_arg(a, "$SGLANG_" + a.flag.lstrip("-").upper().replace("-", "_"))
        else:
            fix_arg(a, None)
    new.redirects = [_scrub(r) for r in new.redirects]
    new.quoting = {k: raw for k, raw in new.quoting.items() if k not in removed and _scrub(raw) == raw}
    return new
