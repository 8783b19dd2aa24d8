"""Fix names read off the log: `name: "{capture}"` for package/env fixes, and `pypi(module)`.

The generic dependency rules name the distribution to install from the module in the
traceback (data/pypi-names.yaml), instead of a `when` list per package.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.facts.context import Context
from sglang_doctor.pipeline.run import diagnose
from sglang_doctor.engine.analyze import _render_fix
from sglang_doctor.engine.expr import compile_expr, evaluate
from sglang_doctor.registry.pypi_names import names as pypi_map
from sglang_doctor.engine.rules import Fix, load_rule_file

from helpers_cli import run
from rule_helpers import write_rule

REAL = Path(__file__).parent / "data" / "real"


def pypi(*args):
    return evaluate(compile_expr("pypi(" + ", ".join(f"a{i}" for i in range(len(args))) + ")"),
                    {f"a{i}": a for i, a in enumerate(args)})


# --- pypi() ---------------------------------------------------------------------------------


@pytest.mark.parametrize("module, dist", [
    ("flashinfer", "flashinfer-python"),
    ("flashinfer.sampling", "flashinfer-python"),  # a sub-module: its top-level package
    ("sgl_kernel", "sgl-kernel"),
    ("google.protobuf.message", "protobuf"),  # the longest known prefix (google itself is unknown)
    ("PIL.Image", "pillow"),
    ("cv2", "opencv-python"),
    ("yaml", "pyyaml"),
    ("flashinfer_python", "flashinfer-python"),  # a pip spelling of a known distribution
    ("Flash-Attn", "flash-attn"),
    ("somepkg.sub.mod", "somepkg"),  # unknown: the top-level name itself
    ("google", "google"),
])
def test_pypi_maps_dotted_names_by_longest_prefix(module, dist):
    assert pypi(module) == dist


def test_pypi_default_for_unknown_modules():
    def ev(src: str, m: str):
        return evaluate(compile_expr(src), {"m": m})

    assert ev("pypi(m, None)", "somepkg.sub") is None
    assert ev("pypi(m, '')", "somepkg.sub") == ""
    assert ev("pypi(m, None)", "torch.cuda") == "torch"


def test_pypi_map_is_import_name_to_distribution():
    m = pypi_map()
    assert m["sgl_kernel"] == "sgl-kernel" and m["huggingface_hub"] == "huggingface-hub"
    assert all("-" not in k and " " not in v for k, v in m.items())


def test_pypi_map_reads_as_yaml_reads_it_without_importing_yaml():
    import subprocess
    import sys

    import yaml

    from sglang_doctor.registry.pypi_names import _DATA, parse

    assert pypi_map() == yaml.safe_load(_DATA.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match=":3: "):
        parse("# c\na: b  # note\nnot an entry\n")
    code = "import sys; from sglang_doctor.registry.pypi_names import distribution; distribution('torch'); print('yaml' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_pypi_stays_a_safe_call():
    from sglang_doctor.engine.expr import ExpressionError

    with pytest.raises(ExpressionError):
        compile_expr("pypi(module, default=None)")  # no keywords
    assert evaluate(compile_expr("coalesce(pypi(m), 'x')"), {"m": 3}) == "x"  # a non-string is unknown


# --- templated names in fixes ------------------------------------------------------------------


def render(fix: Fix, **names):
    return _render_fix(fix, dict(names), Context())


def test_templated_package_name_renders_from_a_capture():
    out = render(Fix(kind="package", name="{dist}", action="raise", value="{spec}"), dist="flash-attn", spec=">=2.6")
    assert out is not None and (out.name, out.action, out.value) == ("flash-attn", "raise", ">=2.6")
    env = render(Fix(kind="env", name="{var}", action="remove"), var="SGLANG_FOO")
    assert env is not None and env.name == "SGLANG_FOO"


def test_fix_with_an_unknown_name_is_dropped():
    fix = Fix(kind="package", name="{dist}", action="set")
    assert render(fix) is None
    assert render(fix, dist=None) is None  # a let that evaluated to nothing (pypi(m, None))


@pytest.mark.parametrize("kind, bad", [
    ("package", "torch; rm -rf /"), ("package", "-e ."), ("package", ""), ("env", "A=B"), ("env", "1X"),
])
def test_rendered_name_must_look_like_a_name(kind, bad):
    # The name comes from the log and ends up in `pip install` / the env of the corrected command.
    assert render(Fix(kind=kind, name="{n}", action="set"), n=bad) is None


TEMPLATED = """id: my-rule
code: SGD1999
title: A user rule naming a package from the log
severity: error
family: test
match:
  any:
    - regex: "No module named '(?P<module>[\\\\w.]+)'"
let:
  dist: "pypi(module, None)"
explanation: "{module} is missing"
fixes:
  - kind: package
    name: "{dist}"
    action: set
docs: {what: a, why: b, fix: c}
"""


def _user_rule_fixes(tmp_path: Path, text: str) -> list:
    rule = load_rule_file(Path(write_rule(tmp_path, TEMPLATED)) / "test" / "my-rule.yaml")
    run_ = diagnose(["log"], [rule], texts={"log": text})
    return [(f.kind, f.name, f.action) for fd in run_.report.findings for f in fd.fixes]


def test_user_rule_names_the_distribution(tmp_path):
    assert _user_rule_fixes(tmp_path, "ModuleNotFoundError: No module named 'PIL.Image'\n") == [("package", "pillow", "set")]
    assert _user_rule_fixes(tmp_path, "ModuleNotFoundError: No module named 'mylocal.x'\n") == []


def test_lint_checks_names_in_a_templated_name(tmp_path):
    d = write_rule(tmp_path, TEMPLATED.replace('name: "{dist}"', 'name: "{distt}"'))
    r = run(["rules", "lint", "--rules", d, "--only-user"])
    assert r.exit_code == 1 and "'distt' is used but" in r.stdout


def test_rule_docs_show_a_templated_name_as_from_the_log(rules):
    from sglang_doctor.ruledev.docs import rule_markdown

    page = rule_markdown(next(r for r in rules if r.id == "dependency-raised-error"))
    assert "install <package from the log> (pip)" in page and "install {dist} (pip)" not in page


# --- the generic dependency rules on real logs, their specific rule left out --------------------


@pytest.mark.parametrize("log, left_out, rule, package, action", [
    ("038-sgl-kernel-awq-dequantize-import.log", "sgl-kernel-version-mismatch", "dependency-api-mismatch",
     "sgl-kernel", "raise"),
    ("200-flashinfer-sampling-import-old.log", "flashinfer-import-error", "dependency-api-mismatch",
     "flashinfer-python", "raise"),
    ("037-bitsandbytes-not-installed.log", "bitsandbytes-not-installed", "error-says-pip-install",
     "bitsandbytes", "raise"),
    ("040-awq-requires-vllm.log", "vllm-import-error", "error-says-pip-install", "vllm", "set"),
    ("303-gemma4-assistant-transformers-keyerror.log", "transformers-unknown-model-type",
     "dependency-raised-error", "transformers", "raise"),
])
def test_generic_rule_names_the_package_on_a_real_log(rules, log, left_out, rule, package, action):
    rest = [r for r in rules if r.id != left_out]
    findings = diagnose([str(REAL / log)], rest).report.findings
    found = next(f for f in findings if f.rule == rule)
    assert (package, action) in [(f.name, f.action) for f in found.fixes if f.kind == "package"]
