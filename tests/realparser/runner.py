"""Runs INSIDE a real-parser test venv (see harness.py): stdin is a JSON list of argv lists, the
last stdout line a JSON list of {ok, error, category}.

The parser is SGLang's own: `argparse.ArgumentParser()` + `ServerArgs.add_cli_args(parser)`, the
way `prepare_server_args` builds it, then `parse_args(argv)`. The one change is that argparse's
`error()` raises instead of printing usage and exiting, so one process checks many argvs.

Validated: unknown flags, flags without their value, values outside `choices`, values that the
flag's `type` rejects, ambiguous abbreviations, a value given to a switch (`--flag=x`), required
arguments, SGLang's own argparse actions (deprecated/removed flags that raise), and — on top of
argparse, which lets the last of a repeated flag win silently — a flag given twice.
Not validated: `ServerArgs.__post_init__` (GPU probing, model config, cross-flag checks).

A value that is a shell variable (`--node-rank $POD_INDEX`, `${TP:-8}`) is the shell's to expand when the
command runs: it is given to the parser as its `:-` default, or else as a value of the option's own kind
that the option's type and choices accept (`run_time_values`), so the check is about the command, not
about what a variable will hold.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys


class ParseError(Exception):
    pass


class RaisingParser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise ParseError(message)


def categorize(message: str) -> str:
    checks = [
        ("unrecognized arguments", "unknown-flag"),
        ("expected one argument", "missing-value"),
        ("expected at least one argument", "missing-value"),
        ("expected %s argument", "missing-value"),
        ("invalid choice", "bad-choice"),
        ("ambiguous option", "ambiguous"),
        ("ignored explicit argument", "switch-with-value"),
        ("the following arguments are required", "required"),
        ("not allowed with argument", "not-allowed-with"),
    ]
    for needle, cat in checks:
        if needle in message:
            return cat
    if " value: " in message and message.startswith("argument "):
        return "bad-value"
    if message.startswith("expected ") and "argument" in message:
        return "missing-value"
    return "action-error"


def repeated_flags(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """Option tokens naming an action that was already given (argparse keeps the last one silently).
    Actions that accumulate (append, extend, count) may repeat."""
    by_string = parser._option_string_actions
    seen: dict[int, str] = {}
    dups: list[str] = []
    for tok in argv:
        if tok == "--":
            break
        if not tok.startswith("-") or tok == "-":
            continue
        name = tok.split("=", 1)[0]
        action = by_string.get(name)
        if action is None:
            # An abbreviation argparse accepted: the unique option string it is a prefix of.
            hits = {id(a): a for s, a in by_string.items() if s.startswith(name) and name.startswith("--")}
            action = next(iter(hits.values())) if len(hits) == 1 else None
        if action is None or isinstance(action, (argparse._AppendAction, argparse._ExtendAction,
                                                  argparse._CountAction, argparse._AppendConstAction)):
            continue
        if id(action) in seen:
            dups.append(f"{seen[id(action)]} … {name}")
        else:
            seen[id(action)] = name
    return dups


_SHELL_VAR = re.compile(r"^\$(?:\w+|\{\w+(?::?-(?P<default>[^}]*))?\})$")


def run_time_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """argv with each option value that is a shell variable replaced by what the shell may give it."""
    by_string = parser._option_string_actions
    out: list[str] = []
    action = None
    for tok in argv:
        name, eq, value = tok.partition("=")
        if tok.startswith("-") and name in by_string:
            action = by_string[name] if by_string[name].nargs != 0 else None
            if eq and _SHELL_VAR.match(value):
                tok = f"{name}={_stand_in(by_string[name], value)}"
            out.append(tok)
            continue
        if action is not None and _SHELL_VAR.match(tok):
            tok = _stand_in(action, tok)
        out.append(tok)
        if action is not None and action.nargs in (None, 1, "?"):
            action = None
    return out


def _stand_in(action: argparse.Action, ref: str) -> str:
    m = _SHELL_VAR.match(ref)
    if m and m["default"]:
        return m["default"]
    if action.choices:
        return str(next(iter(action.choices)))
    convert = action.type
    if convert is None or convert is str:
        return ref
    for candidate in ("1", "0.5", "auto", "none"):
        try:
            convert(candidate)
            return candidate
        except Exception:
            continue
    return ref


def build_parser() -> argparse.ArgumentParser:
    parser = RaisingParser()
    ServerArgs.add_cli_args(parser)
    return parser


def check(parser: argparse.ArgumentParser, argv: list[str]) -> dict:
    # One parser for all argvs: parse_args leaves the parser as it was (add_cli_args costs ~50 ms).
    err = io.StringIO()
    try:
        # Some SGLang actions print a deprecation warning or call sys.exit themselves.
        with contextlib.redirect_stdout(err), contextlib.redirect_stderr(err):
            parser.parse_args(run_time_values(parser, argv))
    except ParseError as e:
        return {"ok": False, "error": str(e), "category": categorize(str(e))}
    except SystemExit as e:
        msg = err.getvalue().strip().splitlines()
        return {"ok": False, "error": f"exit {e.code}: {msg[-1] if msg else ''}", "category": "action-error"}
    except Exception as e:  # an SGLang action or type function raising
        return {"ok": False, "error": f"{type(e).__name__}: {e}", "category": categorize(str(e))}
    dups = repeated_flags(parser, argv)
    if dups:
        return {"ok": False, "error": "flag given twice: " + "; ".join(dups), "category": "duplicate"}
    return {"ok": True, "error": "", "category": ""}


def use_stubs(stubs_dir: str) -> None:
    """Put the stub modules on sys.path, after site-packages (a real package wins over its stub).
    transformers finds the torchvision stub too and imports its image stack from placeholders,
    which is what it needs to register SGLang's image processors at import time (0.5.14)."""
    sys.path.append(stubs_dir)


if __name__ == "__main__":
    argvs = json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # import-time prints must not corrupt the answer
        use_stubs(sys.argv[1])
        from sglang.srt.server_args import ServerArgs
    parser = build_parser()
    results = [check(parser, a) for a in argvs]
    sys.stdout.write("\n" + json.dumps(results) + "\n")
