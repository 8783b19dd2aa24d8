"""Versions: comparing them, testing them against a specifier, and finding them in what a user pasted.

``detect(text)`` reads every place a log or a command shows a version:

* an SGLang image tag                ``lmsysorg/sglang:v0.5.14-cu129``  (``:latest`` says nothing)
* site-packages paths                ``/usr/lib/python3.10/dist-packages/vllm/...`` (python 3.10, vllm
                                     installed), ``.../transformers-4.57.1.dist-info``
* ``python -m sglang.check_env``     ``sglang: 0.5.5``, ``PyTorch: 2.8.0+cu128``, ``CUDA Driver
                                     Version: 550.54.15``, ``NVCC: Cuda compilation tools, release
                                     12.8, V12.8.93``, ``vllm: Module Not Found``
* ``pip freeze`` / ``pip list``      ``torch==2.8.0``, ``torch    2.8.0``
* messages                           ``transformers version 4.57.1``, ``torch 2.8.0+cu128``

Pure functions on text; nothing is read from disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

_VERSION = r"\d+(?:\.\d+)+(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*)?"
_PEP440 = re.compile(r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?"
                     r"(?:(?:-|[-_.]?(?:post|rev|r)[-_.]?)(\d*))?(?:[-_.]?dev[-_.]?(\d*))?(?:\+([a-z0-9.]+))?",
                     re.IGNORECASE)


# --------------------------------------------------------------------------
# Comparing versions and testing specifiers (a PEP 440 subset: what pins use)
# --------------------------------------------------------------------------


def normalize_name(name: str) -> str:
    """PEP 503: ``Flashinfer_Python`` -> ``flashinfer-python``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(version: str) -> tuple:
    """Sort key: release numbers, then pre < final < post; dev before all of its release."""
    m = _PEP440.fullmatch(version.strip())
    if not m:
        return ((-1,), 0, 0, 0, 0)
    nums = [int(x) for x in m.group(1).split(".")]
    while len(nums) > 1 and nums[-1] == 0:
        nums.pop()
    pre_tag = (m.group(2) or "").lower()
    pre = {"a": 1, "alpha": 1, "b": 2, "beta": 2, "c": 3, "rc": 3, "pre": 3, "preview": 3}.get(pre_tag, 4)
    pre_n = int(m.group(3) or 0)
    post = int(m.group(4)) + 1 if m.group(4) is not None and m.group(4) != "" else (1 if m.group(4) == "" else 0)
    dev = m.group(5)
    if dev is not None and pre == 4 and not post:
        pre = 0  # 1.0.dev1 < 1.0a1
    return (tuple(nums), pre, pre_n, post, -1 if dev is None else int(dev or 0))


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def _key_cmp(key: tuple) -> tuple:
    nums, pre, pre_n, post, dev = key
    return (nums, pre, pre_n, post, (1, 0) if dev == -1 else (0, dev))


def compare(a: str, b: str) -> int:
    ka, kb = _key_cmp(parse(_public(a))), _key_cmp(parse(_public(b)))
    return (ka > kb) - (ka < kb)


