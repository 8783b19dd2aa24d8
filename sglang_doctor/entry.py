"""The `sglang-doctor` command's entry point: this process's set-up, then the command line.

Kept apart from cli.py so that what only the command wants (the compiled-pattern cache of
recache.py, which changes how this process's `re` compiles) is never done to a program
that imports the package.
"""

from __future__ import annotations


def main() -> None:
    from .recache import install

    install()
    from .cli import main as cli_main

    cli_main()
