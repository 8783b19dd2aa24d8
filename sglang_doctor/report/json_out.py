"""`--format json`: the report contract, one JSON object (on one line with `compact`: --follow's last line)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from sglang_doctor.model import Report


def write(report: Report, out: TextIO, compact: bool = False, **_: Any) -> None:
    data = report.to_json_dict()
    for startup in [data.get("startup"), *(la.get("startup") for la in data.get("launches", []))]:
        if startup:
            startup.pop("throughput_histogram", None)  # the text report's sparkline, not a contract field
    json.dump(data, out, indent=None if compact else 2, ensure_ascii=False)
    out.write("\n")
