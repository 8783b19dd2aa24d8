"""`--format json`: the report contract, one JSON object."""

from __future__ import annotations

import json
from typing import Any, TextIO

from sglang_doctor.model import Report


def write(report: Report, out: TextIO, **_: Any) -> None:
    data = report.to_json_dict()
    data.get("startup", {}).pop("throughput_samples", None) if data.get("startup") else None
    json.dump(data, out, indent=2, ensure_ascii=False)
    out.write("\n")
