"""The `sglang-doctor` command's entry point: this process's set-up, the command line, the exit.

Kept apart from cli.py so that what only the command wants is never done to a program that
imports the package: the compiled-pattern and generated-code caches of recache.py and
codecache.py (they change how this process's `re` and `dataclasses` compile), and ending the
process without the interpreter's teardown.
"""

from __future__ import annotations

from typing import NoReturn


def main() -> NoReturn:
    from sglang_doctor._speed import codecache, recache, standin

    standin.install()
    recache.install()
    codecache.install()
    import sys

    from sglang_doctor.cli.argv import plain_check, plain_explain

    args = sys.argv[1:]
    plain, explain = plain_check(args), None
    if plain is None:
        explain = plain_explain(args)
    try:
        if plain is not None or explain is not None:  # the common forms, without click (cli/argv.py)
            from sglang_doctor.cli.check import guarded, run_check, run_explain

            run = run_check if plain is not None else run_explain
            words, opts, given = plain if plain is not None else explain  # type: ignore[misc]
            guarded(lambda: run(words, opts, given))
        else:
            from sglang_doctor.cli.main import main as cli_main

            cli_main()  # click's standalone mode ends every command with SystemExit
    except SystemExit as e:
        exit_now(e.code)
    exit_now(0)


def exit_now(code: object) -> NoReturn:
    """End the process as `sys.exit(code)` would, minus freeing every module and object.

    That teardown is ~12 ms of a ~90 ms run and does nothing a finished command needs: the
    report is written, no thread is left but daemons, and what was registered to run at
    exit (the caches' saves) still runs, before the streams are flushed.
    """
    import atexit
    import os
    import sys

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None:  # an interpreter without it: the ordinary way out
        sys.exit(status)
    run_exit_functions()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away, a closed stream
            pass
    os._exit(status)
