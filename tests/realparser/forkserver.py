"""Run the `sglang-doctor` console script many times, cheaply: import it once, fork per run.

~1,000 runs of the CLI cost ~0.35 s of CPU each as separate processes, 60 % of it importing the
package. Here a worker imports the package once, then for each job forks a child that runs the
console script's entry point exactly as the installed script does (sys.argv set, stdout and stderr
to files, the entry point ends the process itself) and reports its exit status and output.
The entry point is looked up by its console-script name, so moving modules inside the package
does not matter.

stdin: JSON lines {"argv": [...], "cwd": "..."}; stdout: JSON lines {"rc", "stdout", "stderr"}.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import pkgutil
import sys
import tempfile
from typing import Callable


def entry_point(name: str = "sglang-doctor") -> Callable[[], object]:
    (ep,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == name]
    return ep.load()


def preload(package: str = "sglang_doctor") -> None:
    """Import every module of the package in the parent, so the forked children start warm.
    A module that fails to import on its own is left to the child (it imports what it needs)."""
    pkg = importlib.import_module(package)
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        try:
            importlib.import_module(info.name)
        except Exception:
            pass


def run_one(main: Callable[[], object], argv: list[str], cwd: str) -> dict:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child: become `sglang-doctor ARGV` in `cwd`
            try:
                os.chdir(cwd)
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.argv = ["sglang-doctor", *argv]
                main()
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                import traceback

                traceback.print_exc()
                code = 70
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return {"rc": os.waitstatus_to_exitcode(status),
                "stdout": out.read().decode("utf-8", "replace"),
                "stderr": err.read().decode("utf-8", "replace")}


if __name__ == "__main__":
    main_fn = entry_point()
    preload()
    for line in sys.stdin:
        job = json.loads(line)
        res = run_one(main_fn, job["argv"], job["cwd"])
        sys.stdout.write(json.dumps(res) + "\n")
        sys.stdout.flush()
