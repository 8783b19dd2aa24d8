"""sglang-doctor: reads SGLang launch logs and names the flag that fixes them."""

__version__ = "0.1.0"
