"""SGLang's real argument parser for the tests (issue 16, item 1); see harness.py.

harness.py   builds one cached venv per covered release (envs.yaml) and parses argv lists there
runner.py    runs inside such a venv: ServerArgs.add_cli_args + parse_args, batch JSON in/out
collect.py   runs the product (its console script, via forkserver.py) and extracts launch args
known.py     known_failures.yaml: today's rejections, xfail(strict=True) in test_real_parser.py
measure.py   counts per release and category; `--write-known` rewrites known_failures.yaml
stubs/       modules the parser path imports but never uses (why: envs.yaml, "stubs")
"""
