"""Compressed inputs, recognised by their first bytes (a file's name may lie, stdin has none).

gzip, bzip2 and xz come with Python; zstd needs the optional `zstandard` package (a wheel for
every platform, imported only when a zstd input arrives). An archive cut short (a copy that
stopped mid-transfer, a rotated log still being written) is read up to the break: the text
before it is as good as any, and the cut is reported as a warning rather than refusing the file.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO

# (magic bytes, format name)
MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
HEAD_BYTES = max(len(m) for m, _ in MAGIC)


class DecompressError(Exception):
    """A compressed input that cannot be opened at all (its decoder is missing)."""


def sniff(head: bytes) -> str | None:
    """The compression format whose magic bytes start `head`, or None for plain bytes."""
    for magic, name in MAGIC:
        if head.startswith(magic):
            if name == "bzip2" and not (len(head) > 3 and head[3:4] in b"123456789"):
                continue  # "BZh" + the block size digit; a text file may start with "BZh"
            return name
    return None


class Decompressed(io.RawIOBase):
    """A decompressing reader that ends (with `warning` set) where a truncated archive breaks."""

    def __init__(self, inner: Any, fmt: str, raw: BinaryIO) -> None:
        self._inner = inner
        self._raw = raw
        self.format = fmt
        self.warning: str | None = None
        self.bytes_out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if self.warning is not None:
            return 0
        try:
            data = self._inner.read1(len(buf))  # (read() would drop what it had read when the break comes)
        except (EOFError, OSError, ValueError) as e:  # EOFError: cut short; OSError/zlib/lzma: corrupt
            self.warning = (f"the {self.format} archive is truncated or damaged after {self.bytes_out:,} "
                            f"bytes of text ({_reason(e)}): read up to the break")
            return 0
        n = len(data)
        buf[:n] = data
        self.bytes_out += n
        return n

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()
            super().close()


def _reason(e: Exception) -> str:
    text = str(e) or type(e).__name__
    return text if len(text) < 120 else text[:117] + "..."


def _decoder(fmt: str, raw: BinaryIO) -> Any:
    if fmt == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=raw)
    if fmt == "bzip2":
        import bz2

        return bz2.BZ2File(raw)
    if fmt == "xz":
        import lzma

        return lzma.LZMAFile(raw)
    return _ZstdReader(raw)


class _ZstdReader:
    """zstd frames one after another; raises EOFError when the input ends inside a frame
    (zstandard's own stream reader just stops there, which would hide a cut archive)."""

    def __init__(self, raw: BinaryIO) -> None:
        try:
            import zstandard  # optional: see the module docstring
        except ImportError:
            raise DecompressError("zstd input needs `pip install zstandard`") from None
        self._new = zstandard.ZstdDecompressor().decompressobj
        self._obj = self._new()
        self._raw = raw
        self._pending = b""
        self._in_frame = False

    def read(self, n: int) -> bytes:
        while len(self._pending) < n:
            chunk = self._raw.read(1 << 16)
            if not chunk:
                if self._in_frame:
                    raise EOFError("the input ended inside a zstd frame")
                break
            while chunk:
                self._in_frame = True
                self._pending += self._obj.decompress(chunk)
                if not self._obj.eof:
                    break
                self._in_frame = False
                chunk = self._obj.unused_data  # the next frame's bytes, if any
                self._obj = self._new()
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    read1 = read

    def close(self) -> None:
        pass


class _Unread(io.RawIOBase):
    """The bytes read to sniff a stream that cannot peek, put back in front of the rest of it."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(buf))
        buf[:len(data)] = data
        return len(data)


def decompressing(raw: BinaryIO) -> BinaryIO:
    """`raw` itself for plain bytes, or a buffered decompressing reader over it (a stream that
    cannot peek has its first bytes put back in front of it)."""
    if hasattr(raw, "peek"):
        head = raw.peek(HEAD_BYTES)[:HEAD_BYTES]
        if not head:
            # End of input already (a terminal's Ctrl-D is not sticky: reading on would wait for more).
            return io.BytesIO(b"")
    else:
        head = raw.read(HEAD_BYTES)
        raw = io.BufferedReader(_Unread(head, raw))  # type: ignore[arg-type]
    fmt = sniff(head)
    if fmt is None:
        return raw
    return io.BufferedReader(Decompressed(_decoder(fmt, raw), fmt, raw), buffer_size=1 << 16)


def stream_warning(stream: Any) -> str | None:
    """The warning a decompressing stream left (a truncated archive), or None."""
    inner = getattr(stream, "raw", None)
    return getattr(inner, "warning", None) if isinstance(inner, Decompressed) else None
