"""The entry point's fast path: the plain `sglang-doctor [FILES] [--format F] …` (and
`sglang-doctor explain [TEXT…]`) without click.

Most runs are `docker logs sgl 2>&1 | sglang-doctor` or `sglang-doctor x.log --format json`;
importing click and building its command tree is a tenth of such a run on a small log. A
command line made only of file names and the options below goes straight to cli/check.py;
anything else (a subcommand, help, another option, a value click would refuse) goes to
click, which gives the usual handling and messages. tests/test_cli_fast.py holds this table
to click's declarations: same options, same defaults, same settings for the same argv.
"""

from __future__ import annotations

import os
from typing import Any

from sglang_doctor.model import FAIL_ON, FORMATS

# The group's subcommands: a first argument naming one is not a file (cli/main.py's _DefaultToCheck).
COMMANDS = ("check", "demo", "explain", "preflight", "rules")

# check's options at their defaults (click's `default=`), by parameter name
DEFAULTS: dict[str, Any] = {
    "fmt": "text", "fail_on": "error", "rule_dirs": (), "command": None, "cmd_file": None, "model_dir": None,
    "diff": False, "fix": False, "redact_hosts": False, "quiet": False, "color": None, "config": None,
    "baseline": None, "no_baseline": False, "write_baseline": None, "jobs": None, "why": False,
}
# switch -> (parameter, the value it sets)
FLAGS: dict[str, tuple[str, Any]] = {
    "-q": ("quiet", True), "--quiet": ("quiet", True),
    "--color": ("color", True), "--no-color": ("color", False),
    "--no-baseline": ("no_baseline", True),
}
# option with a value (`--format json`, `--format=json`) -> (parameter, the values click accepts)
VALUED: dict[str, tuple[str, tuple[str, ...]]] = {
    "--format": ("fmt", tuple(FORMATS)),
    "--fail-on": ("fail_on", tuple(FAIL_ON)),
}


def plain_check(argv: list[str]) -> tuple[tuple[str, ...], dict[str, Any], set[str]] | None:
    """(files, options, options given) when `argv` is a plain check click would parse the same way;
    None: leave it to click."""
    if argv and argv[0] in COMMANDS:
        return None
    return _plain(argv)


def plain_explain(argv: list[str]) -> tuple[tuple[str, ...], dict[str, Any], set[str]] | None:
    """The same for `sglang-doctor explain [TEXT…]` (the words of the pasted error for files)."""
    if not argv or argv[0] != "explain":
        return None
    return _plain(argv[1:])


def _plain(argv: list[str]) -> tuple[tuple[str, ...], dict[str, Any], set[str]] | None:
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):  # shell completion is click's
        return None
    words: list[str] = []
    opts = dict(DEFAULTS)
    given: set[str] = set()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            words.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if name in FLAGS and not eq:
            param, val = FLAGS[name]
        elif name in VALUED:
            if not eq:
                if i >= len(argv):
                    return None
                value = argv[i]
                i += 1
            param, choices = VALUED[name]
            if value not in choices:
                return None
            val = value
        else:
            return None
        opts[param] = val
        given.add(param)
    return tuple(words), opts, given
