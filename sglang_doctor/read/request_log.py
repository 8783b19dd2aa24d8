"""Request logging (`--log-requests`): lines that are user data, never diagnostics.

SGLang echoes each request and its answer into the log. Their text is whatever users sent and the
model wrote - a prompt quoting a traceback, an answer about CUDA out of memory - so no rule may
read them. The shapes, every release (message after the log header):

* 0.4.0: `in=GenerateReqInput(…), out={…}` (tokenizer_manager.py, `logger.info(f"in={obj}, out={out}")`);
* 0.4.1-0.5.x text: `Receive: obj=GenerateReqInput(…)`, `Finish: obj=…, out={…}`
  (tokenizer_manager.py; utils/request_logger.py from 0.5.10 on, which adds `, headers={…}` and
  `Receive OpenAI: obj={…}`);
* `--log-requests-format json` (utils/log_utils.py `log_json`): `{"timestamp": "…", "event":
  "request.received" | "request.received.openai" | "request.finished", …}` (and its
  `scheduler.status` dumps, rids only).

Bodies are `repr()`-ed or JSON-encoded, so a multi-line answer stays on one line (`\\n`).
"""

from __future__ import annotations

import re

_ECHO = re.compile(r'(?:Receive(?: OpenAI)?|Finish): obj=|in=(?:Generate|Embedding)ReqInput\(|'
                   r'\{"timestamp": "[^"]{0,40}", "event": "')
_FIRST = frozenset('RFi{')  # the first character of every shape above: most lines stop there


def is_request_echo(message: str) -> bool:
    """`message` (a log line's text after its header) is a logged request or response."""
    return message[:1] in _FIRST and _ECHO.match(message) is not None
