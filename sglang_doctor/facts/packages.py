"""Which package versions a log shows: `package.<DIST>` and `package_installed.<DIST>` facts.

Lines that can carry a version (pip freeze/list rows, check_env output, site-packages paths in
tracebacks, image tags, "torch 2.8.0" in a message) are kept as they pass (at most MAX_LINES) and
read once at the end by ``registry.versions.detect``, which needs neighbouring lines to tell a
`pip list` table from prose. DIST is the PEP 503 name with `_` for `-` (`package.flashinfer_python`)
so that an expression can name it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sglang_doctor.read.records import Record

MAX_LINES = 400

# What a version-bearing line looks like (a superset of what detect() reads; stage one lets these
# lines through, so keep it narrow): `x==1.2`, a site-packages path, an image tag, a check_env
# `Key: 1.2` line or a `pip list` row (both unprefixed), a known package followed by a version.
# (`[^\S\n]+`, not `[ \t]+`, after the key: the same lines, and Hyperscan runs it ~10x faster,
# where `:[ \t]` made this one pattern half of stage one's time on a serving log.)
HINT = (r"==\s*\d|(?:site|dist)-packages/|lmsysorg/sglang:v?\d"
        r"|^[A-Za-z][\w .-]{0,40}:[^\S\n]+(?:v?\d+\.\d|Module Not Found)|^[A-Za-z0-9][\w.-]{0,40}[ \t]{2,}\d+\.\d"
        r"|(?i:torch|transformers|flashinfer|sgl[-_]kernel|triton|xgrammar|vllm)(?:\s+version)?(?:\s+is)?[\s:]+v?\d+\.\d")
_HINT = re.compile(HINT, re.M)
# What an ASCII line needs for HINT to have a chance, tested before it (HINT costs ~45 µs on a
# serving log's decode line, where it never matches): a literal of its first alternatives, a
# letter or digit first (the anchored ones), or a package name in any case.
_HINT_LITERALS = ("==", "-packages/", "lmsysorg/sglang:")
_HINT_NAMES = ("torch", "transformers", "flashinfer", "sgl-kernel", "sgl_kernel", "triton", "xgrammar", "vllm")


def _may_hint(text: str) -> bool:
    """False only when HINT cannot match `text` (a line of plain ASCII; anything else is searched)."""
    if not text.isascii() or "\n" in text or text[:1].isalnum():
        return True
    if any(lit in text for lit in _HINT_LITERALS):
        return True
    low = text.lower()
    return any(name in low for name in _HINT_NAMES)


def fact_name(dist: str) -> str:
    """`flashinfer-python` -> `package.flashinfer_python`."""
    return "package." + dist.replace("-", "_").replace(".", "_")


class PackageWatch:
    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []

    def observe(self, rec: "Record") -> None:
        if len(self.lines) >= MAX_LINES:
            return
        for ln in rec.lines:
            if _may_hint(ln.text) and _HINT.search(ln.text):
                self.lines.append((ln.number, ln.text))
                if len(self.lines) >= MAX_LINES:
                    return

    def facts(self) -> list[tuple[str, object, int | None, str]]:
        """(fact name, value, line, note) for every package the kept lines show."""
        if not self.lines:
            return []
        from sglang_doctor.registry.versions import detect  # (only for a log that shows versions)

        text = "\n".join(t for _, t in self.lines)
        out: list[tuple[str, object, int | None, str]] = []
        for dist, seen in detect(text).items():
            line = next((n for n, t in self.lines if seen.evidence.split("\n")[0] in t), None)
            note = f"{seen.where}: {seen.evidence[:80]}"
            if seen.version is not None:
                out.append((fact_name(dist), seen.version, line, note))
            out.append(("package_installed." + dist.replace("-", "_"), seen.installed, line, note))
        return out