def admits(spec: str, version: str) -> bool:
    """Whether ``version`` satisfies ``spec`` (``==2.8.0``, ``>=0.4,<0.5``, ``~=2.5``, ``==2.5.*``;
    a leading ``[extras]`` is ignored; the empty spec admits everything). A local label
    (``+cu128``) is ignored unless the spec names one, as PEP 440 says."""
    spec = re.sub(r"^\[[^\]]*\]", "", spec.strip())
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = re.fullmatch(r"(===|==|!=|~=|>=|<=|>|<)\s*(\S+)", clause)
        if not m:
            return True  # unknown syntax: do not claim a conflict
        op, want = m.groups()
        if op == "===":
            ok = version == want
        elif want.endswith(".*") and op in ("==", "!="):
            prefix = [int(x) for x in re.findall(r"\d+", want[:-2])]
            have = list(parse(_public(version))[0]) + [0] * len(prefix)
            ok = have[: len(prefix)] == prefix
            ok = ok if op == "==" else not ok
        elif op in ("==", "!="):
            v = version if "+" in want else _public(version)
            ok = compare(v, want) == 0 and (("+" not in want) or v.split("+")[1] == want.split("+")[1])
            ok = ok if op == "==" else not ok
        elif op == "~=":
            parts = _public(want).split(".")
            upper_prefix = ".".join(parts[:-1]) + ".*" if len(parts) > 1 else want
            ok = compare(version, want) >= 0 and admits("==" + upper_prefix, version)
        else:
            c = compare(version, want)
            ok = {">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0}[op]
            # PEP 440: <V does not admit pre-releases of V itself
            if op == "<" and ok and parse(_public(version))[0] == parse(want)[0] and parse(_public(version))[1] < 4:
                ok = False
        if not ok:
            return False
    return True


# --------------------------------------------------------------------------
# Finding versions in text
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """A package version the log shows, and where it was read."""

    dist: str  # normalized distribution name; also "python", "nvidia-driver", "cuda", "torch-cuda"
    version: str | None  # None: present (or absent, see installed) without a version
    where: str  # image-tag | dist-info | check_env | pip-freeze | pip-list | message | site-packages
    evidence: str  # the text it was read from
    installed: bool = True  # False: check_env said "Module Not Found"


# How much each source is trusted when two disagree (higher wins).
_RANK = {"check_env": 6, "pip-freeze": 6, "pip-list": 5, "dist-info": 5, "image-tag": 3, "message": 2,
         "site-packages": 1}

_IMAGE = re.compile(r"\blmsysorg/sglang(?:-[\w-]+)?:(?P<tag>[\w.+-]+)")
_TAG_VERSION = re.compile(r"^v?(?P<v>\d+\.\d+\.\d+(?:rc\d+)?(?:\.post\d+)?)(?:-(?P<rest>[\w.-]+))?$")
_SITE = re.compile(r"(?:^|[\s\"'(=:])(?P<path>/[^\s\"':]*?/python(?P<py>\d\.\d+)/(?:site|dist)-packages/"
                   r"(?P<entry>[A-Za-z0-9_.+-]+))")
_DIST_INFO = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.]*?)-(?P<v>" + _VERSION + r")\.(?:dist-info|egg-info)$")
_FREEZE = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*(?P<v>\d[^\s;#]*)\s*(?:[;#].*)?$",
                     re.M)
_PIP_LIST_HEAD = re.compile(r"^Package\s{2,}Version\b", re.M)
_PIP_LIST = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)[ \t]{2,}(?P<v>\d+(?:\.\w+)*(?:\+[\w.]+)?)(?:[ \t]+\S.*)?$",
                       re.M)
_CHECK_ENV = re.compile(r"^(?:\[[^\]]*\]\s*)?(?P<key>[A-Za-z][\w .-]*?):[ \t]+(?P<val>[^\n]+?)\s*$", re.M)
# check_env keys that are not package names
_CHECK_ENV_KEYS = {"python": "python", "pytorch": "torch", "cuda driver version": "nvidia-driver",
                   "nvcc": "cuda", "rocm driver version": "amdgpu-driver", "hipcc": "rocm"}
_CHECK_ENV_NOT_DIST = re.compile(r"(?i)^(gpu\b|cuda available|cuda_home|rocm|nvidia topology|hypervisor|ulimit|cpu\b)")

# Distributions whose versions messages quote ("transformers version 4.57.1", "torch 2.8.0+cu128").
MESSAGE_DISTS = ("sglang", "sgl-kernel", "sgl_kernel", "sglang-kernel", "torch", "pytorch", "transformers",
                 "flashinfer", "flashinfer-python", "flashinfer_python", "triton", "xgrammar", "vllm", "outlines",
                 "torchao", "tokenizers", "huggingface_hub", "huggingface-hub", "numpy", "pydantic", "accelerate",
                 "deep_gemm", "deepep", "nccl", "cuda", "python")
_MESSAGE_ALIASES = {"pytorch": "torch", "flashinfer": "flashinfer-python"}


def sglang_from_image_tag(text: str) -> str | None:
    """The SGLang release an ``lmsysorg/sglang:<tag>`` image is; None for moving tags (latest, dev)."""
    m = _IMAGE.search(text)
    if not m:
        return None
    t = _TAG_VERSION.match(m.group("tag"))
    return t.group("v") if t else None


def _cuda_from_tag(rest: str | None) -> str | None:
    m = re.search(r"\bcu(\d{2,3})\b", rest or "")
    if not m:
        return None
    digits = m.group(1)
    return f"{digits[:-1]}.{digits[-1]}"  # cu129 -> 12.9, cu130 -> 13.0


def _best(found: dict[str, Seen], seen: Seen) -> None:
    old = found.get(seen.dist)
    if old is None:
        found[seen.dist] = seen
        return
    # a version beats none; then the more trusted source
    if (seen.version is not None, _RANK[seen.where]) > (old.version is not None, _RANK[old.where]):
        found[seen.dist] = seen


