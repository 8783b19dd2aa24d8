"""The hold-out rounds' labels are well-formed (tools/score_holdout.py --validate-only); the tool is not run here."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCORER = str(ROOT / "tools" / "score_holdout.py")


@pytest.mark.parametrize("args, n", [([], 37), (["--round", "1"], 37), (["--round", "2"], 8), (["--round", "3"], 0), (["--round", "4"], 0), (["--round", "5"], 1), (["--round", "6"], 0), (["--round", "7"], 2), (["--round", "8"], 3), (["--round", "9"], 5), (["--round", "10"], 3), (["--round", "11"], 3), (["--round", "12"], 3)])
def test_holdout_labels_validate(args, n):
    p = subprocess.run([sys.executable, SCORER, "--validate-only", *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"{n} labels valid"


def test_holdout_unknown_round_is_a_clear_error():
    p = subprocess.run([sys.executable, SCORER, "--validate-only", "--round", "99"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "no cases.yaml" in p.stderr and "Traceback" not in p.stderr


def test_holdout_rejects_non_string_label(tmp_path):
    import shutil

    import yaml

    src = ROOT / "tests" / "data" / "holdout"
    for f in src.glob("*.log"):
        shutil.copy(f, tmp_path / f.name)
    cases = yaml.safe_load((src / "cases.yaml").read_text())
    cases[0]["expected_fix"] = [{"package transformers": "raise"}]
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump(cases))
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "score_holdout.py"), "--validate-only",
                        "--dir", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2
    assert "is a dict, not a string" in p.stderr
