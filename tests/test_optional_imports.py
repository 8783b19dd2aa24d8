"""The map of names SGLang imports from optional packages (data/optional-imports.json): the tool that
builds it from the release wheels, the shipped data, and its lookups."""

from __future__ import annotations

import json
import keyword
import sys
from pathlib import Path

import pytest

from helpers_tools import load_tool
from helpers_cli import command_runs
from sglang_doctor.engine import expr
from sglang_doctor.registry.optional_imports import _DATA, imported_from, optional_import

ROOT = Path(__file__).resolve().parent.parent




TOOL = load_tool("extract_imports")

GPTQ = b'''
import torch
from sglang.srt.utils import is_cuda
try:
    from vllm import _custom_ops as ops
    from vllm.model_executor.layers.quantization.utils.marlin_utils import check_marlin_supported
    from vllm.scalar_type import scalar_types
    import vllm._C
    VLLM_AVAILABLE = True
except ImportError:
    VLLM_AVAILABLE = False
    class scalar_types:
        uint4b8 = "uint4b8"
'''
FP8_KERNEL = b'''
from typing import TYPE_CHECKING
import torch
if TYPE_CHECKING:
    from vllm.config import VllmConfig
if _is_cuda:
    from sgl_kernel import sgl_per_tensor_quant_fp8
    try:
        from sgl_kernel import sgl_per_token_group_quant_8bit
    except ImportError:
        from sgl_kernel import sgl_per_token_group_quant_fp8
def f():
    from flashinfer import fused_add_rmsnorm
    try:
        from aiter import rmsnorm2d_fwd
    except ImportError:
        return None
'''
OTHER = b'''
from torch import nn
from flashinfer.norm import nn as fnn
from format import read_header
import torch
'''


def _read(**files: bytes):
    return TOOL.read_sources({f"sglang/srt/layers/{name}.py": data for name, data in files.items()}
                             | {"sglang/srt/layers/format.py": b""})


def test_names_a_failed_try_import_leaves_undefined_are_optional() -> None:
    found = _read(gptq=GPTQ)
    # `scalar_types` has a fallback class in the except branch: defined either way.
    assert found.optional["vllm"] == {"ops", "check_marlin_supported", "vllm"}
    assert found.imported["vllm"] == {"_custom_ops", "check_marlin_supported", "scalar_types"}


def test_conditional_and_function_imports_are_imported_but_not_optional() -> None:
    found = _read(fp8_kernel=FP8_KERNEL)
    assert found.imported["sgl_kernel"] == {"sgl_per_tensor_quant_fp8", "sgl_per_token_group_quant_8bit",
                                            "sgl_per_token_group_quant_fp8"}
    # a try at import time inside an `if` still leaves its names undefined; one inside a function does not
    assert found.optional["sgl_kernel"] == {"sgl_per_token_group_quant_8bit"}
    assert found.imported["flashinfer"] == {"fused_add_rmsnorm"} and found.imported["aiter"] == {"rmsnorm2d_fwd"}
    assert not found.optional.get("aiter") and "vllm" not in found.imported  # (TYPE_CHECKING never runs)


def test_unconditional_stdlib_own_and_sibling_imports_are_not_recorded() -> None:
    found = _read(other=OTHER)
    assert not any(found.imported.values()) and not any(found.optional.values())
    assert "format" not in found.sources  # a module next to the file: a script's own import


def test_a_name_the_release_imports_unconditionally_is_not_optional() -> None:
    # `torch` bound in a try in one file and at module level in another: a NameError for it is a
    # forgotten import, not a missing package.
    found = _read(a=b"try:\n    import torch\nexcept ImportError:\n    pass\n", b=b"import torch\n")
    assert not found.optional.get("torch")


def test_a_name_two_packages_export_is_left_out() -> None:
    found = _read(a=b"if x:\n    from flashinfer import rmsnorm\n", b=b"if y:\n    from sgl_kernel import rmsnorm, silu\n")
    data = TOOL.build(found, ["0.0.1"])
    assert data["imported"] == {"sgl_kernel": ["silu"]}


def test_unparsable_sources_are_skipped() -> None:
    assert _read(bad=b"def (:\n", gptq=GPTQ).optional["vllm"] == {"ops", "check_marlin_supported", "vllm"}


# --- the shipped data ------------------------------------------------------------------------------


DATA = json.loads(_DATA.read_text(encoding="utf-8"))


def test_shipped_map_is_small_and_well_formed() -> None:
    assert _DATA.stat().st_size < 64 * 1024
    assert DATA["format"] == TOOL.FORMAT_VERSION and len(DATA["releases"]) >= 8
    assert DATA["releases"] == sorted(DATA["releases"], key=TOOL.version_key)
    stdlib = set(sys.stdlib_module_names)
    for table in ("optional", "imported"):
        owners: dict[str, str] = {}
        for pkg, names in DATA[table].items():
            assert pkg.isidentifier() and pkg not in stdlib and pkg != "sglang", pkg
            assert names == sorted(set(names)) and names, pkg
            for n in names:
                assert n.isidentifier() and not keyword.iskeyword(n), n
                assert owners.setdefault(n, pkg) == pkg, f"{n} under {owners[n]} and {pkg}"
    assert sum(map(len, DATA["imported"].values())) > 500


@pytest.mark.parametrize("name, table, pkg", [
    ("check_marlin_supported", "optional", "vllm"),  # gptq.py, 0.4.x (sglang#5203)
    ("sgl_per_token_group_quant_fp8", "imported", "sgl_kernel"),  # fp8_kernel.py, 0.5.x (sglang#11763)
    ("sgl_per_token_group_quant_8bit", "optional", "sgl_kernel"),
])
def test_shipped_map_knows_the_real_cases(name: str, table: str, pkg: str) -> None:
    assert name in DATA[table][pkg]


def test_lookups_and_expressions() -> None:
    assert optional_import("check_marlin_supported") == "vllm"
    assert imported_from("sgl_per_token_group_quant_fp8") == "sgl_kernel"
    for bad in ("not_a_name_sglang_imports", "torch", "", "a.b", 3):
        with pytest.raises(ValueError):
            optional_import(bad)
    tree = expr.compile_expr("pypi(optional_import(name), None)")
    assert expr.evaluate(tree, {"name": "check_marlin_supported"}) == "vllm"
    assert expr.evaluate(expr.compile_expr("pypi(imported_from(name))"), {"name": "sgl_per_token_group_quant_fp8"}) \
        == "sgl-kernel"
    with pytest.raises(expr.MissingValue):  # unknown: the `let` is None, a rule's condition fails
        expr.evaluate(tree, {"name": "ModelRunner"})


def test_a_run_that_does_not_need_the_map_does_not_read_it(tmp_path) -> None:
    runs = command_runs(tmp_path, "'sglang_doctor.registry.optional_imports' in sys.modules")
    assert all(r.stderr.strip().splitlines()[-1] == "False" for r in runs), [r.stderr for r in runs]