def detect(text: str, message_dists: Iterable[str] = MESSAGE_DISTS) -> dict[str, Seen]:
    """Every distribution version ``text`` shows, one per distribution (the most trusted sighting)."""
    found: dict[str, Seen] = {}
    for m in _IMAGE.finditer(text):
        t = _TAG_VERSION.match(m.group("tag"))
        if t:
            _best(found, Seen("sglang", t.group("v"), "image-tag", m.group()))
            cuda = _cuda_from_tag(t.group("rest"))
            if cuda:
                _best(found, Seen("cuda", cuda, "image-tag", m.group()))
    for m in _SITE.finditer(text):
        _best(found, Seen("python", m.group("py"), "site-packages", m.group("path")))
        entry = m.group("entry")
        d = _DIST_INFO.match(entry)
        if d:
            _best(found, Seen(normalize_name(d.group("name")), d.group("v"), "dist-info", m.group("path")))
        elif not entry.endswith((".py", ".so", ".pth")) and not entry.startswith(("_", ".")):
            # an import package directory: installed, version unknown (the import name may differ
            # from the distribution's: flashinfer is flashinfer-python)
            _best(found, Seen(normalize_name(entry), None, "site-packages", m.group("path")))
    if "==" in text:
        for m in _FREEZE.finditer(text):
            _best(found, Seen(normalize_name(m.group("name")), m.group("v"), "pip-freeze", m.group().strip()))
    _pip_list(text, found)
    _check_env(text, found)
    _messages(text, found, message_dists)
    return found


def _pip_list(text: str, found: dict[str, Seen]) -> None:
    """``pip list`` rows: under its header, or three or more such rows in a row."""
    has_head = bool(_PIP_LIST_HEAD.search(text))
    rows = list(_PIP_LIST.finditer(text))
    for i, m in enumerate(rows):
        if not has_head:
            run = [r for r in rows[max(0, i - 2):i + 3]]
            lines = [text.count("\n", 0, r.start()) for r in run]
            here = text.count("\n", 0, m.start())
            consecutive = sum(1 for n in lines if abs(n - here) <= 2)
            if consecutive < 3:
                continue
        _best(found, Seen(normalize_name(m.group("name")), m.group("v"), "pip-list", m.group().strip()))


def _check_env(text: str, found: dict[str, Seen]) -> None:
    if not re.search(r"(?m)^(?:\[[^\]]*\]\s*)?(?:sglang|PyTorch|CUDA available|Python): ", text):
        return  # not check_env output
    for m in _CHECK_ENV.finditer(text):
        key, val = m.group("key").strip(), m.group("val").strip()
        low = key.lower()
        if _CHECK_ENV_NOT_DIST.match(low):
            continue
        dist = _CHECK_ENV_KEYS.get(low) or normalize_name(key)
        if val == "Module Not Found":
            _best(found, Seen(dist, None, "check_env", m.group().strip(), installed=False))
            continue
        if dist == "cuda":  # NVCC: Cuda compilation tools, release 12.8, V12.8.93
            v = re.search(r"V(\d+\.\d+\.\d+)|release (\d+\.\d+)", val)
            version = (v.group(1) or v.group(2)) if v else None
        else:
            v = re.match(r"(" + _VERSION + r"|\d+)\b", val)
            version = v.group(1) if v else None
        if version is None:
            continue
        _best(found, Seen(dist, version, "check_env", m.group().strip()))
        if dist == "torch" and "+cu" in version:
            _best(found, Seen("torch-cuda", _cuda_from_tag(version.split("+")[1]), "check_env", m.group().strip()))


def _messages(text: str, found: dict[str, Seen], dists: Iterable[str]) -> None:
    names = sorted(set(dists), key=lambda n: (-len(n), n))  # (a stable order: the pattern is cached by its text)
    rx = re.compile(r"(?<![\w/.-])(?P<name>" + "|".join(re.escape(n) for n in names) + r")"
                    r"(?:\s+version)?(?:\s+is\s+|\s*:\s*|\s+)v?(?P<v>" + _VERSION + r")(?![\w+]|\.\w)",
                    re.IGNORECASE)
    for m in rx.finditer(text):
        name = normalize_name(m.group("name"))
        # ("transformers>=4.57" or "==" is a requirement, not what is installed: not matched)
        _best(found, Seen(_MESSAGE_ALIASES.get(name, name), m.group("v"), "message", m.group()))
