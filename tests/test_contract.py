"""The JSON report contract (data/report-v1.schema.json) holds for what the tool prints.

The report is plain dataclasses at run time; this schema is what pins the contract. Every
field of the dataclasses must be in the schema (or be internal), and real output of every
kind of run must validate.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from helpers_cli import run
from sglang_doctor import model
from sglang_doctor.model import Report, from_json, to_json

REAL = Path(__file__).resolve().parent / "data" / "real"
SCHEMA = json.loads((resources.files("sglang_doctor") / "data" / "report-v1.schema.json").read_text())


@pytest.fixture(scope="module")
def validator():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


def _valid(validator, data):
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors, errors[:5]


def test_every_model_field_is_in_the_schema():
    props = {
        model.Report: SCHEMA["properties"], model.ToolInfo: SCHEMA["properties"]["tool"]["properties"],
        model.InputInfo: SCHEMA["$defs"]["input"]["properties"], model.Finding: SCHEMA["$defs"]["finding"]["properties"],
        model.Evidence: SCHEMA["$defs"]["evidence"]["properties"], model.FixOut: SCHEMA["$defs"]["fix"]["properties"],
    }
    for cls, known in props.items():
        names = {model._JSON_NAME.get(f.name, f.name) for f in dataclasses.fields(cls)
                 if (cls, f.name) not in model._INTERNAL}
        assert names == set(known), (cls.__name__, names ^ set(known))


def test_demo_logs_validate_and_round_trip(validator, demo_dir):
    for log in sorted(demo_dir.glob("*.log")):
        data = json.loads(run(["--format", "json", "--no-baseline", log]).stdout)
        _valid(validator, data)
        assert to_json(from_json(Report, data)) == data


def test_real_logs_validate(validator):
    logs = sorted(REAL.glob("*.log"))
    data = json.loads(run(["--format", "json", "--no-baseline", *logs]).stdout)  # one multi-input run
    _valid(validator, data)
    assert len(data["inputs"]) == len(logs)
    for log in logs[::10]:  # and one at a time (context, startup, corrected command of a single input)
        _valid(validator, json.loads(run(["--format", "json", "--no-baseline", log]).stdout))


def test_unreadable_input_and_stdin_validate(validator, tmp_path, demo_dir):
    text = (demo_dir / "qwen3.6-27b-awq-dtype-crash.log").read_text()
    r = run(["--format", "json", "--no-baseline", tmp_path / "missing.log", "-"], input=text)
    data = json.loads(r.stdout)
    _valid(validator, data)
    assert "error" in data["inputs"][0] and data["inputs"][1]["name"] == "<stdin>"


def test_internal_fields_stay_out_of_the_json():
    fix = model.FixOut(kind="flag", flag="--x", action="set", from_="1", versions=">=0.5")
    assert to_json(fix) == {"kind": "flag", "flag": "--x", "action": "set", "from": "1"}
    assert from_json(model.FixOut, {"kind": "flag", "from": "1", "added_later": True}).from_ == "1"


def test_a_finding_on_the_given_command_validates(validator, demo_dir):
    """Evidence from --cmd is no line of the input: line 0, which the schema allows and describes."""
    cmd = "python3 -m sglang.launch_server --model-path x --enable-foo-bar"
    data = json.loads(run(["--format", "json", "--no-baseline", "--cmd", cmd,
                           demo_dir / "qwen3.6-27b-awq-dtype-crash.log"]).stdout)
    _valid(validator, data)
    assert any(e["line"] == 0 and e["text"] == "--enable-foo-bar" for f in data["findings"] for e in f["evidence"])
