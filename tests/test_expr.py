from __future__ import annotations

import pytest

from sglang_doctor.engine.expr import ExpressionError, MissingValue, compile_expr, evaluate, render


def ev(src, **names):
    return evaluate(compile_expr(src), {k.replace("__", "."): v for k, v in names.items()})


def test_arithmetic_and_functions():
    assert ev("round_up(0.80 + 1.92 / 23.21, 0.01)") == 0.89
    assert ev("min(a, 0.93)", a=0.97) == 0.93
    assert ev("clamp(x, 0, 1)", x=3) == 1
    assert ev("pow2_floor(48)") == 32


def test_dotted_facts_and_coalesce():
    assert ev("server_args.mem_fraction_static + 0.1", server_args__mem_fraction_static=0.8) == pytest.approx(0.9)
    assert ev("coalesce(gpu.free_gb_before_load, 24)") == 24
    with pytest.raises(MissingValue):
        ev("unknown + 1")


@pytest.mark.parametrize("src", [
    "__import__('os')", "().__class__", "open('x')", "[x for x in y]", "a[0]", "lambda: 1",
    "x.__class__.__mro__", "exec('1')", "(1).real",
])
def test_unsafe_expressions_are_refused(src):
    with pytest.raises(ExpressionError):
        compile_expr(src)


def test_templates():
    assert render("{a} → {b:.2f}", {"a": 0.8, "b": 0.8912}) == "0.8 → 0.89"
    with pytest.raises(MissingValue):
        render("{missing}", {})


def test_launch_flag_maps_server_args_fields():
    assert ev("launch_flag(w)", w="attention_backend") == "--attention-backend"
    assert ev("launch_flag(w)", w="self.server_args.mem_fraction_static") == "--mem-fraction-static"
    assert ev("launch_flag(w)", w="tensor_parallel_size") == "--tp-size"  # an alias gives the long name
    # a snake_case word no release has as a flag is unknown, so coalesce() moves on to the next one
    with pytest.raises(MissingValue):
        ev("launch_flag(w)", w="think_end_token")
    assert ev("coalesce(launch_flag(a), launch_flag(b))", a="no_buffer", b="page_size") == "--page-size"


@pytest.mark.parametrize("choices", ["'llama3', 'qwen25', 'mistral', 'gpt-oss'",  # Python <= 3.11 quotes them
                                     "llama3, qwen25, mistral, gpt-oss"])  # 3.12+ does not
def test_closest_choice_names_the_listed_value_a_misspelling_meant(choices):
    tree = compile_expr("closest_choice(value, choices)")
    assert evaluate(tree, {"value": "gpt-os", "choices": choices}) == "gpt-oss"
    for other in ("qwen3", "deepseekv31", "gpt-oss"):  # another release's value (or the value itself): no guess
        with pytest.raises(MissingValue):
            evaluate(tree, {"value": other, "choices": choices})
