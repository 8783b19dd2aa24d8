"""The corrected commands SGLang's parser rejects today: tests/realparser/known_failures.yaml.

Each entry is a test id of tests/test_real_parser.py with the release it was parsed with and the
parser's error. The test for it is xfail(strict=True): fixing the command makes it XPASS, which
fails the run until the entry is removed; a different error fails it too (the entry is stale).
"""

from __future__ import annotations

from pathlib import Path

import yaml

KNOWN_FILE = Path(__file__).resolve().parent / "known_failures.yaml"

HEADER = """\
# Corrected commands that SGLang's real argument parser rejects today (issue 16, item 1).
# Written by `python -m tests.realparser.measure --write-known`; each entry is an xfail(strict=True)
# of tests/test_real_parser.py: fix the command and the test XPASSes and fails until the entry goes.
#   <test id>: {release: <sglang release parsed with>, category: <kind>, error: <parser's message>,
#               command: <the corrected command>}
"""


def load_known() -> dict[str, dict]:
    if not KNOWN_FILE.exists():
        return {}
    return yaml.safe_load(KNOWN_FILE.read_text()) or {}


def write_known(entries: dict[str, dict]) -> None:
    body = yaml.safe_dump(dict(sorted(entries.items())), sort_keys=False, allow_unicode=True, width=10_000)
    KNOWN_FILE.write_text(HEADER + body)
