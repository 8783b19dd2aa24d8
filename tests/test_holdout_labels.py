"""The hold-out's labels are well-formed (tools/score_holdout.py --validate-only); the tool is not run here."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_holdout_labels_validate():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "score_holdout.py"), "--validate-only"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


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
