"""sglang-doctor: reads SGLang launch logs and names the flag that fixes them."""

import os as _os

__version__ = "0.1.0"

# pydantic looks up third-party plugins through package metadata on first use (~25-45 ms);
# this tool uses none. Only this process (and its children) is affected.
_os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
