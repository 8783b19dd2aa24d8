"""SGLang's own decode statistics of a log: run with a Python that has polars.

    python tools/log_parser_stats.py path/to/log_parser.py server.log

`log_parser.py` is `sglang/srt/debug_utils/log_parser.py` from an sglang wheel; its `parse(text)`
reads the `Decode batch` lines into a polars DataFrame. Prints one JSON object: lines, median, p10
and p90 of the throughput (polars' linear quantiles), the peak token usage and queue. The tests
(tests/test_log_parser_parity.py) and bench/run.py compare sglang-doctor's startup summary with it.
"""

import importlib.util
import json
import sys

spec = importlib.util.spec_from_file_location("log_parser", sys.argv[1])
assert spec is not None and spec.loader is not None
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with open(sys.argv[2], encoding="utf-8") as fh:
    df = module.parse(fh.read())
tp = df["gen_throughput"]
print(json.dumps({"lines": df.height, "median": tp.median(),
                  "p10": tp.quantile(0.1, interpolation="linear"), "p90": tp.quantile(0.9, interpolation="linear"),
                  "usage_peak": df["token_usage"].max(), "queue_peak": df["queue_req"].max()}))
